"""``mininn.utils.checkpoint`` against ``torch.utils.checkpoint``: same outputs, gradients and refusals."""

from __future__ import annotations

import contextlib
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import mininn
import mininn.utils.checkpoint as mcp
from mininn.torch_alias import torch_module

torch = pytest.importorskip("torch")
tcp = pytest.importorskip("torch.utils.checkpoint")

MININN = SimpleNamespace(t=mininn, cp=mcp)
TORCH = SimpleNamespace(t=torch, cp=tcp)
RNG = np.random.default_rng(0)
WEIGHTS = {k: RNG.standard_normal(s).astype(np.float32)
           for k, s in {"0.weight": (5, 4), "0.bias": (5,), "2.weight": (3, 5), "2.bias": (3,)}.items()}
X = RNG.standard_normal((2, 4)).astype(np.float32)


def model(lib: SimpleNamespace) -> Any:
    net = lib.t.nn.Sequential(lib.t.nn.Linear(4, 5), lib.t.nn.Tanh(), lib.t.nn.Linear(5, 3))
    net.load_state_dict({k: lib.t.tensor(v) for k, v in WEIGHTS.items()})
    return net


def run(lib: SimpleNamespace, x_requires_grad: bool, call: Any) -> dict[str, Any]:
    """Output and gradients (None where torch leaves none) of ``call(lib, net, x)`` summed."""
    net = model(lib)
    x = lib.t.tensor(X, requires_grad=x_requires_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = call(lib, net, x)
    if out.requires_grad:
        out.sum().backward()
    grads = {name: None if p.grad is None else p.grad.numpy() for name, p in net.named_parameters()}
    grads["x"] = None if x.grad is None else x.grad.numpy()
    return {"out": out.detach().numpy(), **grads}


CALLS = {
    "non-reentrant": lambda lib, net, x: lib.cp.checkpoint(net, x, use_reentrant=False),
    "reentrant": lambda lib, net, x: lib.cp.checkpoint(net, x, use_reentrant=True),
    "default": lambda lib, net, x: lib.cp.checkpoint(net, x),
    "head after a checkpointed body": lambda lib, net, x: net[2](lib.cp.checkpoint(
        lambda h: net[1](net[0](h)), x, use_reentrant=True)),
    "keyword arguments": lambda lib, net, x: lib.cp.checkpoint(lambda a, scale: net(a) * scale, x, scale=2.0,
                                                               use_reentrant=False),
    "sequential": lambda lib, net, x: lib.cp.checkpoint_sequential(net, 2, x, use_reentrant=True),
    "sequential non-reentrant": lambda lib, net, x: lib.cp.checkpoint_sequential(
        list(net), 3, x, use_reentrant=False),
}


@pytest.mark.parametrize("x_requires_grad", [True, False])
@pytest.mark.parametrize("name", list(CALLS))
def test_outputs_and_gradients_equal_torchs(name: str, x_requires_grad: bool) -> None:
    ours = run(MININN, x_requires_grad, CALLS[name])
    theirs = run(TORCH, x_requires_grad, CALLS[name])
    assert [k for k, v in ours.items() if v is None] == [k for k, v in theirs.items() if v is None]
    for key, value in theirs.items():
        if value is not None:
            np.testing.assert_allclose(ours[key], value, rtol=1e-5, atol=1e-6, err_msg=key)


def test_reentrant_without_an_input_needing_grad_warns_as_torch() -> None:
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True. Gradients will be"):
        out = mcp.checkpoint(model(MININN), mininn.tensor(X), use_reentrant=True)
    assert not out.requires_grad
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        mcp.checkpoint(model(MININN), mininn.tensor(X, requires_grad=True))


ERRORS = {
    "keywords with reentrant": lambda lib: lib.cp.checkpoint(len, [1], use_reentrant=True, a=1, b=2),
    "context_fn with reentrant": lambda lib: lib.cp.checkpoint(len, [1], use_reentrant=True,
                                                               context_fn=lambda: (None, None)),
    "sequential keywords": lambda lib: lib.cp.checkpoint_sequential([len], 1, [1], use_reentrant=False, a=1),
    "more segments than steps": lambda lib: lib.cp.checkpoint_sequential([abs], 2, -1, use_reentrant=False),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_refusals_equal_torchs(name: str) -> None:
    def outcome(lib: SimpleNamespace) -> tuple[str, str]:
        try:
            return "ok", repr(ERRORS[name](lib))
        except Exception as exc:  # noqa: BLE001 - the outcome is compared
            return type(exc).__name__, str(exc)

    assert outcome(MININN) == outcome(TORCH)


def test_the_forward_runs_in_context_fns_forward_context() -> None:
    entered = []

    @contextlib.contextmanager
    def note(name: str) -> Any:
        entered.append(name)
        yield

    out = mcp.checkpoint(lambda v: v * 2, mininn.ones(1), use_reentrant=False,
                         context_fn=lambda: (note("forward"), note("recompute")))
    assert out.tolist() == [2.0] and entered == ["forward"]


def test_served_code_imports_torch_utils_checkpoint_as_this_module() -> None:
    assert torch_module("torch.utils.checkpoint").checkpoint is mcp.checkpoint
