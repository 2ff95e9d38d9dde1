"""Rearranging elements: ``repeat_interleave``, ``rot90``, ``fliplr``/``flipud``,
``meshgrid``, ``broadcast_tensors``/``broadcast_shapes``, ``atleast_nd``,
``tensor_split`` and the ``hstack``/``vstack``/``dstack``/``column_stack`` joins.

Built on the shape, join and indexing ops, so gradients come from theirs
(``repeat_interleave`` has its own).
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mininn._functions import join as J
from mininn._functions import shape as S
from mininn._functions._util import broadcast_error, wrap_dim
from mininn._functions.indexing import narrow
from mininn._tensor_core import Size, TensorCore
from mininn.autograd.graph import ArrayFunction, Context, wrap


class RepeatInterleave(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, repeats: Any, axis: int) -> Any:
        ctx.meta = (a.shape, np.repeat(np.arange(a.shape[axis]), repeats), axis)
        return np.repeat(a, repeats, axis=axis)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, source, axis = ctx.meta
        out = np.zeros(shape, g.dtype)
        np.add.at(out, (slice(None),) * axis + (source,), g)
        return out, None, None


def repeat_interleave(input: Any, repeats: Any = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Any:
    """Each element (or slice along ``dim``) repeated ``repeats`` times in place; the flattened input when
    ``dim`` is None. ``repeat_interleave(counts)`` gives ``0`` ``counts[0]`` times, ``1`` ...."""
    if repeats is None:  # torch.repeat_interleave(repeats)
        counts = input._data
        if counts.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if np.any(counts < 0):
            raise RuntimeError("repeats can not be negative")
        return wrap(np.repeat(np.arange(counts.size, dtype=counts.dtype), counts))
    x = input if dim is not None else S.reshape(input, -1)
    axis = 0 if dim is None else wrap_dim(dim, x._data.ndim)
    if isinstance(repeats, TensorCore):
        reps = repeats._data
        if reps.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        reps = reps.reshape(-1) if reps.size != 1 else reps.reshape(())
    else:
        reps = np.asarray(repeats)
    if np.any(reps < 0):
        raise RuntimeError("repeats can not be negative" if reps.ndim else "Repeats must be non-negative")
    size = x._data.shape[axis] if x._data.ndim else 1
    if reps.ndim == 1 and reps.size != size:
        raise RuntimeError(
            "repeats must have the same size as input along dim, but got repeats.size(0) = "
            f"{reps.size} and input.size({axis}) = {size}"
        )
    if x._data.ndim == 0:
        x = S.reshape(x, 1)
    return RepeatInterleave.apply(x, reps.astype(np.int64), axis)


def rot90(input: Any, k: int = 1, dims: Sequence[int] = (0, 1)) -> Any:
    """Rotate by 90 degrees ``k`` times in the plane ``dims`` (from the first dim towards the second)."""
    dims = list(dims)
    n = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = wrap_dim(dims[0], n), wrap_dim(dims[1], n)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return S.transpose(S.flip(input, d1), d0, d1)
    if k == 2:
        return S.flip(input, d0, d1)
    if k == 3:
        return S.flip(S.transpose(input, d0, d1), d1)
    return S.reshape(input, input._data.shape)


def fliplr(input: Any) -> Any:
    """Reverse the columns (dim 1)."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return S.flip(input, 1)


