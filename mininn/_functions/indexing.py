"""Indexing: ``t[key]`` (basic and advanced, with gradients), ``t[key] = v``,
gather, index_select, masked_select, narrow and nonzero.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from mininn._functions._util import broadcast_error, unbroadcast, wrap_dim
from mininn._functions.conversion import cast
from mininn._functions.inplace_view import VIEW_LEAF_MESSAGE, check_view, rebase
from mininn._functions.shape import expand
from mininn._tensor_core import TensorCore
from mininn.autograd.grad_mode import _state
from mininn.autograd.graph import ArrayFunction, Context, view_op, wrap


def index_key(key: Any) -> Any:
    """``key`` with Tensors and lists turned into arrays, as NumPy indexes."""
    if isinstance(key, TensorCore):
        return _check_index_array(key._data)
    if isinstance(key, tuple):
        return tuple(index_key(k) if isinstance(k, (TensorCore, list)) else k for k in key)
    if isinstance(key, list):
        if any(isinstance(k, (TensorCore, slice, type(None), type(Ellipsis))) for k in key):
            return index_key(tuple(key))
        return _check_index_array(np.asarray(key, dtype=np.int64 if not key else None))
    return key


def _check_index_array(arr: Any) -> Any:
    if arr.dtype.kind not in "biu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return arr


def _is_advanced(key: Any) -> bool:
    if isinstance(key, tuple):
        return any(isinstance(k, np.ndarray) for k in key)
    return isinstance(key, np.ndarray)


_MASK_MISMATCH = re.compile(
    r"boolean index did not match indexed array along (?:axis|dimension) (\d+); size of "
    r"(?:axis|dimension) is (\d+) but size of corresponding boolean (?:axis|dimension) is (\d+)"
)


def _torch_index_error(err: IndexError) -> IndexError:
    msg = str(err)
    m = _MASK_MISMATCH.search(msg)
    if m:
        axis, size, mask = m.groups()
        return IndexError(
            f"The shape of the mask [{mask}] at index {axis} does not match the shape of the "
            f"indexed tensor [{size}] at index {axis}"
        )
    if "out of bounds for axis" in msg:
        return IndexError(msg.replace("for axis", "for dimension"))
    if msg.startswith("too many indices for array"):
        dims = msg.split("array is ")[1].split("-dimensional")[0]
        return IndexError(f"too many indices for tensor of dimension {dims}")
    return err


def _get(a: Any, key: Any) -> Any:
    try:
        return a[key]
    except IndexError as err:
        raise _torch_index_error(err) from None


def _coords(index: Any, axis: int) -> tuple[Any, ...]:
    """Full coordinates of each index element: its own position, with ``index`` along ``axis``."""
    coords = list(np.indices(index.shape, sparse=True))
    coords[axis] = index
    return tuple(coords)


class _Gathering(ArrayFunction):
    """Elements of ``a`` picked by the other arguments: ``take(a, *args)`` picks them and
    ``places(*args)`` is where each pick sits in ``a``; the backward puts ``g`` back there."""

    @staticmethod
    def take(a: Any, *args: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def places(*args: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx: Context, a: Any, *args: Any) -> Any:
        ctx.meta = (a.shape, args)
        return cls.take(a, *args)

    @classmethod
    def backward(cls, ctx: Context, g: Any) -> Any:
        shape, args = ctx.meta
        out = np.zeros(shape, dtype=g.dtype)
        places = cls.places(*args)
        if _is_advanced(places):
            np.add.at(out, places, g)  # repeated places accumulate
        else:
            out[places] = g
        return (out, *(None,) * len(args))


def _gathering(name: str, take: Callable[..., Any], places: Callable[..., Any]) -> type[ArrayFunction]:
    """The op ``name``: ``take(a, *args)`` picks from ``a``, ``places(*args)`` says where from."""
    attrs = {"take": staticmethod(take), "places": staticmethod(places)}
    return type(name, (_Gathering,), {"__module__": __name__, **attrs})


def _gather(a: Any, axis: int, index: Any) -> Any:
    window = tuple(slice(0, n) if i != axis else slice(None) for i, n in enumerate(index.shape))
    return np.take_along_axis(a[window], index, axis=axis)


Index = _gathering("Index", _get, lambda key: key)
Gather = _gathering("Gather", _gather, lambda axis, index: _coords(index, axis))
view_op(Index)  # a basic key gives a view of ``a`` (an advanced one a copy)
IndexSelect = _gathering(
    "IndexSelect", lambda a, axis, index: np.take(a, index, axis=axis),
    lambda axis, index: (slice(None),) * axis + (index,),
)


class IndexPut(ArrayFunction):
    """``a[key] = v`` out of place: the gradient of the overwritten part goes to ``v``."""

    @staticmethod
    def forward(ctx: Context, a: Any, key: Any, v: Any) -> Any:
        out = a.copy()
        try:
            out[key] = v
        except IndexError as err:
            raise _torch_index_error(err) from None
        ctx.meta = (key, getattr(v, "shape", None))
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        key, v_shape = ctx.meta
        ga = g.copy()
        ga[key] = 0
        gv = None if v_shape is None else unbroadcast(np.asarray(g[key]), v_shape)
        return ga, None, gv


# ---- public functions (also bound as Tensor methods) -------------------------------------


def getitem(input: Any, key: Any) -> Any:
    """``input[key]``: ints, slices, None, Ellipsis, bool masks and integer index tensors."""
    return Index.apply(input, _view_key(index_key(key)))


def _view_key(key: Any) -> Any:
    """A basic key with a trailing Ellipsis, so that NumPy returns a 0-d view, not a scalar copy."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(isinstance(k, np.ndarray) or k is Ellipsis for k in key):
        return key
    return key + (Ellipsis,)


