"""Shared machinery of the layer parity tests: run a torch layer and its mininn twin side by side.

``twin(torch_module, mininn_module)`` copies torch's state dict (parameters
and buffers) into the mininn module through ``load_state_dict``;
``run_both`` feeds both the same input and the same output cotangent and
returns everything worth comparing; ``assert_parity`` compares it all (the
output, the input gradient and every parameter gradient, then every buffer).
``raised(fn)`` captures an exception as ``(type name, message)`` with torch's
package name mapped to ``mininn`` and the members of any ``{...}`` set sorted
(torch prints Python sets, whose order changes between processes).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

import mininn

TOL = {np.dtype(np.float32): dict(rtol=1e-5, atol=1e-5), np.dtype(np.float64): dict(rtol=1e-10, atol=1e-12)}


def tol(dtype: Any) -> dict[str, float]:
    return TOL[np.dtype(dtype)]


def to_numpy(t: Any) -> np.ndarray:
    """A torch or mininn tensor's values as a NumPy array (a copy)."""
    if hasattr(t, "detach"):
        t = t.detach()
    if hasattr(t, "cpu"):
        t = t.cpu()
    return np.array(t.numpy())


def twin(torch_module: Any, mininn_module: Any) -> Any:
    """Load torch's state dict into ``mininn_module`` (strict) and return it."""
    state = {k: mininn.tensor(to_numpy(v)) for k, v in torch_module.state_dict().items()}
    result = mininn_module.load_state_dict(state)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    return mininn_module


def run_both(torch_module: Any, mininn_module: Any, x: np.ndarray, training: bool = True,
             seed: int = 0) -> dict[str, Any]:
    """Forward and backward both modules on ``x`` with the same cotangent."""
    import torch

    torch_module.train(training)
    mininn_module.train(training)
    tx = torch.tensor(x, requires_grad=True)
    mx = mininn.tensor(x, requires_grad=True)
    ty = torch_module(tx)
    my = mininn_module(mx)
    cot = np.random.default_rng(seed).standard_normal(tuple(ty.shape)).astype(x.dtype)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    return dict(tx=tx, mx=mx, ty=ty, my=my)


def assert_parity(torch_module: Any, mininn_module: Any, x: np.ndarray, training: bool = True,
                  rtol: float | None = None, atol: float | None = None) -> None:
    """Outputs, input grads, parameter grads and buffers agree within the dtype's tolerance."""
    t = dict(tol(x.dtype))
    if rtol is not None:
        t["rtol"] = rtol
    if atol is not None:
        t["atol"] = atol
    out = run_both(torch_module, mininn_module, x, training)
    assert tuple(out["my"].shape) == tuple(out["ty"].shape)
    assert out["my"].dtype.name == str(out["ty"].dtype).removeprefix("torch.")
    np.testing.assert_allclose(to_numpy(out["my"]), to_numpy(out["ty"]), **t, err_msg="output")
    np.testing.assert_allclose(to_numpy(out["mx"].grad), to_numpy(out["tx"].grad), **t, err_msg="input grad")
    t_params = dict(torch_module.named_parameters())
    m_params = dict(mininn_module.named_parameters())
    assert list(m_params) == list(t_params)
    for name, tp in t_params.items():
        np.testing.assert_allclose(to_numpy(m_params[name].grad), to_numpy(tp.grad), **t, err_msg=name)
    assert_same_buffers(torch_module, mininn_module, **t)


def assert_same_buffers(torch_module: Any, mininn_module: Any, **t: float) -> None:
    t_bufs = dict(torch_module.named_buffers())
    m_bufs = dict(mininn_module.named_buffers())
    assert list(m_bufs) == list(t_bufs)
    for name, tb in t_bufs.items():
        np.testing.assert_allclose(to_numpy(m_bufs[name]), to_numpy(tb), **t, err_msg=name)


def state_layout(module: Any) -> list[tuple[str, tuple[int, ...], str]]:
    """``(key, shape, dtype name)`` for each state-dict entry, in order."""
    return [
        (k, tuple(v.shape), str(v.dtype).removeprefix("torch.").removeprefix("mininn."))
        for k, v in module.state_dict().items()
    ]


def slot_layout(module: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Which parameter and buffer slots exist and which are ``None`` (shapes otherwise)."""
    def shape(v: Any) -> Any:
        return None if v is None else tuple(v.shape)

    return ({k: shape(v) for k, v in module._parameters.items()},
            {k: shape(v) for k, v in module._buffers.items()})


def raised(fn: Any) -> tuple[str, str]:
    """``(exception type name, message)`` of what ``fn()`` raises, torch's name mapped to mininn."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        msg = str(e.args[0]) if e.args else ""
        return type(e).__name__, _SET.sub(_sorted_set, msg.replace("torch.", "mininn."))
    raise AssertionError("expected an exception")


_SET = re.compile(r"\{([^{}]*)\}")


def _sorted_set(match: re.Match[str]) -> str:
    return "{" + ", ".join(sorted(match.group(1).split(", "))) + "}"


def same_error(torch_fn: Any, mininn_fn: Any) -> tuple[str, str]:
    """Both raise the same exception type with the same message; returns it."""
    expected = raised(torch_fn)
    got = raised(mininn_fn)
    assert got == expected, f"\nmininn: {got!r}\ntorch:  {expected!r}"
    return expected
