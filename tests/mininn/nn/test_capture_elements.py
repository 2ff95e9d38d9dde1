"""Interventions on one tensor of a nested output (``element`` as a path), against the same
edit made by a torch forward hook: LSTM, GRU, MultiheadAttention and a dict-returning module."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mininn
from mininn import nn

torch = pytest.importorskip("torch")

TOL = dict(rtol=2e-5, atol=2e-5)
X = np.random.default_rng(3).standard_normal((2, 5, 4)).astype(np.float32)


def _encoder_class(lib: Any) -> type:
    class Encoder(lib.Module):
        """A VAE encoder: a dict of two heads, one nested."""

        def __init__(self) -> None:
            super().__init__()
            self.mu = lib.Linear(4, 3)
            self.logvar = lib.Linear(4, 3)

        def forward(self, x: Any) -> Any:
            return {"mu": self.mu(x), "stats": {"logvar": self.logvar(x), "x": x}}

    return Encoder


MODULES = {
    "lstm": lambda lib: lib.LSTM(4, 3, batch_first=True),
    "gru": lambda lib: lib.GRU(4, 3, num_layers=2, batch_first=True),
    "attention": lambda lib: lib.MultiheadAttention(4, 2, batch_first=True),
    "encoder": lambda lib: _encoder_class(lib)(),
}


def _twins(kind: str) -> tuple[Any, Any]:
    torch.manual_seed(0)
    t_holder, m_holder = torch.nn.Module(), nn.Module()
    t_holder.net, m_holder.net = MODULES[kind](torch.nn).eval(), MODULES[kind](nn).eval()
    state = {k: mininn.tensor(v.detach().numpy().copy()) for k, v in t_holder.state_dict().items()}
    m_holder.load_state_dict(state)
    return t_holder, m_holder


def _call(kind: str, net: Any, x: Any) -> Any:
    return net(x, x, x) if kind == "attention" else net(x)


def _leaves(value: Any, path: str = "") -> dict[str, np.ndarray]:
    if isinstance(value, (tuple, list)):
        return {k: v for i, item in enumerate(value) for k, v in _leaves(item, f"{path}.{i}").items()}
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _leaves(item, f"{path}.{key}").items()}
    return {path[1:]: np.array(value.detach().numpy() if hasattr(value, "detach") else value.numpy())}


def _torch_replace(value: Any, path: list[Any], edit: Any) -> Any:
    if not path:
        value = value.clone()
        edit(value)
        return value
    key, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, key: _torch_replace(value[key], rest, edit)}
    items = list(value)
    items[key] = _torch_replace(items[key], rest, edit)
    return tuple(items)


def _set_last_feature(o: Any) -> None:
    o[..., 0] = 7.0


# (module, element as sent, the path torch's hook edits)
CASES = [
    ("lstm", "1.0", [1, 0]),  # h_n
    ("lstm", [1, 1], [1, 1]),  # c_n
    ("lstm", "0", [0]),
    ("lstm", None, [0]),
    ("gru", 1, [1]),
    ("gru", "1", [1]),
    ("attention", 1, [1]),  # the attention weights
    ("attention", [0], [0]),
    ("encoder", "mu", ["mu"]),
    ("encoder", "stats.logvar", ["stats", "logvar"]),
    ("encoder", ["stats", "logvar"], ["stats", "logvar"]),
]


@pytest.mark.parametrize(("kind", "element", "path"), CASES, ids=[f"{c[0]}-{c[1]!r}" for c in CASES])
def test_element_edits_the_tensor_its_capture_name_names_as_a_torch_hook_does(kind, element, path):
    t_holder, m_holder = _twins(kind)
    handle = t_holder.net.register_forward_hook(
        lambda mod, args, out: _torch_replace(out, path, _set_last_feature)
    )
    with torch.no_grad():
        want = _leaves(_call(kind, t_holder.net, torch.from_numpy(X)))
    handle.remove()
    edit = nn.Intervention("net", "set", 7.0, index=np.s_[..., 0], element=element)
    with nn.ActivationCapture(m_holder, "net", interventions=[edit]) as cap, mininn.no_grad():
        got = _leaves(_call(kind, m_holder.net, mininn.tensor(X)))
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], **TOL, err_msg=name)
    captured = {name.removeprefix("net:output").lstrip("."): t.numpy() for name, t in cap.activations.items()}
    assert captured.keys() == got.keys()  # the capture names are the element paths
    edited = ".".join(map(str, path))
    assert (captured[edited][..., 0] == 7.0).all()


_LSTM_PATHS = "in the tuple output of 'net'; its tensors are at '0', '1.0', '1.1'"
REFUSED = [
    ("lstm", 1, f"1 names no tensor {_LSTM_PATHS}"),  # (h_n, c_n) is no tensor
    ("lstm", "1.2", f"'1.2' names no tensor {_LSTM_PATHS}"),
    ("lstm", "0.0", f"'0.0' names no tensor {_LSTM_PATHS}"),
    ("gru", 2, "2 names no tensor in the tuple output of 'net'; its tensors are at '0', '1'"),
    ("encoder", None, "is required in the dict output of 'net'; its tensors are at 'mu', 'stats.logvar', "
     "'stats.x'"),
    ("encoder", "stats.mu", "'stats.mu' names no tensor in the dict output of 'net'; its tensors are at "
     "'mu', 'stats.logvar', 'stats.x'"),
]


@pytest.mark.parametrize(("kind", "element", "detail"), REFUSED, ids=[f"{r[0]}-{r[1]!r}" for r in REFUSED])
def test_an_element_that_names_no_tensor_lists_the_paths_and_leaves_no_hook(kind, element, detail):
    _, m_holder = _twins(kind)
    edit = nn.Intervention("net", "zero", element=element)
    with pytest.raises(nn.CaptureError) as info, nn.ActivationCapture(m_holder, "net", interventions=[edit]):
        _call(kind, m_holder.net, mininn.tensor(X))
    assert str(info.value) == f"interventions[0].element {detail}"
    assert info.value.field == "interventions[0].element"
    assert all(not (m._forward_hooks or m._forward_pre_hooks) for m in m_holder.modules())


def test_an_element_on_a_tensor_output_says_to_leave_it_out():
    model = nn.Sequential(nn.Linear(4, 2))
    with pytest.raises(nn.CaptureError) as info, nn.ActivationCapture(
        model, interventions=[nn.Intervention("0", "zero", element=0)]
    ):
        model(mininn.zeros(1, 4))
    assert str(info.value) == (
        "interventions[0].element is for tuple, list or dict outputs; '0' returns a tensor, "
        "so leave element out (got 0)"
    )


@pytest.mark.parametrize("element", [1.5, "", "1..0", [], [1, None], True])
def test_an_element_that_is_no_path_is_refused_when_made(element):
    with pytest.raises(nn.CaptureError) as info:
        nn.Intervention("net", "zero", element=element)
    assert str(info.value) == (
        "element must be a position, a key, or a path to a tensor inside the output as capture names "
        f"write it ('1.0' or [1, 0]), got {element!r}"
    )
