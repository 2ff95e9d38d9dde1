"""Adaptive pooling: ``adaptive_avg_pool1d/2d/3d`` and ``adaptive_max_pool1d/2d/3d`` (+ ``_with_indices``).

Output bin ``i`` of an axis of length ``size`` pooled to ``out`` covers
``[floor(i * size / out), ceil((i + 1) * size / out))``, so bins may overlap.
The average is separable: one small matrix product per spatial axis. The
max gathers every bin of every axis at once (bins are padded to the longest
by repeating their last element, which never changes a maximum nor wins a
tie), takes the first maximum of each and returns it with its flat index.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import check_float, xp_of
from mininn.nn.functional.pooling import ValuesAt, window_argmax
from mininn.tensor import Tensor

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
]

Dims = tuple[int, ...]


def _bins(size: int, out: int) -> tuple[Any, Any]:
    """Start and end of each of the ``out`` bins over ``size`` elements."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _adaptive_matrix(xp: Any, size: int, out: int, dtype: Any) -> Any:
    """``(out, size)``: row ``i`` averages bin ``i``."""
    start, end = _bins(size, out)
    cols = np.arange(size)
    inside = (cols[None, :] >= start[:, None]) & (cols[None, :] < end[:, None])
    mat = inside / np.maximum(end - start, 1)[:, None]
    return xp.asarray(mat.astype(dtype))


def _along(x: Any, axis: int, mat: Any) -> Any:
    """Contract ``x``'s ``axis`` with ``mat (out, size)``: that axis becomes ``out`` long."""
    shape = x.shape
    if axis == x.ndim - 1:
        return (x.reshape(-1, shape[-1]) @ mat.T).reshape(shape[:-1] + (mat.shape[0],))
    pre, post = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    out = mat @ x.reshape(pre, shape[axis], post)  # (pre, out, post)
    return out.reshape(shape[:axis] + (mat.shape[0],) + shape[axis + 1 :])


class _AdaptiveAvgPool(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, out_sz: Dims) -> Any:
        xp = xp_of(x)
        mats = [_adaptive_matrix(xp, x.shape[2 + a], o, x.dtype) for a, o in enumerate(out_sz)]
        ctx.meta = mats
        for axis in reversed(range(len(mats))):  # the last axis first: it shrinks the most data
            x = _along(x, 2 + axis, mats[axis])
        return x

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        for axis, mat in enumerate(ctx.meta):
            g = _along(g, 2 + axis, mat.T)
        return g, None


def _adaptive_size(output_size: Any, n: int, in_sizes: Dims, fn: str, check_negative: bool = True) -> Dims:
    if isinstance(output_size, int) or output_size is None:
        sizes: tuple[Any, ...] = (output_size,) * n
    else:
        sizes = tuple(output_size)
        if len(sizes) != n:
            raise RuntimeError(f"{fn}: output_size must be {n}")
    sizes = tuple(s if s is not None else d for s, d in zip(sizes, in_sizes))
    if check_negative and any(s < 0 for s in sizes):
        shown = ", ".join(map(str, sizes)) if n < 3 else f"{sizes[0]}, {sizes[1]},{sizes[2]}"
        raise RuntimeError(
            f"{fn}: elements of output_size must be greater than or equal to 0 but received {{{shown}}}"
        )
    return sizes


def _check_rank(input: Tensor, nd: int, fn: str, sep: str = " ") -> None:
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fn}(): Expected {nd + 1}D or {nd + 2}D tensor, but got{sep}{list(input.shape)}")


def _check_not_empty(input: Tensor, fn: str) -> None:
    for dim in range(1, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(
                f"{fn}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                f"sizes {list(input.shape)} with dimension {dim} being empty"
            )


def _check_1d_input(input: Tensor, fn: str) -> None:
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 'self' "
            f"(while checking arguments for {fn})"
        )


def _one_size(fn: str, output_size: Any) -> Any:
    if isinstance(output_size, int) or output_size is None:
        return output_size
    if len(output_size) != 1:
        raise RuntimeError(f"{fn}() argument 'output_size' should contain one int (got {len(output_size)})")
    return output_size[0]


