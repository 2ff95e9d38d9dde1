"""``torch.utils.checkpoint``: outputs, gradients, warnings and errors vs torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
from mininn.utils import checkpoint as ours

torch = pytest.importorskip("torch")
from torch.utils import checkpoint as theirs  # noqa: E402

_X = np.random.default_rng(0).standard_normal((2, 3))


def _models():
    torch.manual_seed(0)
    def layers(nn):
        return [nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)]

    t = torch.nn.Sequential(*layers(torch.nn)).double()
    m = mininn.nn.Sequential(*layers(mininn.nn)).double()
    m.load_state_dict({k: mininn.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return m, t


def _run(lib, module, run):
    x = lib.tensor(_X, requires_grad=True)
    y = run(module, x)
    (y * y).sum().backward()
    return y.detach().numpy(), x.grad.numpy(), module[0].weight.grad.numpy()


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpointed_segments_give_torchs_outputs_and_gradients(reentrant: bool) -> None:
    m, t = _models()
    for call in (
        lambda api, mod, x: api.checkpoint(mod, x, use_reentrant=reentrant),
        lambda api, mod, x: api.checkpoint_sequential(mod, 2, x, use_reentrant=reentrant),
        lambda api, mod, x: api.checkpoint_sequential(list(mod), 3, x, use_reentrant=reentrant),
    ):
        m.zero_grad()
        t.zero_grad()
        a = _run(mininn, m, lambda mod, x, call=call: call(ours, mod, x))
        b = _run(torch, t, lambda mod, x, call=call: call(theirs, mod, x))
        for left, right in zip(a, b):
            np.testing.assert_allclose(left, right, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad")
def test_an_implicit_use_reentrant_warns_with_torchs_text() -> None:
    m, t = _models()
    for api, mod, lib in ((ours, m, mininn), (theirs, t, torch)):
        x = lib.tensor(_X)
        with pytest.warns(UserWarning, match="^torch.utils.checkpoint: the use_reentrant parameter"):
            api.checkpoint(mod, x)
        with lib.no_grad(), pytest.warns(UserWarning, match="^None of the inputs have requires_grad=True"):
            api.checkpoint(mod, x, use_reentrant=True)
        with pytest.warns(UserWarning, match="^torch.utils.checkpoint.checkpoint_sequential: the use_"):
            api.checkpoint_sequential(mod, 2, x)


def test_keyword_arguments_are_checked_like_torch() -> None:
    m, t = _models()
    cases = [
        lambda api, mod, x: api.checkpoint(mod, x, use_reentrant=True, foo=1),
        lambda api, mod, x: api.checkpoint_sequential(mod, 2, x, use_reentrant=False, foo=1),
        lambda api, mod, x: api.checkpoint_sequential(mod, 9, x, use_reentrant=False),
        lambda api, mod, x: api.checkpoint(mod, x, use_reentrant=True, debug=True),
    ]
    for case in cases:
        with pytest.raises(Exception) as expected, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case(theirs, t, torch.tensor(_X))
        with pytest.raises(type(expected.value)) as got:
            case(ours, m, mininn.tensor(_X))
        assert str(got.value) == str(expected.value)
    assert ours.checkpoint(lambda x, scale: x * scale, mininn.ones(2), use_reentrant=False,
                           scale=3.0, preserve_rng_state=False).sum().item() == 6.0
