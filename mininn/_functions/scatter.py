"""Scatter and indexed writes: ``scatter``, ``scatter_add``, ``scatter_reduce``,
``index_add``, ``index_copy``, ``index_fill``, ``masked_scatter``,
``take_along_dim``, and their in-place ``*_`` forms.

``scatter*`` address ``input`` through an ``index`` tensor of the same rank:
element ``index[i][j]`` along ``dim`` names where ``src[i][j]`` goes. The
``index_*`` ops address whole slices along ``dim`` by a 1-D index.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions import inplace as IP
from mininn._functions._util import broadcast_error, torch_type_name, unbroadcast, wrap_dim
from mininn._functions.elementwise import fill_value
from mininn._functions.indexing import Index, IndexPut, _coords, _gathering, getitem, index_key
from mininn._functions.shape import reshape
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import ArrayFunction, Context, wrap

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _window(shape: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(0, n) for n in shape)


def _src_part(src: Any, index: Any) -> Any:
    """The elements of ``src`` that ``index`` addresses (its leading ``index.shape`` block)."""
    return src[_window(index.shape)] if np.ndim(src) else src


def _src_grad(g_at: Any, src_shape: tuple[int, ...] | None, index_shape: tuple[int, ...]) -> Any:
    if src_shape is None:
        return None
    out = np.zeros(src_shape, g_at.dtype)
    out[_window(index_shape)] = g_at
    return out


class Scatter(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axis: int, index: Any, src: Any) -> Any:
        coords = _coords(index, axis)
        out = a.copy()
        out[coords] = _src_part(src, index)
        ctx.meta = (coords, index.shape, src.shape if np.ndim(src) else None)  # a number: no gradient
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        coords, index_shape, src_shape = ctx.meta
        ga = g.copy()
        ga[coords] = 0
        return ga, None, None, _src_grad(g[coords], src_shape, index_shape)


class ScatterAdd(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axis: int, index: Any, src: Any) -> Any:
        coords = _coords(index, axis)
        out = a.copy()
        np.add.at(out, coords, _src_part(src, index))
        ctx.meta = (coords, index.shape, src.shape)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        coords, index_shape, src_shape = ctx.meta
        return g, None, None, _src_grad(g[coords], src_shape, index_shape)


class ScatterReduce(ArrayFunction):
    """``scatter_reduce``: each addressed position reduces its contributions (and itself when
    ``include_self``); the gradient of amax/amin is shared evenly between tied contributors."""

    @staticmethod
    def forward(ctx: Context, a: Any, axis: int, index: Any, src: Any, reduce: str,
                include_self: bool) -> Any:
        coords = _coords(index, axis)
        part = src[_window(index.shape)]
        touched = np.zeros(a.shape, bool)
        touched[coords] = True
        count = np.zeros(a.shape, np.int64)
        np.add.at(count, coords, 1)
        if include_self:
            count += touched
        out = a.copy()
        if not include_self:
            out[touched] = _identity(reduce, a.dtype)
        ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}
        ufunc[reduce].at(out, coords, part)
        if reduce == "mean":
            safe = np.maximum(count, 1)
            out = np.where(touched, out // safe if a.dtype.kind in "iub" else out / safe, out).astype(a.dtype)
        ctx.save_for_backward(a, part, out)
        ctx.meta = (coords, index.shape, src.shape, reduce, include_self, touched, count)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, part, out = ctx.saved_tensors
        coords, index_shape, src_shape, reduce, include_self, touched, count = ctx.meta
        keep_self = ~touched | include_self
        if reduce == "sum":
            ga, gs = g * keep_self, g[coords]
        elif reduce == "mean":
            scale = np.where(touched, 1 / np.maximum(count, 1), 1).astype(g.dtype)
            ga, gs = g * scale * keep_self, (g * scale)[coords]
        elif reduce == "prod":
            ga, gs = _prod_grads(g, a, part, coords, touched, include_self)
        else:
            ties = np.zeros(a.shape, np.int64)
            hit_src = part == out[coords]
            np.add.at(ties, coords, hit_src)
            ties += (a == out) & touched  # torch counts a tied original even when it is excluded
            hit_self = (a == out) & keep_self
            share = g / np.maximum(ties, 1)
            ga = np.where(touched, share * hit_self, g)
            gs = share[coords] * hit_src
        return ga.astype(g.dtype, copy=False), None, None, _src_grad(gs.astype(g.dtype, copy=False),
                                                                     src_shape, index_shape), None, None


def _identity(reduce: str, dtype: Any) -> Any:
    if reduce == "prod":
        return 1
    if reduce in ("sum", "mean"):
        return 0
    big = np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max
    return -big if reduce == "amax" else big


def _prod_grads(g: Any, a: Any, part: Any, coords: Any, touched: Any, include_self: bool) -> tuple[Any, Any]:
    """Product of the other contributors of each position, exact when some of them are zero."""
    self_in = touched & include_self
    zeros = np.zeros(a.shape, np.int64)
    np.add.at(zeros, coords, part == 0)
    zeros += self_in & (a == 0)
    nonzero = np.where(self_in & (a != 0), a, 1).astype(a.dtype)
    np.multiply.at(nonzero, coords, np.where(part == 0, 1, part))

    def others(value: Any, z: Any, p: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(z == 0, p / np.where(value == 0, 1, value),
                            np.where((z == 1) & (value == 0), p, 0))

    ga = np.where(touched, np.where(self_in, g * others(a, zeros, nonzero), 0), g)
    gs = g[coords] * others(part, zeros[coords], nonzero[coords])
    return ga, gs


class IndexAdd(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axis: int, index: Any, src: Any, alpha: Any) -> Any:
        out = a.copy()
        key = (slice(None),) * axis + (index,)
        np.add.at(out, key, src * alpha if alpha != 1 else src)
        ctx.meta = (key, alpha)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        key, alpha = ctx.meta
        gs = g[key]
        return g, None, None, (gs * alpha if alpha != 1 else gs), None


class IndexCopy(ArrayFunction):
    """``index_copy`` and ``index_fill``: slices along ``axis`` overwritten by ``src``."""

    @staticmethod
    def forward(ctx: Context, a: Any, axis: int, index: Any, src: Any) -> Any:
        return IndexPut.forward(ctx, a, (slice(None),) * axis + (index,), src)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        ga, _, gs = IndexPut.backward(ctx, g)
        return ga, None, None, gs


class MaskedScatter(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, mask: Any, src: Any) -> Any:
        mask = np.broadcast_to(mask, a.shape)
        n = int(mask.sum())
        out = a.copy()
        out[mask] = src.reshape(-1)[:n]
        ctx.meta = (mask, n, src.shape)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        mask, n, src_shape = ctx.meta
        gs = np.zeros(int(np.prod(src_shape)), g.dtype)
        gs[:n] = g[mask]
        return np.where(mask, 0, g), None, gs.reshape(src_shape)


TakeAlongDim = _gathering("TakeAlongDim", lambda a, idx, axis: np.take_along_axis(a, idx, axis=axis), _coords)


# ---- argument checks, with torch's messages -------------------------------------------------


def _index_array(index: Any, name: str) -> Any:
    idx = index._data
    if idx.dtype not in (np.int32, np.int64):
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")
    return idx


def _check_scatter(a: Any, axis: int, idx: Any, src: Any) -> None:
    if idx.ndim != a.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None and np.ndim(src) != idx.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    too_big = any(n > a.shape[d] for d, n in enumerate(idx.shape) if d != axis)
    if src is not None and np.ndim(src):
        too_big = too_big or any(n > s for n, s in zip(idx.shape, src.shape))
        if too_big:
            raise RuntimeError(
                f"Expected index {list(idx.shape)} to be no larger than self {list(a.shape)} apart from "
                f"dimension {axis} and to be no larger size than src {list(src.shape)}"
            )
    elif too_big:
        raise RuntimeError(
            f"Expected index {list(idx.shape)} to be no larger than self {list(a.shape)} apart from "
            f"dimension {axis}"
        )
    _check_bounds(idx, a.shape[axis] if a.ndim else 1, axis, RuntimeError)


def _check_bounds(idx: Any, size: int, axis: int, error: type[Exception]) -> None:
    if idx.size == 0:
        return
    bad = idx[(idx < 0) | (idx >= size)]
    if bad.size:
        raise error(f"index {bad.reshape(-1)[0]} is out of bounds for dimension {axis} with size {size}")


def _checked_scatter_args(input: Any, dim: int, index: Any, src: Any, name: str,
                          dtype_name: str) -> tuple[int, Any]:
    """``dim`` as an axis and ``index`` as an array, checked against ``src`` with torch's messages."""
    axis = wrap_dim(dim, input._data.ndim)
    idx = _index_array(index, name)
    _same_dtype(input, src, dtype_name)
    _check_scatter(input._data, axis, idx, src._data)
    return axis, idx


