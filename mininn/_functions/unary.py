"""Unary elementwise math: exp, log, tanh, sigmoid, relu, erf, ...

Functions that are floating point by nature (exp, log, sqrt, ...) turn an
integer or bool input into the default float dtype first, as torch does.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._functions._bases import _one_input
from mininn._functions._util import _FLOAT, category
from mininn._functions.conversion import cast
from mininn.autograd.graph import ArrayFunction, Context


def _floating(x: Any) -> Any:
    if category(x._data.dtype) < _FLOAT:
        return cast(x, _dtype.get_default_dtype().np)
    return x


def _rsqrt(a: Any) -> Any:
    return (1 / np.sqrt(a)).astype(a.dtype, copy=False)


def _sigmoid(a: Any) -> Any:
    return (0.5 * (np.tanh(0.5 * a) + 1)).astype(a.dtype, copy=False)  # no overflow


# each op and its derivative, from its output (out) or its input (a)
Exp = _one_input("Exp", np.exp, lambda g, out: g * (np.conj(out) if out.dtype.kind == "c" else out))
Expm1 = _one_input("Expm1", np.expm1, lambda g, out: g * (out + 1))
Log = _one_input("Log", np.log, lambda g, a: g / a, saves_output=False, quiet=True)
Log1p = _one_input("Log1p", np.log1p, lambda g, a: g / (a + 1), saves_output=False, quiet=True)
Sqrt = _one_input("Sqrt", np.sqrt, lambda g, out: g / (2 * out), quiet=True)
Rsqrt = _one_input(
    "Rsqrt", _rsqrt, lambda g, out: g * (-0.5 * out * out * out).astype(g.dtype, copy=False), quiet=True
)
Reciprocal = _one_input("Reciprocal", np.reciprocal, lambda g, out: -g * out * out, quiet=True)
Tanh = _one_input("Tanh", np.tanh, lambda g, out: g * (1 - out * out))
Sigmoid = _one_input("Sigmoid", _sigmoid, lambda g, out: g * out * (1 - out))
Relu = _one_input("Relu", lambda a: np.maximum(a, 0), lambda g, out: g * (out > 0))
Abs = _one_input("Abs", np.abs, lambda g, a: g * np.sign(a), saves_output=False)
Sin = _one_input("Sin", np.sin, lambda g, a: g * np.cos(a), saves_output=False)
Cos = _one_input("Cos", np.cos, lambda g, a: -g * np.sin(a), saves_output=False)
Square = _one_input("Square", lambda a: a * a, lambda g, a: 2 * g * a, saves_output=False)


# ---- the Gauss error function family: erf, the normal CDF and x * Phi(x) (GELU) ----------------
#
# Fits made with NumPy's least-squares ``polyfit`` at Chebyshev nodes against 40-digit mpmath
# values; erf takes two per precision:
#
# * ``|x| < 1``: ``erf(x) = x * P(x**2)``;
# * ``|x| >= 1``: ``erf(|x|) = 1 - exp(-x**2) * Q(1 / (1 + |x|/2))`` (``exp(x**2) * erfc(x)`` is
#   smooth in ``1 / (1 + |x|/2)``).
#
# Worst relative error against mpmath on [-7, 7] and [1e-30, 1]: 1.8e-15 in float64, 1.9e-7 in
# float32 (float32 rounding dominates). The float32 normal CDF takes one branch instead, fitted
# the same way over ``|x| / sqrt(2)`` in [0, 9]: ``Phi(-|x|) = exp(-x**2 / 2) * R(t) / 2`` with
# ``t = 1 / (1 + |x| / (2 sqrt(2)))``, half the work; its absolute error is below 2.5e-7
# everywhere and its relative error below 5e-6 in the lower tail (where ``(1 + erf) / 2`` would
# cancel). float16 and bfloat16 go through float32.
#
# Each kernel runs block by block over the flattened input, with in-place ufuncs on a few
# scratch arrays small enough to stay in cache: its 25 to 60 elementwise steps then cost about
# what a couple of passes over memory do (3x faster than whole-array temporaries).

_ERF_SMALL64 = (
    1.128379167095514, -0.37612638903183065, 0.11283791670922999, -0.02686617063942439,
    0.005223977573957022, -0.0008548324308577784, 0.00012055242995889513, -1.492370394109472e-05,
    1.643427615013054e-06, -1.6104938275912867e-07, 1.3260714949490576e-08, -6.918373949512469e-10,
)
_ERF_LARGE64 = (
    -1.3750495583212218e-07, 0.28209923028047745, 0.2820302379828762, 0.24738837316877443,
    0.17320113840215678, 0.09535341500741923, -0.032242937310040784, -0.022146640496021216,
    -0.041189759332541924, -0.11989199412894672, 0.1687966276473687, 0.24620669987072374,
    -0.6541011758593958, 0.5761736456022144, -0.24378465361872845, 0.0421092570394883,
)
_ERF_SMALL32 = (
    1.1283791273927473, -0.37612349784541343, 0.11280364408031913, -0.026716385096610725,
    0.0049232776651801004, -0.0005654105859585546,
)
_ERF_LARGE32 = (
    -8.95903581096565e-05, 0.28391093922004107, 0.2662615958043816, 0.32412769350117987,
    -0.05308091859755979, 0.4993387795194062, -0.42679432730510913, 0.10628082456270362,
)
# R / 2 (halving every coefficient is exact, so this is bit for bit R(t) / 2)
_HALF_CDF32 = tuple(c / 2 for c in (
    -2.8776967684104613e-06, 0.282455026689225, 0.2761953031412264, 0.2884534182882324,
    0.01977473445386444, 0.41467083613282135, -0.374958243838661, 0.09341201936311803,
))
_SQRT1_2 = math.sqrt(0.5)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_BLOCK_BYTES = 256 << 10  # per scratch array: five of them fit in a 2 MiB L2 cache


def _horner(coefs: tuple[float, ...], z: Any, out: Any) -> None:
    """``out = sum(coefs[i] * z**i)``, in place, in ``z``'s dtype."""
    t = z.dtype.type
    np.multiply(z, t(coefs[-1]), out=out)
    out += t(coefs[-2])
    for c in coefs[-3::-1]:
        out *= z
        out += t(c)


