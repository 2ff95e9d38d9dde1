"""softmax and log_softmax along one dimension, computed without overflow."""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn import _dtype
from mininn._functions._bases import _along_axis
from mininn._functions._util import _FLOAT, category, torch_type_name, wrap_dim
from mininn._functions.conversion import cast


def _shifted(a: Any, axis: int) -> Any:
    m = a.max(axis=axis, keepdims=True) if a.size else np.zeros_like(a)
    return a - np.where(np.isfinite(m), m, 0)


def _softmax(a: Any, axis: int) -> Any:
    e = np.exp(_shifted(a, axis))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_grad(g: Any, out: Any, axis: int) -> Any:
    gy = g * out
    return gy - out * gy.sum(axis=axis, keepdims=True)


def _log_softmax(a: Any, axis: int) -> Any:
    z = _shifted(a, axis)
    with np.errstate(divide="ignore"):
        return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _log_softmax_grad(g: Any, out: Any, axis: int) -> Any:
    return g - np.exp(out) * g.sum(axis=axis, keepdims=True)


Softmax = _along_axis("Softmax", _softmax, _softmax_grad, saves_input=False)
LogSoftmax = _along_axis("LogSoftmax", _log_softmax, _log_softmax_grad, saves_input=False)


def _prepare(input: Any, dim: int, dtype: Any, kernel: str) -> tuple[Any, int]:
    x = input if dtype is None else cast(input, _dtype.as_dtype(dtype).np)
    if category(x._data.dtype) < _FLOAT:
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{torch_type_name(x._data.dtype)}'"
        )
    return x, wrap_dim(dim, x._data.ndim) if x._data.ndim else -1


def softmax(input: Any, dim: int, dtype: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    x, axis = _prepare(input, dim, dtype, "softmax_lastdim_kernel_impl")
    if x._data.ndim == 0:
        return Softmax.apply(x.reshape(1), 0).reshape(())
    return Softmax.apply(x, axis)


def log_softmax(input: Any, dim: int, dtype: Any = None) -> Any:
    """``x - logsumexp(x)`` along ``dim``."""
    x, axis = _prepare(input, dim, dtype, "log_softmax_lastdim_kernel_impl")
    if x._data.ndim == 0:
        return LogSoftmax.apply(x.reshape(1), 0).reshape(())
    return LogSoftmax.apply(x, axis)
