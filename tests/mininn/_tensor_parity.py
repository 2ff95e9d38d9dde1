"""Run one expression in mininn and in torch, then compare values and gradients.

``run_both(fn, *arrays)`` builds twin inputs from NumPy arrays (floating ones
require grad), evaluates ``fn(lib, *inputs)`` with ``lib`` being ``mininn`` or
``torch``, back-propagates the same random upstream gradient through both
results and compares outputs and input gradients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import mininn

TOLERANCES = {np.dtype(np.float32): (2e-5, 1e-5), np.dtype(np.float64): (1e-10, 1e-12)}


def torch_module() -> Any:
    import torch

    return torch


def as_numpy(t: Any) -> np.ndarray:
    if isinstance(t, mininn.Tensor):
        return np.asarray(t.detach().numpy())
    return t.detach().cpu().numpy()


def _twins(arrays: tuple[np.ndarray, ...]) -> tuple[list[Any], list[Any]]:
    torch = torch_module()
    ours, theirs = [], []
    for a in arrays:
        grad = a.dtype.kind == "f"
        ours.append(mininn.tensor(a, requires_grad=grad))
        theirs.append(torch.tensor(a, requires_grad=grad))
    return ours, theirs


def _outputs(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


def assert_close(got: np.ndarray, want: np.ndarray, dtype: np.dtype, what: str, scale: float = 1) -> None:
    rtol, atol = TOLERANCES.get(np.dtype(dtype), (1e-3, 1e-3))
    assert got.shape == want.shape, f"{what}: shape {got.shape} != torch's {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != torch's {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=rtol * scale, atol=atol * scale, err_msg=what)


def run_both(fn: Callable[..., Any], *arrays: np.ndarray, seed: int = 0, scale: float = 1,
             check_grad: bool = True) -> tuple[list[Any], list[Any]]:
    """Evaluate ``fn`` in both libraries and assert equal values, dtypes and gradients."""
    ours, theirs = _twins(arrays)
    got, want = _outputs(fn(mininn, *ours)), _outputs(fn(torch_module(), *theirs))
    assert len(got) == len(want)
    dtype = next((a.dtype for a in arrays if a.dtype.kind == "f"), np.dtype(np.float32))
    for i, (g, w) in enumerate(zip(got, want)):
        assert_close(as_numpy(g), as_numpy(w), dtype, f"output {i}", scale)
        assert g.requires_grad == w.requires_grad, f"output {i}: requires_grad differs"
    if check_grad:
        _compare_grads(got, want, ours, theirs, dtype, seed, scale)
    return got, want


def _compare_grads(got: list[Any], want: list[Any], ours: list[Any], theirs: list[Any],
                   dtype: np.dtype, seed: int, scale: float) -> None:
    torch = torch_module()
    rng = np.random.default_rng(seed)
    pairs = [(g, w) for g, w in zip(got, want) if w.requires_grad]
    if not pairs:
        return
    loss_ours, loss_theirs = None, None
    for g, w in pairs:
        up = rng.standard_normal(tuple(w.shape)).astype(as_numpy(w).dtype)
        lo = (g * mininn.tensor(up)).sum()
        lt = (w * torch.tensor(up)).sum()
        loss_ours = lo if loss_ours is None else loss_ours + lo
        loss_theirs = lt if loss_theirs is None else loss_theirs + lt
    loss_ours.backward()
    loss_theirs.backward()
    for i, (o, t) in enumerate(zip(ours, theirs)):
        if t.grad is None:
            assert o.grad is None or not np.any(as_numpy(o.grad)), f"input {i}: unexpected grad"
            continue
        assert o.grad is not None, f"input {i}: no gradient"
        assert_close(as_numpy(o.grad), as_numpy(t.grad), dtype, f"grad of input {i}", scale)


def torch_error(fn: Callable[[Any], Any]) -> BaseException:
    """The exception torch raises for ``fn(torch)`` (the test fails if it raises none)."""
    try:
        fn(torch_module())
    except Exception as err:  # noqa: BLE001 - any exception is the reference
        return err
    raise AssertionError("torch raised no error")