def flipud(input: Any) -> Any:
    """Reverse the rows (dim 0)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return S.flip(input, 0)


def _tensor_list(tensors: tuple[Any, ...]) -> list[Any]:
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Any, ...]:
    """Coordinate grids from 1-D tensors: ``"ij"`` (matrix, the default) or ``"xy"`` (Cartesian) indexing."""
    ts = _tensor_list(tensors)
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in ts:
        if t._data.ndim > 1:
            raise RuntimeError(
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a "
                f"{t._data.ndim}-D tensor"
            )
    ts = [S.reshape(t, -1) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t._data.shape[0] for t in ts)
    grids = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = -1
        grids.append(S.expand(S.reshape(t, view), shape))
    if swap:  # the grids of the swapped inputs, handed back in the callers' order
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def broadcast_shapes(*shapes: Any) -> Any:
    """The shape that all ``shapes`` broadcast to."""
    norm = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    result: tuple[int, ...] = ()
    for i, s in enumerate(norm):
        try:
            result = np.broadcast_shapes(result, s)
        except ValueError:
            bad = next(-j for j in range(1, min(len(s), len(result)) + 1)
                       if s[-j] != result[-j] and 1 not in (s[-j], result[-j]))
            raise RuntimeError(
                f"Attempting to broadcast a dimension of length {s[bad]} at {bad}! Mismatching argument at "
                f"index {i} had {s}; but expected shape should be broadcastable to {list(result)}"
            ) from None
    return Size(result)


def broadcast_tensors(*tensors: Any) -> tuple[Any, ...]:
    """The tensors expanded to their common broadcast shape."""
    ts = _tensor_list(tensors)
    shape: tuple[int, ...] = ()
    for t in ts:
        try:
            shape = np.broadcast_shapes(shape, t._data.shape)
        except ValueError:
            raise broadcast_error(shape, t._data.shape) from None
    return tuple(S.expand(t, shape) for t in ts)


def _atleast(n: int, tensors: tuple[Any, ...]) -> Any:
    ts = _tensor_list(tensors)
    out = []
    for t in ts:
        shape = t._data.shape
        if len(shape) < n:
            if n == 3 and len(shape) == 2:
                shape = shape + (1,)
            elif n == 3 and len(shape) == 1:
                shape = (1,) + shape + (1,)
            else:
                shape = (1,) * (n - len(shape)) + shape
        out.append(S.reshape(t, shape))
    return out[0] if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)) else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least one dim."""
    return _atleast(1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least two dims (new dims lead)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least three dims: ``(n,)`` becomes ``(1, n, 1)``, ``(m, n)`` ``(m, n, 1)``."""
    return _atleast(3, tensors)


def tensor_split(input: Any, sections: Any = None, dim: int = 0, *, indices: Any = None,
                 tensor_indices_or_sections: Any = None) -> tuple[Any, ...]:
    """``sections`` nearly equal pieces (the first ones one longer), or pieces cut at ``indices``.

    torch names the second argument by what it holds: ``sections`` (an int), ``indices`` (a
    list) or ``tensor_indices_or_sections`` (a tensor); positionally it may be any of them.
    """
    indices_or_sections = _one_of("tensor_split", sections=sections, indices=indices,
                                  tensor_indices_or_sections=tensor_indices_or_sections)
    axis = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[axis]
    if isinstance(indices_or_sections, TensorCore) and indices_or_sections._data.ndim == 0:
        indices_or_sections = int(indices_or_sections.item())
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
    else:
        cuts = [int(i) for i in indices_or_sections]
        bounds = [min(max(c if c >= 0 else c + n, 0), n) for c in cuts]
        edges = [0] + bounds + [n]
        lead = (slice(None),) * axis
        return tuple(input[lead + (slice(s, max(s, e)),)] for s, e in zip(edges[:-1], edges[1:]))
    return J.split(input, sizes, axis)


def _stack_check(tensors: Any, name: str) -> list[Any]:
    ts = list(tensors)
    if not ts:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return ts


def hstack(tensors: Sequence[Any]) -> Any:
    """Join along dim 1 (dim 0 for 1-D tensors)."""
    ts = list(_atleast(1, (_stack_check(tensors, "hstack"),)))
    return J.cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


def vstack(tensors: Sequence[Any]) -> Any:
    """Join along dim 0, after making each tensor at least 2-D."""
    return J.cat(list(_atleast(2, (_stack_check(tensors, "vstack"),))), 0)


row_stack = vstack


def dstack(tensors: Sequence[Any]) -> Any:
    """Join along dim 2, after making each tensor at least 3-D."""
    return J.cat(list(_atleast(3, (_stack_check(tensors, "dstack"),))), 2)


def column_stack(tensors: Sequence[Any]) -> Any:
    """Join along dim 1, with 0-D and 1-D tensors as columns."""
    ts = [S.reshape(t, -1, 1) if t._data.ndim <= 1 else t for t in _stack_check(tensors, "column_stack")]
    return J.cat(ts, 1)


def ravel(input: Any) -> Any:
    """The elements as a 1-D tensor."""
    return S.reshape(input, -1)


class Unfold(ArrayFunction):
    """Windows of ``size`` every ``step`` along ``axis``, as a new last dim (a strided view)."""

    @staticmethod
    def forward(ctx: Context, a: Any, axis: int, size: int, step: int) -> Any:
        windows = np.lib.stride_tricks.sliding_window_view(a, size, axis=axis)
        lead = (slice(None),) * axis
        ctx.meta = (a.shape, axis, size, step)
        return windows[lead + (slice(None, None, step),)]

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, axis, size, step = ctx.meta
        out = np.zeros(shape, g.dtype)
        moved = np.moveaxis(out, axis, -1)  # a view: windows run along the last dim
        gm = np.moveaxis(g, axis, -2)  # (..., n_windows, size)
        for k in range(size):  # a loop over window offsets, each a strided add
            stop = k + step * (gm.shape[-2] - 1) + 1
            moved[..., k:stop:step] += gm[..., k]
        return out, None, None, None


def unfold(input: Any, dimension: int, size: int, step: int) -> Any:
    """All windows of ``size`` elements every ``step`` along ``dimension``, as a new last dim."""
    n = input._data.ndim
    axis = wrap_dim(dimension, n)
    length = input._data.shape[axis] if n else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {axis} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    x = input if n else S.reshape(input, 1)
    return Unfold.apply(x, axis, size, step)


class BlockDiag(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, blocks: list[Any]) -> Any:
        rows = [b.shape[0] for b in blocks]
        cols = [b.shape[1] for b in blocks]
        out = np.zeros((sum(rows), sum(cols)), np.result_type(*blocks) if blocks else np.float32)
        r0 = np.cumsum([0] + rows)
        c0 = np.cumsum([0] + cols)
        for b, r, c in zip(blocks, r0, c0):  # one slice assignment per block
            out[r : r + b.shape[0], c : c + b.shape[1]] = b
        ctx.meta = (r0, c0, [b.shape for b in blocks], [b.dtype for b in blocks])
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        r0, c0, shapes, dtypes = ctx.meta
        return [g[r : r + s[0], c : c + s[1]].astype(d) for r, c, s, d in zip(r0, c0, shapes, dtypes)]


def block_diag(*tensors: Any) -> Any:
    """A block-diagonal matrix from 0-, 1- or 2-D tensors (a 1-D one is a row)."""
    blocks = []
    for i, t in enumerate(tensors):
        if t._data.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                f"{t._data.ndim} dimensions"
            )
        blocks.append(S.reshape(t, 1, -1) if t._data.ndim < 2 else t)
    if not blocks:
        return wrap(np.zeros((1, 0), np.float32))
    return BlockDiag.apply(blocks)


def cartesian_prod(*tensors: Any) -> Any:
    """Every combination of one element from each 1-D tensor, one per row (a 1-D tensor for one input)."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return J.stack([S.reshape(g, -1) for g in grids], 1)


def split_with_sizes(input: Any, split_sizes: Sequence[int], dim: int = 0) -> tuple[Any, ...]:
    """Pieces of the given sizes along ``dim``."""
    return J.split(input, list(split_sizes), dim)


def _directional_split(input: Any, sections: Any, axis: int, name: str) -> tuple[Any, ...]:
    if isinstance(sections, int):
        size = input._data.shape[axis]
        if sections == 0 or size % sections:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {axis}, but the size of the dimension "
                f"{size} is not divisible by the split_size {sections}!"
            )
    return tensor_split(input, sections, axis)