def setitem(input: Any, key: Any, value: Any) -> None:
    """``input[key] = value``; recorded by autograd unless ``input`` is a leaf that needs grad."""
    key = index_key(key)
    v = value if isinstance(value, TensorCore) else None
    tracked = _state.enabled and (
        input.requires_grad
        or (v is not None and v.requires_grad)
        or (input._view is not None and input._view[0].requires_grad)
    )
    if not tracked:
        raw = v._data if v is not None else value
        try:
            input._data[key] = raw
        except IndexError as err:
            raise _torch_index_error(err) from None
        return
    if input.grad_fn is None and input._requires_grad:
        raise RuntimeError(VIEW_LEAF_MESSAGE)
    if input._view is not None:
        check_view(input)
    if v is not None and v._data.dtype != input._data.dtype:
        v = cast(v, input._data.dtype)
    rebase(input, IndexPut.apply(input, key, v if v is not None else value))


def gather(input: Any, dim: int, index: Any, *, sparse_grad: bool = False) -> Any:
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and likewise for other dims).

    ``sparse_grad`` only makes torch's gradient a sparse tensor; mininn's is the same values, dense.
    """
    axis = wrap_dim(dim, input._data.ndim)
    idx = index._data
    if idx.dtype not in (np.int32, np.int64):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if idx.ndim != input._data.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if input._data.ndim == 0:
        return Index.apply(input, ())
    try:
        return Gather.apply(input, axis, idx)
    except IndexError as err:
        raise RuntimeError(str(_torch_index_error(err))) from None


def index_select(input: Any, dim: int, index: Any) -> Any:
    """The entries of ``input`` along ``dim`` at positions ``index`` (1-D)."""
    axis = wrap_dim(dim, input._data.ndim)
    idx = index._data if isinstance(index, TensorCore) else np.asarray(index)
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if idx.dtype not in (np.int32, np.int64):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    idx = idx.reshape(-1)
    if idx.size and (idx.min() < -input._data.shape[axis] or idx.max() >= input._data.shape[axis]):
        raise IndexError("index out of range in self")
    return IndexSelect.apply(input, axis, idx)


def masked_select(input: Any, mask: Any) -> Any:
    """The elements where ``mask`` is True, as a 1-D tensor (mask broadcasts)."""
    if mask._data.dtype.kind != "b":
        raise RuntimeError(
            "masked_select: expected BoolTensor for mask"
        )
    try:
        shape = np.broadcast_shapes(input._data.shape, mask._data.shape)
    except ValueError:
        raise broadcast_error(mask._data.shape, input._data.shape) from None

    x = input if input._data.shape == shape else expand(input, shape)
    return Index.apply(x, np.broadcast_to(mask._data, shape))


def narrow(input: Any, dim: int, start: int, length: int) -> Any:
    """``length`` entries of ``dim`` from ``start``, sharing memory."""
    axis = wrap_dim(dim, input._data.ndim)
    size = input._data.shape[axis]
    if start < 0:
        start += size
    if not 0 <= start <= size or start + length > size or length < 0:
        raise RuntimeError(
            f"start ({start}) + length ({length}) exceeds dimension size ({size})."
        )
    key = (slice(None),) * axis + (slice(start, start + length),)
    return Index.apply(input, key)


def nonzero(input: Any, *, as_tuple: bool = False) -> Any:
    """Indices of the non-zero elements: an ``(n, ndim)`` int64 tensor, or one tensor per dim."""
    a = input._data
    if as_tuple:
        if a.ndim == 0:
            return (wrap(np.nonzero(a.reshape(1))[0].astype(np.int64)),)
        return tuple(wrap(i.astype(np.int64)) for i in np.nonzero(a))
    return wrap(np.argwhere(a).astype(np.int64))
