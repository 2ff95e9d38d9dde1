"""Dtype casts, device moves and copies, differentiable like torch's."""

from __future__ import annotations

from typing import Any

from mininn._backend import device, device_of, to_device
from mininn.autograd.function import Context, Function


class Cast(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, np_dtype: Any) -> Any:
        ctx.in_dtype = a.dtype
        return a.astype(np_dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g.astype(ctx.in_dtype), None


class ToDevice(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dev: device) -> Any:
        ctx.src = device_of(a)
        return to_device(a, dev)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return to_device(g, ctx.src), None


class Clone(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        return a.copy()

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g


def cast(t: Any, np_dtype: Any) -> Any:
    """``t`` converted to ``np_dtype`` (``t`` itself when it already has it)."""
    if t._data.dtype == np_dtype:
        return t
    return Cast.apply(t, np_dtype)