def _blockwise(kernel: Any, x: Any, n_scratch: int) -> Any:
    """A new array shaped like ``x``: ``kernel(x_block, out_block, scratch)`` over cache-sized blocks."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    block = _BLOCK_BYTES // flat.itemsize if isinstance(flat, np.ndarray) else flat.size
    block = max(1, min(block, flat.size))
    scratch = [np.empty_like(flat, shape=(block,)) for _ in range(n_scratch)]
    with np.errstate(over="ignore", invalid="ignore"):  # infinite inputs: the unused branch
        for start in range(0, flat.size, block):
            stop = min(start + block, flat.size)
            kernel(flat[start:stop], out[start:stop], [s[: stop - start] for s in scratch])
    return out.reshape(np.shape(x))


def _erf_block(x: Any, out: Any, scratch: list[Any]) -> None:
    t2, u, v = scratch
    one = x.dtype.type(1)
    small, large = (_ERF_SMALL64, _ERF_LARGE64) if x.dtype == np.float64 else (_ERF_SMALL32, _ERF_LARGE32)
    np.multiply(x, x, out=t2)
    np.abs(x, out=u)
    np.minimum(u, x.dtype.type(10), out=u)
    u *= x.dtype.type(0.5)
    u += one
    np.reciprocal(u, out=u)  # 1 / (1 + |x|/2)
    _horner(large, u, out)
    np.negative(t2, out=v)
    np.exp(v, out=v)
    out *= v
    np.subtract(one, out, out=out)
    np.copysign(out, x, out=out)  # |x| >= 1
    _horner(small, t2, v)
    v *= x
    np.copyto(out, v, where=t2 < one)  # |x| < 1


def _lower_tail32(x: Any, out: Any, a: Any, u: Any) -> None:
    """``out = Phi(-|x|)`` by the float32 fit, leaving ``|x|`` in ``a``; ``u`` is scratch."""
    t = x.dtype.type
    np.abs(x, out=a)
    np.multiply(a, t(0.5 * _SQRT1_2), out=u)
    u += t(1)
    np.reciprocal(u, out=u)
    _horner(_HALF_CDF32, u, out)
    np.multiply(a, a, out=u)
    u *= t(-0.5)
    np.exp(u, out=u)
    out *= u


def _normal_cdf_block32(x: Any, out: Any, scratch: list[Any]) -> None:
    _lower_tail32(x, out, *scratch)
    np.subtract(x.dtype.type(1), out, out=out, where=x >= 0)


def _gelu_block32(x: Any, out: Any, scratch: list[Any]) -> None:
    a, u, lower = scratch
    _lower_tail32(x, lower, a, u)
    lower *= a
    np.maximum(x, x.dtype.type(0), out=out)
    out -= lower  # x * Phi(x) = max(x, 0) - |x| * Phi(-|x|)
    np.copyto(out, x, where=x == np.inf)  # inf * Phi(-inf) is nan above; GELU(inf) is inf, as in torch


def _via_float32(fn: Any, x: Any) -> Any:
    return fn(x.astype(np.float32)).astype(x.dtype)


def erf_array(x: Any) -> Any:
    """The error function of a floating array, elementwise, in its dtype."""
    if x.dtype not in (np.float32, np.float64):
        return _via_float32(erf_array, x)
    return _blockwise(_erf_block, x, 3)


def normal_cdf_array(x: Any) -> Any:
    """The standard normal CDF ``Phi(x) = (1 + erf(x / sqrt(2))) / 2`` of a floating array."""
    if x.dtype == np.float64:
        out = erf_array(x * _SQRT1_2)
        out += 1.0
        out *= 0.5
        return out
    if x.dtype != np.float32:
        return _via_float32(normal_cdf_array, x)
    return _blockwise(_normal_cdf_block32, x, 2)


def gelu_array(x: Any) -> Any:
    """GELU's ``x * Phi(x)`` of a floating array, in its dtype."""
    if x.dtype == np.float64:
        out = normal_cdf_array(x)
        with np.errstate(invalid="ignore"):  # -inf * 0 is nan, as in torch
            out *= x
        return out
    if x.dtype != np.float32:
        return _via_float32(gelu_array, x)
    return _blockwise(_gelu_block32, x, 3)