def _one_of(fn: str, **given: Any) -> Any:
    """The one argument of ``given`` that is not None (torch's overloads name it by its kind)."""
    named = [k for k, v in given.items() if v is not None]
    if len(named) != 1:
        choices = ", ".join(given)
        raise TypeError(f"{fn}() takes exactly one of {choices}; got {', '.join(named) or 'none'}")
    return given[named[0]]


def _sections(fn: str, args: tuple[Any, ...], sections: Any, indices: Any) -> Any:
    """``hsplit(x, 2)``, ``hsplit(x, [1, 3])``, ``x.hsplit(1, 3)``, ``hsplit(x, sections=2)`` or
    ``hsplit(x, indices=[1, 3])``."""
    positional = None if not args else args[0] if len(args) == 1 else list(args)
    if positional is not None and (sections is not None or indices is not None):
        raise TypeError(f"{fn}() got multiple values for its sections or indices")
    return positional if positional is not None else _one_of(fn, sections=sections, indices=indices)


def hsplit(input: Any, *args: Any, sections: Any = None, indices: Any = None) -> tuple[Any, ...]:
    """``tensor_split`` along dim 1 (dim 0 for 1-D tensors); an int must divide the size."""
    return _directional_split(input, _sections("hsplit", args, sections, indices),
                              0 if input._data.ndim == 1 else 1, "hsplit")


