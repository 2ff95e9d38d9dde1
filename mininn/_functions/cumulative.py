"""Running ops along a dim: cumprod, cummax/cummin, logcumsumexp, and diff.

(cumsum lives with the other order-based ops in ``sorting.py``.)
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn import _dtype
from mininn._functions._bases import _along_axis
from mininn._functions._util import _FLOAT, category, torch_type_name, wrap_dim
from mininn._functions.conversion import cast
from mininn._functions.elementwise import logical_xor, sub
from mininn._functions.indexing import _coords, narrow
from mininn._functions.join import cat
from mininn._functions.reduction import return_types
from mininn._functions.reduction import sum as sum_
from mininn._functions.shape import reshape
from mininn._functions.sorting import cumsum
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import ArrayFunction, Context, wrap


def _rev_cumsum(x: Any, axis: int) -> Any:
    return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)


def _line_index(shape: tuple[int, ...], axis: int) -> Any:
    """0, 1, 2, ... along ``axis``, broadcastable against ``shape``."""
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.arange(shape[axis]).reshape(view)


def _cumprod_grad(g: Any, a: Any, out: Any, axis: int) -> Any:
    pos = _line_index(a.shape, axis)
    is_zero = a == 0
    # first zero of each line (the line's length when it has none)
    first = np.where(is_zero.any(axis, keepdims=True), np.argmax(is_zero, axis, keepdims=True),
                     a.shape[axis])
    before = pos < first
    # before the first zero: sum_{j >= i} g_j * out_j / x_i over the nonzero outputs
    with np.errstate(divide="ignore", invalid="ignore"):
        grad = np.where(before, _rev_cumsum(g * out * before, axis) / np.where(before, a, 1), 0)
    # at the first zero: sum_{j >= z} g_j * (the product up to j without that zero)
    at_zero = pos == first
    if at_zero.any():
        skipped = np.cumprod(np.where(at_zero, 1, a), axis=axis)
        grad = np.where(at_zero, _rev_cumsum(g * skipped, axis), grad)
    return grad.astype(g.dtype, copy=False)


CumProd = _along_axis("CumProd", lambda a, axis: np.cumprod(a, axis=axis), _cumprod_grad)


class CumExtreme(ArrayFunction):
    """cummax/cummin: the running extreme and the index of its latest occurrence."""

    @staticmethod
    def forward(ctx: Context, a: Any, axis: int, is_max: bool) -> Any:
        values = (np.maximum if is_max else np.minimum).accumulate(a, axis=axis)
        pos = np.broadcast_to(_line_index(a.shape, axis), a.shape)
        hit = (a == values) | (np.isnan(a) if a.dtype.kind in "fc" else False)
        idx = np.maximum.accumulate(np.where(hit, pos, 0), axis=axis).astype(np.int64)
        ctx.meta = (axis, idx)
        return values, idx

    @staticmethod
    def backward(ctx: Context, g: Any, _g_idx: Any) -> Any:
        axis, idx = ctx.meta
        out = np.zeros(g.shape, g.dtype)
        np.add.at(out, _coords(idx, axis), g)
        return out, None, None


def _logcumsumexp_grad(g: Any, a: Any, out: Any, axis: int) -> Any:
    # grad_i = sum_{j >= i} g_j exp(x_i - out_j), summed in log space by the sign of g
    grad = np.zeros_like(g)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for sign in (1, -1):
            logs = np.where(sign * g > 0, np.log(np.abs(g)) - out, -np.inf)
            rev = np.flip(np.logaddexp.accumulate(np.flip(logs, axis), axis=axis), axis)
            grad += sign * np.exp(a + rev)
    return grad


LogCumSumExp = _along_axis("LogCumSumExp", np.logaddexp.accumulate, _logcumsumexp_grad)


# ---- public functions (also bound as Tensor methods) -------------------------------------


def _with_dtype(input: Any, dtype: Any) -> Any:
    x = input if dtype is None else cast(input, _dtype.as_dtype(dtype).np)
    if dtype is None and category(x._data.dtype) < _FLOAT:
        x = cast(x, np.dtype(np.int64))
    return x


def cumprod(input: Any, dim: int, *, dtype: Any = None) -> Any:
    """Running product along ``dim``; integers and bools multiply as int64."""
    x = _with_dtype(input, dtype)
    if x._data.ndim == 0:
        return x.clone()
    return CumProd.apply(x, wrap_dim(dim, x._data.ndim))


def _cum_extreme(input: Any, dim: int, is_max: bool) -> Any:
    kind = return_types.cummax if is_max else return_types.cummin
    if input._data.ndim == 0:
        wrap_dim(dim, 0)
        return kind(input.clone(), wrap(np.zeros((), np.int64)))
    values, idx = CumExtreme.apply(input, wrap_dim(dim, input._data.ndim), is_max)
    return kind(values, idx)


def cummax(input: Any, dim: int) -> Any:
    """``(values, indices)``: the running maximum along ``dim`` and where it was last reached."""
    return _cum_extreme(input, dim, True)


def cummin(input: Any, dim: int) -> Any:
    """``(values, indices)``: the running minimum along ``dim`` and where it was last reached."""
    return _cum_extreme(input, dim, False)


def logcumsumexp(input: Any, dim: int) -> Any:
    """``log(cumsum(exp(input)))`` along ``dim``, without overflow."""
    if category(input._data.dtype) < _FLOAT:
        raise NotImplementedError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{torch_type_name(input._data.dtype)}'"
        )
    if input._data.ndim == 0:
        return input.clone()
    return LogCumSumExp.apply(input, wrap_dim(dim, input._data.ndim))


def diff(input: Any, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th forward difference along ``dim`` (after joining ``prepend`` and ``append``)."""
    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    axis = wrap_dim(dim, input._data.ndim)
    parts = [p for p in (prepend, input, append) if p is not None]
    x = cat(parts, axis) if len(parts) > 1 else input
    for _ in range(n):
        size = x._data.shape[axis]
        if size == 0:
            break
        hi, lo = narrow(x, axis, 1, size - 1), narrow(x, axis, 0, size - 1)
        x = logical_xor(hi, lo) if x._data.dtype.kind == "b" else sub(hi, lo)
    return x