def _batched(input: Tensor, nd: int) -> tuple[Tensor, bool]:
    unbatched = input.ndim == nd + 1
    return (input.unsqueeze(0) if unbatched else input), unbatched


# ---- average ------------------------------------------------------------------------------------


def _adaptive_avg(input: Tensor, output_size: Any, nd: int, fn: str) -> Tensor:
    out_sz = _adaptive_size(output_size, nd, tuple(input.shape[-nd:]), fn)
    x, unbatched = _batched(input, nd)
    out = _AdaptiveAvgPool.apply(x, out_sz)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average ``(N, C, L)`` (or ``(C, L)``) into ``output_size`` bins."""
    _check_1d_input(input, "adaptive_avg_pool1d")
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average ``(N, C, H, W)`` into an ``output_size`` grid of (possibly overlapping) bins.

    ``output_size`` is an int or a pair; ``None`` keeps that input size.
    """
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    check_float(input, "adaptive_avg_pool2d")
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average ``(N, C, D, H, W)`` into an ``output_size`` grid; ``None`` keeps that input size."""
    _check_rank(input, 3, "adaptive_avg_pool3d")
    _check_not_empty(input, "adaptive_avg_pool3d")
    check_float(input, "adaptive_avg_pool3d_cpu")
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


# ---- max ----------------------------------------------------------------------------------------


def _bin_positions(size: int, out: int) -> Any:
    """``(1, 1, out, taps)`` input indices of each bin, short bins padded with their last element."""
    start, end = _bins(size, out)
    taps = int((end - start).max()) if out else 1
    pos = np.minimum(start[:, None] + np.arange(taps), np.maximum(end, 1)[:, None] - 1)
    return pos[None, None]


def _adaptive_max(input: Tensor, output_size: Any, nd: int, fn: str, return_indices: bool) -> Any:
    check_float(input, fn)
    sizes = _adaptive_size(output_size, nd, tuple(input.shape[-nd:]), fn, check_negative=False)
    x, unbatched = _batched(input, nd)
    if any(s < 0 for s in sizes):
        shape = list(x.shape[:2]) + list(sizes)
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {shape}")
    xp = xp_of(x._data)
    positions = [xp.asarray(_bin_positions(size, out)) for size, out in zip(x.shape[2:], sizes)]
    idx = window_argmax(x._data, positions)
    out = ValuesAt.apply(x, idx)
    indices = Tensor(idx)
    if unbatched:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return (out, indices) if return_indices else out


def _adaptive_max_nd(input: Tensor, output_size: Any, nd: int, return_indices: bool) -> Any:
    fn = f"adaptive_max_pool{nd}d"
    _check_rank(input, nd, fn, sep=": ")
    _check_not_empty(input, fn)
    if isinstance(output_size, (tuple, list)) and len(output_size) != nd:
        raise RuntimeError(f"{fn}(): internal error: output_size.size() must be {nd}")
    return _adaptive_max(input, output_size, nd, fn, return_indices)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max of ``(N, C, L)`` (or ``(C, L)``) over ``output_size`` bins; optionally with flat indices."""
    _check_1d_input(input, "adaptive_max_pool1d")
    size = _one_size("adaptive_max_pool1d", output_size)
    _check_not_empty(input, "adaptive_max_pool1d")
    res = _adaptive_max(input.unsqueeze(-2), (1, size), 2, "adaptive_max_pool2d", return_indices)
    if return_indices:
        return res[0].squeeze(-2), res[1].squeeze(-2)
    return res.squeeze(-2)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max of ``(N, C, H, W)`` over an ``output_size`` grid of bins; ``None`` keeps that input size."""
    return _adaptive_max_nd(input, output_size, 2, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max of ``(N, C, D, H, W)`` over an ``output_size`` grid of bins; ``None`` keeps that input size."""
    return _adaptive_max_nd(input, output_size, 3, return_indices)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool1d`` that always returns ``(output, indices)``."""
    return adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool2d`` that always returns ``(output, indices)``."""
    return adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``adaptive_max_pool3d`` that always returns ``(output, indices)``."""
    return adaptive_max_pool3d(input, output_size, return_indices=True)
