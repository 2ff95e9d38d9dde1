"""Joining and splitting: cat, stack, split, chunk, unbind."""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mininn._functions._util import promote_arrays, wrap_dim
from mininn._functions.conversion import cast
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import ArrayFunction, Context, view_op


class Cat(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, arrays: list[Any], axis: int) -> Any:
        ctx.meta = (axis, [a.shape[axis] for a in arrays])
        return np.concatenate(arrays, axis=axis)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        axis, sizes = ctx.meta
        return np.split(g, np.cumsum(sizes)[:-1], axis=axis), None


class Stack(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, arrays: list[Any], axis: int) -> Any:
        ctx.meta = (axis, len(arrays))
        return np.stack(arrays, axis=axis)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        axis, n = ctx.meta
        return [np.take(g, i, axis=axis) for i in range(n)], None


@view_op
class Split(ArrayFunction):
    """Views of consecutive pieces along ``axis`` (one output per piece)."""

    @staticmethod
    def forward(ctx: Context, a: Any, sizes: tuple[int, ...], axis: int) -> Any:
        ctx.axis = axis
        bounds = np.cumsum((0,) + sizes)
        lead = (slice(None),) * axis
        return tuple(a[lead + (slice(int(s), int(e)),)] for s, e in zip(bounds[:-1], bounds[1:]))

    @staticmethod
    def backward(ctx: Context, *grads: Any) -> Any:
        return np.concatenate(grads, axis=ctx.axis), None, None


@view_op
class Unbind(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axis: int) -> Any:
        ctx.axis = axis
        lead = (slice(None),) * axis
        return tuple(a[lead + (i,)] for i in range(a.shape[axis]))

    @staticmethod
    def backward(ctx: Context, *grads: Any) -> Any:
        return np.stack(grads, axis=ctx.axis), None


def _promoted(tensors: Sequence[Any]) -> list[Any]:
    dt = tensors[0]._data.dtype
    if all(t._data.dtype == dt for t in tensors):
        return list(tensors)
    result = tensors[0]._data
    for t in tensors[1:]:
        result = np.empty((1,), promote_arrays(result, t._data, True, True))
    return [cast(t, result.dtype) for t in tensors]


def cat(tensors: Sequence[Any], dim: int = 0) -> Any:
    """Join tensors along an existing dim (dtypes promote, as in torch)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, TensorCore):
            raise TypeError(
                f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}"
            )
    # torch skips legacy 1-D empty tensors when the others have more dims
    kept = [(i, t) for i, t in enumerate(tensors) if t._data.shape != (0,)] or [(0, tensors[0])]
    ref = kept[0][1]._data
    axis = wrap_dim(dim, ref.ndim)
    for number, t in kept:
        shape = t._data.shape
        if len(shape) != ref.ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ref.ndim} and {len(shape)}"
            )
        for d in range(ref.ndim):
            if d != axis and shape[d] != ref.shape[d]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {axis}. Expected size "
                    f"{ref.shape[d]} but got size {shape[d]} for tensor number {number} "
                    "in the list."
                )
    return Cat.apply(_promoted([t for _, t in kept]), axis)


concat = cat
concatenate = cat


def stack(tensors: Sequence[Any], dim: int = 0) -> Any:
    """Join equally shaped tensors along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    ref = tensors[0]._data.shape
    for i, t in enumerate(tensors[1:], start=1):
        if t._data.shape != ref:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 and "
                f"{list(t._data.shape)} at entry {i}"
            )
    axis = wrap_dim(dim, len(ref) + 1)
    return Stack.apply(_promoted(tensors), axis)


def split(tensor: Any, split_size_or_sections: Any, dim: int = 0) -> tuple[Any, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes."""
    axis = wrap_dim(dim, tensor._data.ndim)
    n = tensor._data.shape[axis]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0 or (size == 0 and n != 0):
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )
        sizes = (n,) if size == 0 else tuple(min(size, n - s) for s in range(0, n, size))
        sizes = sizes or (0,)
    else:
        sizes = tuple(int(s) for s in split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                f"at dimension {axis}), but got split_sizes={list(sizes)}"
            )
    out = Split.apply(tensor, sizes, axis)
    return out if isinstance(out, tuple) else (out,)


def chunk(input: Any, chunks: int, dim: int = 0) -> tuple[Any, ...]:
    """At most ``chunks`` pieces of equal size (the last may be smaller)."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: %d" % chunks)
    axis = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[axis]
    size = max(-(-n // chunks), 1) if n else 0
    return split(input, size, axis) if n else split(input, [0] * 1, axis)


def unbind(input: Any, dim: int = 0) -> tuple[Any, ...]:
    """The slices along ``dim``, without that dim."""
    axis = wrap_dim(dim, input._data.ndim)
    if input._data.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    out = Unbind.apply(input, axis)
    return out if isinstance(out, tuple) else (out,)
