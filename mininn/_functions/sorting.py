"""Order-based ops: sort, argsort, topk, and the running sum cumsum."""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn import _dtype
from mininn._functions._util import _FLOAT, category, wrap_dim
from mininn._functions.conversion import cast
from mininn._functions.reduction import return_types
from mininn._functions.scatter import TakeAlongDim
from mininn.autograd.graph import ArrayFunction, Context, wrap


class CumSum(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axis: int) -> Any:
        ctx.axis = axis
        return np.cumsum(a, axis=axis)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        axis = ctx.axis
        return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis), None


def _order(a: Any, axis: int, descending: bool) -> Any:
    if descending:
        # stable descending order: sort the reversed line ascending, then map back
        rev = np.flip(a, axis)
        idx = np.argsort(rev, axis=axis, kind="stable")
        idx = a.shape[axis] - 1 - np.flip(idx, axis)
        return idx
    return np.argsort(a, axis=axis, kind="stable")


def sort(input: Any, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Any:
    """``(values, indices)`` sorted along ``dim``; gradients flow to the sorted values."""
    if input._data.ndim == 0:
        return return_types.sort(input.clone(), wrap(np.zeros((), np.int64)))
    axis = wrap_dim(dim, input._data.ndim)
    idx = _order(input._data, axis, descending).astype(np.int64)
    return return_types.sort(TakeAlongDim.apply(input, idx, axis), wrap(idx))


def argsort(input: Any, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Any:
    """The indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable=stable).indices


def topk(input: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:  # noqa: A002
    """The ``k`` largest (or smallest) entries along ``dim`` and their indices."""
    if input._data.ndim == 0:
        if k not in (0, 1):
            raise RuntimeError("selected index k out of range")
        return return_types.topk(input.clone(), wrap(np.zeros((), np.int64)))
    axis = wrap_dim(dim, input._data.ndim)
    if not 0 <= k <= input._data.shape[axis]:
        raise RuntimeError("selected index k out of range")
    idx = _order(input._data, axis, largest)
    idx = np.take(idx, np.arange(k), axis=axis).astype(np.int64)
    return return_types.topk(TakeAlongDim.apply(input, idx, axis), wrap(idx))


def cumsum(input: Any, dim: int, *, dtype: Any = None) -> Any:
    """Running sum along ``dim``; integers and bools sum as int64."""
    x = input if dtype is None else cast(input, _dtype.as_dtype(dtype).np)
    if dtype is None and category(x._data.dtype) < _FLOAT:
        x = cast(x, np.dtype(np.int64))
    if x._data.ndim == 0:
        return x.clone()
    return CumSum.apply(x, wrap_dim(dim, x._data.ndim))