def _same_dtype(input: Any, src: Any, name: str) -> None:
    if src._data.dtype != input._data.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")


# ---- public functions (also bound as Tensor methods) -------------------------------------


def scatter(input: Any, dim: int, index: Any, src: Any = None, value: Any = None, *,
            reduce: str | None = None) -> Any:
    """A copy of ``input`` with ``src`` (a tensor or a number) written where ``index`` points on ``dim``."""
    if src is None:
        src = value
    axis = wrap_dim(dim, input._data.ndim)
    idx = _index_array(index, "scatter")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if not isinstance(src, TensorCore):
            src = wrap(np.full(idx.shape, src, input._data.dtype))
        return scatter_reduce(input, dim, index, src, "sum" if reduce == "add" else "prod")
    if isinstance(src, TensorCore):
        _same_dtype(input, src, "scatter")
        _check_scatter(input._data, axis, idx, src._data)
        return Scatter.apply(input, axis, idx, src)
    _check_scatter(input._data, axis, idx, None)
    return Scatter.apply(input, axis, idx, np.asarray(src, input._data.dtype))


def scatter_add(input: Any, dim: int, index: Any, src: Any) -> Any:
    """A copy of ``input`` with ``src`` added where ``index`` points along ``dim`` (repeats accumulate)."""
    if not isinstance(src, TensorCore):
        raise TypeError(
            f"scatter_add(): argument 'src' (position 3) must be Tensor, not {type(src).__name__}"
        )
    axis, idx = _checked_scatter_args(input, dim, index, src, "scatter_add", "scatter")
    return ScatterAdd.apply(input, axis, idx, src)