Erf = _one_input(
    "Erf", erf_array, lambda g, a: g * (_TWO_OVER_SQRT_PI * np.exp(-a * a)).astype(g.dtype, copy=False),
    saves_output=False,
)


# ---- public functions (also bound as Tensor methods) -------------------------------------


def _on_floating(fn: type[ArrayFunction], name: str, doc: str) -> Callable[[Any], Any]:
    """The public function ``name``: ``fn`` on ``input``, integers and bools cast to the default float."""

    def op(input: Any) -> Any:
        return fn.apply(_floating(input))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


exp = _on_floating(Exp, "exp", "e to the power of each element.")
expm1 = _on_floating(Expm1, "expm1", "``exp(x) - 1``, accurate for small ``x``.")
log = _on_floating(Log, "log", "Natural logarithm (``-inf`` at 0, ``nan`` below).")
log1p = _on_floating(Log1p, "log1p", "``log(1 + x)``, accurate for small ``x``.")
sqrt = _on_floating(Sqrt, "sqrt", "Square root.")
rsqrt = _on_floating(Rsqrt, "rsqrt", "``1 / sqrt(x)``.")
reciprocal = _on_floating(Reciprocal, "reciprocal", "``1 / x``.")
tanh = _on_floating(Tanh, "tanh", "Hyperbolic tangent.")
sigmoid = _on_floating(Sigmoid, "sigmoid", "``1 / (1 + exp(-x))``, computed without overflow.")
sin = _on_floating(Sin, "sin", "Sine.")
cos = _on_floating(Cos, "cos", "Cosine.")
erf = _on_floating(
    Erf, "erf", "The Gauss error function (vectorised; about 1e-14 relative error in float64)."
)


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


def square(input: Any) -> Any:
    """``x * x``."""
    return Square.apply(input)


class Piecewise(ArrayFunction):
    """A piecewise-constant op (sign, floor, round, ...): in the graph, as in torch, with a zero gradient."""

    @staticmethod
    def forward(ctx: Context, a: Any, fn: Any) -> Any:
        return np.asarray(fn(a))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return np.zeros_like(g), None


def sign(input: Any) -> Any:
    """-1, 0 or 1 by the sign of each element (the gradient is zero)."""
    return Piecewise.apply(input, np.sign)


def _rounding(fn: Any, name: str) -> Any:
    def op(input: Any) -> Any:
        if category(input._data.dtype) < _FLOAT:
            return input.clone()
        return Piecewise.apply(input, fn)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}`` of each element (the gradient is zero, so none flows)."
    return op


floor = _rounding(np.floor, "floor")
ceil = _rounding(np.ceil, "ceil")
trunc = _rounding(np.trunc, "trunc")


def round(input: Any, *, decimals: int = 0) -> Any:  # noqa: A001 - torch's name
    """Round half to even, like torch."""
    if category(input._data.dtype) < _FLOAT:
        return input.clone()
    return Piecewise.apply(input, lambda a: np.round(a, decimals))