def vsplit(input: Any, *args: Any, sections: Any = None, indices: Any = None) -> tuple[Any, ...]:
    """``tensor_split`` along dim 0; an int must divide the size."""
    return _directional_split(input, _sections("vsplit", args, sections, indices), 0, "vsplit")


def dsplit(input: Any, *args: Any, sections: Any = None, indices: Any = None) -> tuple[Any, ...]:
    """``tensor_split`` along dim 2; an int must divide the size."""
    return _directional_split(input, _sections("dsplit", args, sections, indices), 2, "dsplit")


def narrow_copy(input: Any, dim: int, start: int, length: int) -> Any:
    """A copy of ``narrow(input, dim, start, length)``."""
    return narrow(input, dim, start, length).clone()


def combinations(input: Any, r: int = 2, with_replacement: bool = False) -> Any:
    """Every length-``r`` combination of the elements of a 1-D tensor, one per row, in lexicographic order."""
    if input._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input._data.shape)}")
    n = input._data.shape[0]
    if r == 0 or n == 0:
        return S.reshape(input[:0], 0) if r == 0 else S.reshape(input[:0], 0, r)
    # all index r-tuples in lexicographic (C) order, kept where they increase (or never decrease)
    tuples = np.indices((n,) * r).reshape(r, -1).T
    steps = np.diff(tuples, axis=1)
    keep = np.all(steps >= 0, axis=1) if with_replacement else np.all(steps > 0, axis=1)
    index = tuples[keep].astype(np.int64)
    return S.reshape(input[wrap(index.reshape(-1))], -1, r)


class AsStrided(ArrayFunction):
    """A view picking elements of the flattened input by ``size``, ``stride`` and ``storage_offset``."""

    @staticmethod
    def forward(ctx: Context, a: Any, index: Any) -> Any:
        ctx.meta = (a.shape, index)
        return a.reshape(-1)[index]

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, index = ctx.meta
        out = np.zeros(int(np.prod(shape)), g.dtype)
        np.add.at(out, index, g)  # overlapping windows accumulate
        return out.reshape(shape), None


def as_strided(input: Any, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Any:
    """Elements of the (contiguous) ``input`` at ``storage_offset + sum(i_k * stride[k])`` for each index of
    ``size``."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    offsets = np.full(size, storage_offset or 0, np.int64)
    for axis, (n, step) in enumerate(zip(size, stride)):  # one broadcast add per dim
        view = [1] * len(size)
        view[axis] = n
        offsets = offsets + (np.arange(n) * step).reshape(view)
    numel = input._data.size
    if offsets.size and (offsets.max() >= numel or offsets.min() < 0):
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {storage_offset}, and "
            f"itemsize {input._data.itemsize} requiring a storage size of "
            f"{(int(offsets.max()) + 1) * input._data.itemsize} are out of bounds for storage of size "
            f"{numel * input._data.itemsize}"
        )
    return AsStrided.apply(input, offsets)


unsafe_chunk = J.chunk
def unsafe_split(input: Any, split_size: Any, dim: int = 0) -> tuple[Any, ...]:
    """``split`` (mininn has no views to make unsafe)."""
    return J.split(input, split_size, dim)


def unsafe_split_with_sizes(input: Any, split_sizes: Sequence[int], dim: int = 0) -> tuple[Any, ...]:
    """``split_with_sizes`` (mininn's splits are always safe)."""
    return J.split(input, list(split_sizes), dim)