def _spacing(y: Any, x: Any, dx: Any, axis: int) -> Any:
    if x is None:
        return 1.0 if dx is None else dx
    if x._data.ndim == 1:
        view = [1] * y._data.ndim
        view[axis] = -1
        x = reshape(x, view)
    n = x._data.shape[axis] if x._data.ndim else 1
    return narrow(x, axis, 1, n - 1) - narrow(x, axis, 0, n - 1)


def trapezoid(y: Any, x: Any = None, *, dx: Any = 1, dim: int = -1) -> Any:
    """The trapezoid-rule integral of ``y`` along ``dim`` (spacing ``dx``, 1 by default, or points ``x``)."""
    axis = wrap_dim(dim, y._data.ndim)
    n = y._data.shape[axis]
    if n == 0:
        return sum_(y, axis)
    mid = narrow(y, axis, 1, n - 1) + narrow(y, axis, 0, n - 1)
    return sum_(mid * _spacing(y, x, dx, axis), axis) / 2


trapz = trapezoid


def cumulative_trapezoid(y: Any, x: Any = None, *, dx: Any = 1, dim: int = -1) -> Any:
    """The running trapezoid-rule integral of ``y`` along ``dim`` (one element shorter than ``y``)."""
    axis = wrap_dim(dim, y._data.ndim)
    n = y._data.shape[axis]
    mid = narrow(y, axis, 1, max(n - 1, 0)) + narrow(y, axis, 0, max(n - 1, 0))
    return cumsum(mid * _spacing(y, x, dx, axis), axis) / 2


def gradient(input: Any, *, spacing: Any = None, dim: Any = None, edge_order: int = 1) -> tuple[Any, ...]:
    """Central-difference estimates of the derivative along each of ``dim`` (all dims by default), with
    one-sided differences of ``edge_order`` at the ends; ``spacing`` is a step or the coordinates."""
    dims = list(range(input._data.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [wrap_dim(d, input._data.ndim) for d in dims]
    spacing = 1 if spacing is None else spacing
    steps = spacing if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    outs = []
    for axis, step in zip(dims, steps):
        n = input._data.shape[axis]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")

        def part(t: Any, start: int, length: int, axis: int = axis) -> Any:
            return narrow(t, axis, start, length)

        if isinstance(step, TensorCore):
            x = step._data.astype(np.float64)
            h = np.diff(x)
            hl, hr = h[:-1], h[1:]
            view = [1] * input._data.ndim
            view[axis] = -1
            # the nonuniform three-point rule: weights of f[i-1], f[i], f[i+1]
            a = wrap((-hr / (hl * (hl + hr))).reshape(view).astype(input._data.dtype))
            b = wrap(((hr - hl) / (hl * hr)).reshape(view).astype(input._data.dtype))
            c = wrap((hl / (hr * (hl + hr))).reshape(view).astype(input._data.dtype))
            inner = part(input, 0, n - 2) * a + part(input, 1, n - 2) * b + part(input, 2, n - 2) * c
            first = (part(input, 1, 1) - part(input, 0, 1)) / float(h[0])
            last = (part(input, n - 1, 1) - part(input, n - 2, 1)) / float(h[-1])
        else:
            inner = (part(input, 2, n - 2) - part(input, 0, n - 2)) / (2 * step)
            if edge_order == 1:
                first = (part(input, 1, 1) - part(input, 0, 1)) / step
                last = (part(input, n - 1, 1) - part(input, n - 2, 1)) / step
            else:
                first = (part(input, 0, 1) * -1.5 + part(input, 1, 1) * 2 - part(input, 2, 1) * 0.5) / step
                last = (part(input, n - 1, 1) * 1.5 - part(input, n - 2, 1) * 2
                        + part(input, n - 3, 1) * 0.5) / step
        outs.append(cat([first, inner, last], axis))
    return tuple(outs)
