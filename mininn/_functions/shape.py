"""Shape ops: reshape, permute, expand and indexing (views where NumPy gives them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions._util import unbroadcast
from mininn.autograd.function import Context, Function


class Reshape(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, shape: tuple[int, ...]) -> Any:
        ctx.in_shape = a.shape
        return a.reshape(shape)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g.reshape(ctx.in_shape), None


class Permute(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...]) -> Any:
        ctx.dims = dims
        return a.transpose(dims)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g.transpose(np.argsort(ctx.dims)), None


class Expand(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, shape: tuple[int, ...]) -> Any:
        ctx.in_shape = a.shape
        return np.broadcast_to(a, shape)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return unbroadcast(g, ctx.in_shape), None


class Index(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, key: Any) -> Any:
        ctx.meta = (a.shape, a.dtype, key)
        return a[key]

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, dtype, key = ctx.meta
        out = np.zeros(shape, dtype=g.dtype)
        np.add.at(out, key, g)  # repeated advanced indices accumulate
        return out, None
