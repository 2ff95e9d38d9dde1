"""Unary elementwise math: exp, log, tanh, sigmoid, relu, erf, ...

Functions that are floating point by nature (exp, log, sqrt, ...) turn an
integer or bool input into the default float dtype first, as torch does.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.polynomial import chebyshev

from mininn import _dtype
from mininn._functions._util import _FLOAT, category, tensor_module
from mininn._functions.conversion import cast
from mininn.autograd.function import Context, Function

_t = tensor_module()  # mininn.tensor, which imports this module


def _floating(x: Any) -> Any:
    if category(x._data.dtype) < _FLOAT:
        return cast(x, _dtype.get_default_dtype().np)
    return x


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


class Expm1(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = np.expm1(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return g * (out + 1)


class Log(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(a)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        with np.errstate(divide="ignore"):
            return g / a


class Log1p(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log1p(a)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        with np.errstate(divide="ignore"):
            return g / (a + 1)


class Sqrt(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        with np.errstate(invalid="ignore"):
            out = np.sqrt(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        with np.errstate(divide="ignore"):
            return g / (2 * out)


class Rsqrt(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            out = (1 / np.sqrt(a)).astype(a.dtype, copy=False)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return g * (-0.5 * out * out * out).astype(g.dtype, copy=False)


class Reciprocal(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        with np.errstate(divide="ignore"):
            out = np.reciprocal(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (out,) = ctx.saved_tensors
        return -g * out * out


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
        out = (0.5 * (np.tanh(0.5 * a) + 1)).astype(a.dtype, copy=False)  # no overflow
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


class Abs(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        return np.abs(a)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        return g * np.sign(a)


class Sin(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        return np.sin(a)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        return g * np.cos(a)


class Cos(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        return np.cos(a)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        return -g * np.sin(a)


class Square(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        return 2 * g * a


# erf from two Chebyshev fits made once at import from math.erf/math.erfc (about 1e-14
# relative error in float64): erf(x) = x * P(x^2) for |x| <= 2, and
# erf(x) = 1 - exp(-x^2) * Q(x) for 2 < |x| < 6, where erfc(x) * exp(x^2) is smooth;
# beyond 6, erf is +-1 in float64.
def _erf_small_nodes(u: np.ndarray) -> np.ndarray:
    x = np.sqrt(u)
    vals = np.array([math.erf(v) / v if v > 0 else 2 / math.sqrt(math.pi) for v in x])
    return vals


def _erfc_scaled_nodes(x: np.ndarray) -> np.ndarray:
    return np.array([math.erfc(v) * math.exp(v * v) for v in x])


_ERF_SMALL = chebyshev.Chebyshev.interpolate(_erf_small_nodes, 18, domain=[0, 4])
_ERFC_LARGE = chebyshev.Chebyshev.interpolate(_erfc_scaled_nodes, 20, domain=[2, 6])
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def erf_array(a: Any) -> Any:
    """erf of a float array, computed in float64 and returned in ``a``'s dtype."""
    x = np.asarray(a, dtype=np.float64)
    ax = np.abs(x)
    out = np.sign(x)  # |x| >= 6 (and nan stays nan)
    small = ax <= 2
    if small.any():
        xs = x[small]
        out[small] = xs * _ERF_SMALL(xs * xs)
    mid = (ax > 2) & (ax < 6)
    if mid.any():
        xm = ax[mid]
        out[mid] = np.sign(x[mid]) * (1 - np.exp(-xm * xm) * _ERFC_LARGE(xm))
    return out.astype(a.dtype, copy=False)


class Erf(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        ctx.save_for_backward(a)
        return erf_array(a)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        return g * (_TWO_OVER_SQRT_PI * np.exp(-a * a)).astype(g.dtype, copy=False)


# ---- public functions (also bound as Tensor methods) -------------------------------------


def exp(input: Any) -> Any:
    """e to the power of each element."""
    return Exp.apply(_floating(input))


def expm1(input: Any) -> Any:
    """``exp(x) - 1``, accurate for small ``x``."""
    return Expm1.apply(_floating(input))


def log(input: Any) -> Any:
    """Natural logarithm (``-inf`` at 0, ``nan`` below)."""
    return Log.apply(_floating(input))


def log1p(input: Any) -> Any:
    """``log(1 + x)``, accurate for small ``x``."""
    return Log1p.apply(_floating(input))


def sqrt(input: Any) -> Any:
    """Square root."""
    return Sqrt.apply(_floating(input))


def rsqrt(input: Any) -> Any:
    """``1 / sqrt(x)``."""
    return Rsqrt.apply(_floating(input))


def reciprocal(input: Any) -> Any:
    """``1 / x``."""
    return Reciprocal.apply(_floating(input))


def tanh(input: Any) -> Any:
    """Hyperbolic tangent."""
    return Tanh.apply(_floating(input))


def sigmoid(input: Any) -> Any:
    """``1 / (1 + exp(-x))``, computed without overflow."""
    return Sigmoid.apply(_floating(input))


def relu(input: Any) -> Any:
    """``max(x, 0)``; the gradient at 0 is 0, as in torch."""
    if input._data.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    return Relu.apply(input)


def abs(input: Any) -> Any:  # noqa: A001 - torch's name
    """Absolute value; the gradient at 0 is 0."""
    if input._data.dtype.kind == "b":
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
    return Abs.apply(input)


def sin(input: Any) -> Any:
    """Sine."""
    return Sin.apply(_floating(input))


def cos(input: Any) -> Any:
    """Cosine."""
    return Cos.apply(_floating(input))


def square(input: Any) -> Any:
    """``x * x``."""
    return Square.apply(input)


def erf(input: Any) -> Any:
    """The Gauss error function (vectorised; about 1e-14 relative error in float64)."""
    return Erf.apply(_floating(input))


def sign(input: Any) -> Any:
    """-1, 0 or 1 by the sign of each element (no gradient flows through)."""
    return _t.Tensor(np.sign(input._data))


def _rounding(fn: Any, name: str) -> Any:
    def op(input: Any) -> Any:
        if category(input._data.dtype) < _FLOAT:
            return input.clone()
        return _t.Tensor(fn(input._data))

    op.__name__ = name
    op.__doc__ = f"``{name}`` of each element (the gradient is zero, so none flows)."
    return op


floor = _rounding(np.floor, "floor")
ceil = _rounding(np.ceil, "ceil")
trunc = _rounding(np.trunc, "trunc")


def round(input: Any, *, decimals: int = 0) -> Any:  # noqa: A001 - torch's name
    """Round half to even, like torch."""
    if category(input._data.dtype) < _FLOAT:
        return input.clone()
    return _t.Tensor(np.round(input._data, decimals))
