"""Reductions over dimensions: sum and mean (more live in the Tensor helpers)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.function import Context, Function


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...] | None:
    """``dim`` as a tuple of non-negative axes (None means all)."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in dims:
        lo, hi = -max(ndim, 1), max(ndim, 1) - 1
        if not lo <= d <= hi:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {d})"
            )
        out.append(d % max(ndim, 1))
    return tuple(out)


def expand_reduced(g: Any, shape: tuple[int, ...], axes: tuple[int, ...] | None, keepdim: bool) -> Any:
    """Broadcastable view of a reduced gradient against the input ``shape``."""
    if axes is None:
        return np.broadcast_to(g.reshape((1,) * len(shape)), shape)
    if not keepdim:
        g = np.expand_dims(g, axes)
    return np.broadcast_to(g, shape)


class Sum(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, axes: tuple[int, ...] | None, keepdim: bool) -> Any:
        ctx.meta = (a.shape, axes, keepdim)
        return np.asarray(a.sum(axis=axes, keepdims=keepdim))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, axes, keepdim = ctx.meta
        return expand_reduced(g, shape, axes, keepdim), None, None


class Mean(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, axes: tuple[int, ...] | None, keepdim: bool) -> Any:
        ctx.meta = (a.shape, axes, keepdim)
        return np.asarray(a.mean(axis=axes, keepdims=keepdim), dtype=a.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, axes, keepdim = ctx.meta
        n = int(np.prod(shape)) if axes is None else int(np.prod([shape[i] for i in axes]))
        return expand_reduced(g / n, shape, axes, keepdim), None, None