def scatter_reduce(input: Any, dim: int, index: Any, src: Any, reduce: str, *,
                   include_self: bool = True) -> Any:
    """Reduce ``src`` into ``input`` where ``index`` points: ``"sum"``, ``"prod"``, ``"mean"``,
    ``"amax"`` or ``"amin"`` (``include_self`` also counts the original value)."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    axis, idx = _checked_scatter_args(input, dim, index, src, "scatter_reduce", "scatter_reduce")
    return ScatterReduce.apply(input, axis, idx, src, reduce, include_self)


def _slice_index(input: Any, dim: int, index: Any, name: str) -> tuple[int, Any]:
    axis = wrap_dim(dim, input._data.ndim)
    idx = index._data if isinstance(index, TensorCore) else np.asarray(index)
    if idx.ndim > 1:
        raise IndexError(
            f"{name}(): Index is supposed to be a vector, but got dim: {idx.ndim} with type: "
            f"{torch_type_name(idx.dtype)} and size: {list(idx.shape)}"
        )
    if idx.dtype not in (np.int32, np.int64):
        raise RuntimeError(
            f"{name}(): Expected dtype int32/int64 for index but got: {torch_type_name(idx.dtype)}"
        )
    return axis, idx.reshape(-1)


def _check_source(input: Any, axis: int, idx: Any, source: Any, name: str) -> None:
    a, s = input._data, source._data
    if s.dtype != a.dtype:
        raise RuntimeError(
            f"{name}(): self ({torch_type_name(a.dtype)}) and source ({torch_type_name(s.dtype)}) must "
            "have the same scalar type"
        )
    n = s.shape[axis] if s.ndim else 1
    if n != idx.size:
        raise RuntimeError(
            f"{name}(): Number of indices ({idx.size}) should be equal to source.size(dim): ({n}), "
            f"for dim: {axis}"
        )
    if s.ndim and (s.ndim != a.ndim or any(x != y for d, (x, y) in enumerate(zip(a.shape, s.shape))
                                           if d != axis)):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got "
            f"self.shape = {list(a.shape)} source.shape = {list(s.shape)}"
        )


def index_add(input: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Any:
    """A copy of ``input`` with ``alpha * source`` added to the slices ``index`` along ``dim``."""
    axis, idx = _slice_index(input, dim, index, "index_add_")
    _check_source(input, axis, idx, source, "index_add_")
    _check_bounds(idx, input._data.shape[axis] if input._data.ndim else 1, axis, RuntimeError)
    return IndexAdd.apply(input, axis, idx, source, alpha)


def index_copy(input: Any, dim: int, index: Any, source: Any) -> Any:
    """A copy of ``input`` with the slices ``index`` along ``dim`` replaced by ``source``."""
    axis, idx = _slice_index(input, dim, index, "index_copy_")
    n = source._data.shape[axis] if source._data.ndim else 1
    if n != idx.size:
        raise IndexError(
            f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) ({n})"
        )
    _check_source(input, axis, idx, source, "index_copy_")
    _check_bounds(idx, input._data.shape[axis] if input._data.ndim else 1, axis, IndexError)
    return IndexCopy.apply(input, axis, idx, source)


def index_fill(input: Any, dim: int, index: Any, value: Any) -> Any:
    """A copy of ``input`` with the slices ``index`` along ``dim`` set to ``value``."""
    axis, idx = _slice_index(input, dim, index, "index_fill_")
    value = fill_value(value, input._data.dtype, "index_fill_")
    _check_bounds(idx, input._data.shape[axis] if input._data.ndim else 1, axis, IndexError)
    return IndexCopy.apply(input, axis, idx, value)


def masked_scatter(input: Any, mask: Any, source: Any) -> Any:
    """A copy of ``input`` with the elements where ``mask`` holds taken in order from ``source``."""
    m = mask._data
    if m.dtype.kind != "b":
        raise RuntimeError(
            f"masked_scatter_ only supports boolean masks, but got mask with dtype {torch_type_name(m.dtype)}"
        )
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got"
            f"{torch_type_name(input._data.dtype)} and {torch_type_name(source._data.dtype)}"
        )
    try:
        shape = np.broadcast_shapes(m.shape, input._data.shape)
    except ValueError:
        raise broadcast_error(input._data.shape, m.shape) from None
    if shape != input._data.shape:
        raise broadcast_error(input._data.shape, m.shape)
    if int(np.broadcast_to(m, shape).sum()) > source._data.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return MaskedScatter.apply(input, m, source)


def take_along_dim(input: Any, indices: Any, dim: int | None = None) -> Any:
    """``gather`` with broadcasting: the entries at ``indices`` along ``dim`` (of the flattened input
    when ``dim`` is None)."""
    idx = indices._data
    if idx.dtype != np.int64:
        raise RuntimeError(
            f"torch.take_along_dim(): dtype of indices should be Long but got {torch_type_name(idx.dtype)}"
        )
    if dim is None:
        return TakeAlongDim.apply(input.reshape(-1), idx.reshape(-1), 0)
    a = input._data
    axis = wrap_dim(dim, a.ndim)
    if idx.ndim != a.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of dimensions, but "
            f"got {a.ndim} dimensions for input, and {idx.ndim} dimensions for indices"
        )
    a_rest = a.shape[:axis] + (1,) + a.shape[axis + 1 :]
    i_rest = idx.shape[:axis] + (1,) + idx.shape[axis + 1 :]
    try:
        rest = np.broadcast_shapes(a_rest, i_rest)
    except ValueError:
        raise broadcast_error(a_rest, i_rest) from None
    x = input
    if a_rest != rest:
        x = input.expand(rest[:axis] + (a.shape[axis],) + rest[axis + 1 :])
    idx = np.broadcast_to(idx, rest[:axis] + (idx.shape[axis],) + rest[axis + 1 :])
    _check_bounds(idx, a.shape[axis], axis, IndexError)
    return TakeAlongDim.apply(x, idx, axis)


# ---- in place ----------------------------------------------------------------------------


def scatter_(self: Any, dim: int, index: Any, src: Any = None, value: Any = None, *,
             reduce: str | None = None) -> Any:
    """``scatter`` in place."""
    return IP._apply(self, lambda s, i, v: scatter(s, dim, i, v, value, reduce=reduce), index, src)


def scatter_add_(self: Any, dim: int, index: Any, src: Any) -> Any:
    """``scatter_add`` in place."""
    return IP._apply(self, lambda s, i, v: scatter_add(s, dim, i, v), index, src)


def scatter_reduce_(self: Any, dim: int, index: Any, src: Any, reduce: str, *,
                    include_self: bool = True) -> Any:
    """``scatter_reduce`` in place."""
    return IP._apply(self, lambda s, i, v: scatter_reduce(s, dim, i, v, reduce, include_self=include_self),
                     index, src)


def index_add_(self: Any, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Any:
    """``index_add`` in place."""
    return IP._apply(self, lambda s, i, v: index_add(s, dim, i, v, alpha=alpha), index, source)


def index_copy_(self: Any, dim: int, index: Any, source: Any) -> Any:
    """``index_copy`` in place."""
    return IP._apply(self, lambda s, i, v: index_copy(s, dim, i, v), index, source)


def index_fill_(self: Any, dim: int, index: Any, value: Any) -> Any:
    """``index_fill`` in place."""
    return IP._apply(self, lambda s, i, v: index_fill(s, dim, i, v), index, value)


def masked_scatter_(self: Any, mask: Any, source: Any) -> Any:
    """``masked_scatter`` in place."""
    return IP._apply(self, masked_scatter, mask, source)


# ---- indexed reads and writes by whole index tuples ---------------------------------------------


def take(input: Any, index: Any) -> Any:
    """The elements of the flattened ``input`` at ``index`` (negative indices count from the end)."""
    idx = index._data
    n = input._data.size
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise IndexError(
            f"out of range: tried to access index {bad.reshape(-1)[0]} on a tensor of {n} elements."
        )
    return Index.apply(input.reshape(-1), np.where(idx < 0, idx + n, idx))


def select(input: Any, dim: int, index: int) -> Any:
    """The slice at ``index`` along ``dim``, without that dim."""
    axis = wrap_dim(dim, input._data.ndim)
    size = input._data.shape[axis]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input._data.shape)} at dimension "
            f"{axis}"
        )
    return getitem(input, (slice(None),) * axis + (index,))


class IndexPutAccumulate(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, key: tuple[Any, ...], v: Any) -> Any:
        out = a.copy()
        np.add.at(out, key, v)
        ctx.meta = (key, np.shape(v))
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        key, v_shape = ctx.meta
        return g, None, unbroadcast(np.asarray(g[key]), v_shape)


def index_put(input: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:
    """A copy of ``input`` with ``values`` written at ``input[indices]`` (added with ``accumulate``)."""
    key = index_key(tuple(indices))
    if values._data.dtype != input._data.dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{torch_type_name(input._data.dtype)} for the destination and "
            f"{torch_type_name(values._data.dtype)} for the source."
        )
    if accumulate:
        return IndexPutAccumulate.apply(input, key, values)
    return IndexPut.apply(input, key, values)


def index_put_(input: Any, indices: Any, values: Any, accumulate: bool = False) -> Any:  # noqa: A002
    """``index_put`` in place."""
    return IP._apply(input, lambda s, v: index_put(s, indices, v, accumulate), values)


def select_scatter(input: Any, src: Any, dim: int, index: int) -> Any:
    """A copy of ``input`` with ``src`` written at ``index`` along ``dim``."""
    axis = wrap_dim(dim, input._data.ndim)
    return IndexPut.apply(input, (slice(None),) * axis + (index,), src)


def slice_scatter(input: Any, src: Any, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Any:
    """A copy of ``input`` with ``src`` written into the slice ``start:end:step`` along ``dim``."""
    axis = wrap_dim(dim, input._data.ndim)
    return IndexPut.apply(input, (slice(None),) * axis + (slice(start, end, step),), src)


def put(input: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    """A copy of ``input`` with ``source`` written (or added) at the flat positions ``index``."""
    n = input._data.size
    idx = index._data.reshape(-1)
    bad = idx[(idx < -n) | (idx >= n)]
    if bad.size:
        raise IndexError(f"out of range: tried to access index {bad[0]} on a tensor of {n} elements.")
    flat = reshape(input, -1)
    key = (np.where(idx < 0, idx + n, idx),)
    out = index_put(flat, (wrap(key[0]),), reshape(source, -1), accumulate)
    return reshape(out, input._data.shape)


def put_(self: Any, index: Any, source: Any, accumulate: bool = False) -> Any:
    """``put`` in place."""
    return IP._apply(self, lambda s, v: put(s, index, v, accumulate), source)
