"""Elementwise ops with broadcasting: arithmetic and unary math."""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions._util import unbroadcast
from mininn.autograd.function import Context, Function


def _shape(x: Any) -> tuple[int, ...]:
    return x.shape if hasattr(x, "shape") else ()


class Add(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.shapes = (_shape(a), _shape(b))
        return a + b

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        sa, sb = ctx.shapes
        return unbroadcast(g, sa), unbroadcast(g, sb)


class Sub(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.shapes = (_shape(a), _shape(b))
        return a - b

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        sa, sb = ctx.shapes
        return unbroadcast(g, sa), unbroadcast(-g, sb)


class Mul(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        return unbroadcast(g * b, _shape(a)), unbroadcast(g * a, _shape(b))


class Div(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        ga = unbroadcast(g / b, _shape(a))
        gb = unbroadcast(-g * a / (b * b), _shape(b))
        return ga, gb


class Neg(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        return -a

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return -g


class Pow(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        out = a**b
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b, out = ctx.saved_tensors
        ga = unbroadcast(g * b * a ** (b - 1), _shape(a))
        gb = None
        if hasattr(b, "shape"):
            with np.errstate(divide="ignore", invalid="ignore"):
                logs = np.where(a > 0, np.log(np.where(a > 0, a, 1)), 0)
            gb = unbroadcast(g * out * logs, _shape(b))
        return ga, gb


class Exp(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = np.exp(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return g * out


class Log(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        return np.log(a)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        return g / a


class Tanh(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = np.tanh(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return g * (1 - out * out)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = 0.5 * (np.tanh(0.5 * a) + 1)  # stable for large |a|
        out = out.astype(a.dtype, copy=False)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return g * out * (1 - out)


class Relu(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = np.maximum(a, 0)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return g * (out > 0)
