"""More elementwise math: trigonometric and hyperbolic functions and their
inverses, ``log2``/``log10``/``exp2``, ``logit``, ``atan2``, ``hypot``,
``logaddexp``, ``xlogy``, ``fmod``, ``nan_to_num``, ``frac``, ``sinc`` and
the rounding-free sign helpers.

Each differentiable unary op is one ``ArrayFunction`` built by ``_unary`` from its
NumPy kernel and its derivative; integer inputs become the default float
first, as in torch.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from mininn._functions import elementwise as E
from mininn._functions._bases import _binary, _one_input
from mininn._functions._util import _FLOAT, category, torch_type_name, unbroadcast
from mininn._functions.conversion import cast
from mininn._functions.reduction import sum as sum_
from mininn._functions.shape import unsqueeze
from mininn._functions.unary import _floating, erf, erf_array, trunc
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import ArrayFunction, Context, wrap

_LN2 = math.log(2)
_LN10 = math.log(10)


def _unary(name: str, kernel: Callable[[Any], Any], derivative: Callable[[Any, Any], Any],
           doc: str) -> Callable[[Any], Any]:
    """A public op ``name(input)``: ``kernel`` forward, ``g * derivative(x, out)`` backward."""

    class Op(ArrayFunction):
        @staticmethod
        def forward(ctx: Context, a: Any) -> Any:
            with np.errstate(all="ignore"):
                out = np.asarray(kernel(a)).astype(a.dtype, copy=False)
            ctx.save_for_backward(a, out)
            return out

        @staticmethod
        def backward(ctx: Context, g: Any) -> Any:
            a, out = ctx.saved_tensors
            with np.errstate(all="ignore"):
                return (g * derivative(a, out)).astype(g.dtype, copy=False)

    Op.__name__ = Op.__qualname__ = name[0].upper() + name[1:]

    def op(input: Any) -> Any:
        return Op.apply(_floating(input))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


tan = _unary("tan", np.tan, lambda x, y: 1 + y * y, "Tangent.")
asin = _unary("asin", np.arcsin, lambda x, y: 1 / np.sqrt(1 - x * x), "Inverse sine.")
acos = _unary("acos", np.arccos, lambda x, y: -1 / np.sqrt(1 - x * x), "Inverse cosine.")
atan = _unary("atan", np.arctan, lambda x, y: 1 / (1 + x * x), "Inverse tangent.")
sinh = _unary("sinh", np.sinh, lambda x, y: np.cosh(x), "Hyperbolic sine.")
cosh = _unary("cosh", np.cosh, lambda x, y: np.sinh(x), "Hyperbolic cosine.")
asinh = _unary("asinh", np.arcsinh, lambda x, y: 1 / np.sqrt(x * x + 1), "Inverse hyperbolic sine.")
acosh = _unary("acosh", np.arccosh, lambda x, y: 1 / np.sqrt(x * x - 1), "Inverse hyperbolic cosine.")
atanh = _unary("atanh", np.arctanh, lambda x, y: 1 / (1 - x * x), "Inverse hyperbolic tangent.")
log2 = _unary("log2", np.log2, lambda x, y: 1 / (x * _LN2), "Base-2 logarithm.")
log10 = _unary("log10", np.log10, lambda x, y: 1 / (x * _LN10), "Base-10 logarithm.")
exp2 = _unary("exp2", np.exp2, lambda x, y: y * _LN2, "``2 ** x``.")
sinc = _unary(
    "sinc", np.sinc,
    lambda x, y: np.where(x == 0, 0, (np.cos(np.pi * x) - y) / np.where(x == 0, 1, x)),
    "Normalised sinc: ``sin(pi x) / (pi x)``, 1 at 0.",
)
arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh


class Logit(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, eps: float | None) -> Any:
        x = a if eps is None else np.clip(a, eps, 1 - eps)
        ctx.save_for_backward(a)
        ctx.eps = eps
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x / (1 - x)).astype(a.dtype, copy=False)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        eps = ctx.eps
        with np.errstate(divide="ignore", invalid="ignore"):
            grad = g / (a * (1 - a))
        if eps is not None:
            grad = np.where((a < eps) | (a > 1 - eps), 0, grad)
        return grad.astype(g.dtype, copy=False), None


def logit(input: Any, eps: float | None = None) -> Any:
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    return Logit.apply(_floating(input), eps)


def _atan2_grads(g: Any, y: Any, x: Any, out: Any) -> tuple[Any, Any]:
    r2 = x * x + y * y
    return g * x / r2, -g * y / r2


def _xlogy(x: Any, y: Any) -> Any:
    out = np.where(x == 0, 0, x * np.log(y))
    return np.where(np.isnan(y), np.nan, out).astype(np.result_type(x, y), copy=False)


Atan2 = _binary("Atan2", np.arctan2, _atan2_grads, quiet=True)
Hypot = _binary("Hypot", np.hypot, lambda g, a, b, out: (g * a / out, g * b / out), quiet=True)
LogAddExp = _binary(
    "LogAddExp", np.logaddexp, lambda g, a, b, out: (g * np.exp(a - out), g * np.exp(b - out))
)
XLogY = _binary("XLogY", _xlogy, lambda g, x, y, out: (g * np.log(y), g * x / y), quiet=True)


class Fmod(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.fmod(a, b)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        with np.errstate(divide="ignore", invalid="ignore"):
            gb = -g * np.trunc(a / b)
        return unbroadcast(g, a.shape), unbroadcast(gb, np.shape(b))


def _float_pair(input: Any, other: Any) -> tuple[Any, Any]:
    """Both operands as tensors of one floating dtype (torch's promotion, ints become the default float)."""
    a, b = E.coerce(input, other)
    a, b = E._to_float(a), E._to_float(b)
    return E._both_tensors(a, b)


def atan2(input: Any, other: Any) -> Any:
    """The angle of the point ``(other, input)``: ``atan(input / other)`` in the right quadrant."""
    return E.apply_binary(Atan2, *_float_pair(input, other))


arctan2 = atan2


def hypot(input: Any, other: Any) -> Any:
    """``sqrt(input**2 + other**2)``."""
    return E.apply_binary(Hypot, *_float_pair(input, other))


def logaddexp(input: Any, other: Any) -> Any:
    """``log(exp(input) + exp(other))``, without overflow."""
    return E.apply_binary(LogAddExp, *_float_pair(input, other))


def xlogy(input: Any, other: Any) -> Any:
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    return E.apply_binary(XLogY, *_float_pair(input, other))


def fmod(input: Any, other: Any) -> Any:
    """C's remainder: the result has the sign of ``input`` (``remainder`` follows ``other``)."""
    a, b = E.coerce(input, other)
    E._check_int_zero_division(a, b)
    if isinstance(b, TensorCore) and isinstance(a, TensorCore):
        return E.apply_binary(Fmod, a, b)
    if not isinstance(a, TensorCore):
        a = wrap(np.asarray(a, b._data.dtype))
    return Fmod.apply(a, np.asarray(b, a._data.dtype))


def frac(input: Any) -> Any:
    """The fractional part ``x - trunc(x)`` (the gradient passes through unchanged)."""
    return E.sub(input, trunc(input))


def nan_to_num(input: Any, nan: float | None = None, posinf: float | None = None,
               neginf: float | None = None) -> Any:
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (the dtype's extremes by default)."""
    a = input._data
    if category(a.dtype) < _FLOAT:
        return input.clone()
    info = np.finfo(a.dtype)
    values = np.nan_to_num(a, nan=0.0 if nan is None else nan, posinf=info.max if posinf is None else posinf,
                           neginf=info.min if neginf is None else neginf)
    return E.where(wrap(np.isfinite(a)), input, wrap(values.astype(a.dtype, copy=False)))


def signbit(input: Any) -> Any:
    """True where the sign bit is set (negative numbers and -0.0)."""
    return wrap(np.signbit(input._data))


def copysign(input: Any, other: Any) -> Any:
    """``|input|`` with the sign of ``other``."""
    return E.apply_binary(CopySign, *_float_pair(input, other))


class CopySign(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        out = np.copysign(a, b)
        ctx.save_for_backward(a, out)
        ctx.b_shape = b.shape
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, out = ctx.saved_tensors
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = np.where(a == 0, 0, g * out / a)
        return unbroadcast(ga, a.shape), np.zeros(ctx.b_shape, g.dtype)


def erfc(input: Any) -> Any:
    """``1 - erf(x)``."""
    return E.sub(1, erf(_floating(input)))


def _erfinv_array(y: Any) -> Any:
    """The inverse error function: Giles' single-precision approximation, then Newton steps on erf."""
    y64 = y.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log((1 - y64) * (1 + y64))
        central = w - 2.5
        tail = np.sqrt(np.maximum(w, 0)) - 3
        p1 = np.polyval([2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                         -0.00125372503, -0.00417768164, 0.246640727, 1.50140941], central)
        p2 = np.polyval([-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                         -0.0076224613, 0.00943887047, 1.00167406, 2.83297682], tail)
        x = np.where(w < 5, p1, p2) * y64
        for _ in range(2):  # Newton on erf(x) = y
            x = x - (erf_array(x) - y64) / (2 / math.sqrt(math.pi) * np.exp(-x * x))
    x = np.where(np.abs(y64) == 1, np.copysign(np.inf, y64), x)
    return np.where(np.abs(y64) > 1, np.nan, x).astype(y.dtype)


def _erfinv_grad(g: Any, out: Any) -> Any:
    with np.errstate(over="ignore", invalid="ignore"):
        return (g * (math.sqrt(math.pi) / 2) * np.exp(out * out)).astype(g.dtype, copy=False)


ErfInv = _one_input("ErfInv", _erfinv_array, _erfinv_grad)


def erfinv(input: Any) -> Any:
    """The inverse of ``erf`` on ``(-1, 1)`` (+-inf at +-1, NaN outside)."""
    return ErfInv.apply(_floating(input))


def deg2rad(input: Any) -> Any:
    """Degrees to radians."""
    return E.mul(_floating(input), math.pi / 180)


def rad2deg(input: Any) -> Any:
    """Radians to degrees."""
    return E.mul(_floating(input), 180 / math.pi)


def float_power(input: Any, exponent: Any) -> Any:
    """``input ** exponent`` computed in float64 (complex128 for complex operands)."""
    def wide(x: Any) -> Any:
        if isinstance(x, TensorCore):
            return cast(x, np.dtype(np.complex128 if x._data.dtype.kind == "c" else np.float64))
        return x

    return E.pow(wide(input), wide(exponent))


class _NanSkipping(ArrayFunction):
    """fmax/fmin: the larger/smaller value, the non-NaN one when one is NaN."""

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any, is_max: bool) -> Any:
        out = np.fmax(a, b) if is_max else np.fmin(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b, out = ctx.saved_tensors
        a_wins = (a == out) | np.isnan(b)
        return unbroadcast(g * a_wins, a.shape), unbroadcast(g * ~a_wins, b.shape), None


def fmax(input: Any, other: Any) -> Any:
    """Elementwise maximum that ignores NaN (NaN only where both are)."""
    a, b = E._both_tensors(*E.coerce(input, other))
    return _NanSkipping.apply(a, b, True)


def fmin(input: Any, other: Any) -> Any:
    """Elementwise minimum that ignores NaN (NaN only where both are)."""
    a, b = E._both_tensors(*E.coerce(input, other))
    return _NanSkipping.apply(a, b, False)


def heaviside(input: Any, values: Any) -> Any:
    """The step function: 0 below zero, 1 above, ``values`` at zero (no gradient)."""
    a, v = input._data, values._data
    return wrap(np.asarray(np.heaviside(a, v)).astype(np.result_type(a, v)))


def logaddexp2(input: Any, other: Any) -> Any:
    """``log2(2**input + 2**other)``, without overflow."""
    return E.div(logaddexp(E.mul(input, _LN2), E.mul(other, _LN2)), _LN2)


def ldexp(input: Any, other: Any) -> Any:
    """``input * 2**other``."""
    return E.mul(input, E.pow(2.0, other))


def _integer_pair(name: str, fn: Any) -> Any:
    def op(input: Any, other: Any) -> Any:
        a, b = E.coerce(input, other)
        for x in (a, b):
            if isinstance(x, TensorCore) and x._data.dtype.kind not in "iu":
                kind = torch_type_name(x._data.dtype)
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{kind}'")
        return wrap(np.asarray(fn(E._raw(a), E._raw(b))))

    op.__name__ = name
    op.__doc__ = f"The elementwise {'greatest common divisor' if name == 'gcd' else 'least common multiple'}."
    return op


gcd = _integer_pair("gcd", np.gcd)
lcm = _integer_pair("lcm", np.lcm)


# ---- the gamma function family: lgamma, digamma (and trigamma for digamma's gradient) -------------

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188)  # Bernoulli-number terms of log Gamma


def _lgamma_positive(x: Any) -> Any:
    """``log Gamma(x)`` for ``x > 0``: shifted past 10 by the recurrence, then Stirling's series."""
    exact = (x == 1) | (x == 2)  # Gamma is 1 there: an exact 0, as torch gives
    product = np.ones(x.shape)
    for _ in range(10):  # ten recurrence steps move every x above 10
        below = x < 10
        product = np.where(below, product * x, product)
        x = np.where(below, x + 1, x)
    inv2 = 1 / (x * x)
    series = np.zeros(x.shape)
    for c in reversed(_STIRLING):
        series = series * inv2 + c
    out = (x - 0.5) * np.log(x) - x + _HALF_LOG_2PI + series / x - np.log(product)
    return np.where(exact, 0.0, out)


def lgamma_array(a: Any) -> Any:
    """``log|Gamma(a)|`` elementwise (reflection below 0.5; inf at the poles 0, -1, -2, ...)."""
    x = a.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        small = x < 0.5
        reflected = np.log(np.pi / np.abs(np.sin(np.pi * x))) - _lgamma_positive(np.where(small, 1 - x, 2.0))
        out = np.where(small, reflected, _lgamma_positive(np.where(small, 2.0, x)))
        out = np.where(small & (x == np.floor(x)), np.inf, out)
    return out.astype(a.dtype)


def _polygamma_shifted(x: Any, order: int) -> Any:
    """digamma (order 0) or trigamma (order 1) for ``x > 0``: the recurrence up to 10, then the
    asymptotic series (its first omitted term is below 1e-13 there)."""
    acc = np.zeros(x.shape)
    for _ in range(10):  # ten recurrence steps move every x above 10
        below = x < 10
        acc = acc - np.where(below, 1 / x if order == 0 else -1 / (x * x), 0)
        x = np.where(below, x + 1, x)
    inv = 1 / x
    inv2 = inv * inv
    if order == 0:
        series = np.log(x) - 0.5 * inv - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
            1 / 240 - inv2 / 132))))
    else:
        series = inv + 0.5 * inv2 + inv * inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 * (
            1 / 30 - inv2 * 5 / 66))))
    return acc + series


def digamma_array(a: Any) -> Any:
    """``Gamma'(a) / Gamma(a)`` elementwise (reflection for negative ``a``; -inf at 0, NaN at the poles)."""
    x = a.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        neg = x <= 0
        positive = _polygamma_shifted(np.where(neg, 1 - x, x), 0)
        out = np.where(neg, positive - np.pi / np.tan(np.pi * x), positive)
        out = np.where(neg & (x == np.floor(x)), np.nan, out)
        out = np.where(x == 0, -np.inf, out)
    return out.astype(a.dtype)


def trigamma_array(a: Any) -> Any:
    """The derivative of digamma elementwise."""
    x = a.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        neg = x <= 0
        positive = _polygamma_shifted(np.where(neg, 1 - x, x), 1)
        out = np.where(neg, -positive + (np.pi / np.sin(np.pi * x)) ** 2, positive)
    return out.astype(a.dtype)


lgamma = _unary("lgamma", lgamma_array, lambda x, y: digamma_array(x), "``log|Gamma(x)|``.")
digamma = _unary("digamma", digamma_array, lambda x, y: trigamma_array(x),
                 "The logarithmic derivative of Gamma.")


_BERNOULLI_2J = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def _hurwitz_zeta(s: int, x: Any) -> Any:
    """``zeta(s, x) = sum_k (x + k)**-s`` for an integer ``s >= 2`` (recurrence past 10, Euler-Maclaurin)."""
    total = np.zeros(x.shape)
    x = x.copy()
    for _ in range(64):  # the recurrence moves every x above 10 (64 steps reach from -54)
        below = x < 10
        if not below.any():
            break
        total = total + np.where(below, x ** -float(s), 0)
        x = np.where(below, x + 1, x)
    total = total + x ** (1.0 - s) / (s - 1) + 0.5 * x ** -float(s)
    rising = float(s)  # s (s + 1) ... (s + 2j - 2)
    factorial = 2.0  # (2j)!
    for j, b in enumerate(_BERNOULLI_2J, start=1):
        total = total + b / factorial * rising * x ** (-float(s) - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        factorial *= (2 * j + 1) * (2 * j + 2)
    return total


def polygamma_array(n: int, a: Any) -> Any:
    """The ``n``-th derivative of digamma, elementwise."""
    if n == 0:
        return digamma_array(a)
    x = a.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = (-1) ** (n + 1) * math.factorial(n) * _hurwitz_zeta(n + 1, x)
        out = np.where((x <= 0) & (x == np.floor(x)), np.nan if n % 2 == 0 else np.inf, out)
    return out.astype(a.dtype)


class Polygamma(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, n: int) -> Any:
        ctx.save_for_backward(a)
        ctx.n = n
        return polygamma_array(n, a)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        return (g * polygamma_array(ctx.n + 1, a)).astype(g.dtype, copy=False), None


def polygamma(n: int, input: Any) -> Any:
    """The ``n``-th derivative of digamma (``polygamma(0, x)`` is ``digamma(x)``)."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return Polygamma.apply(_floating(input), int(n))


def mvlgamma(input: Any, p: int) -> Any:
    """The multivariate log-gamma of dimension ``p``: ``sum_i lgamma(x - i / 2) + p (p - 1) / 4 log(pi)``."""
    x = _floating(input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    offsets = wrap((np.arange(p) / 2).astype(x._data.dtype))
    return E.add(sum_(lgamma(E.sub(unsqueeze(x, -1), offsets)), -1), p * (p - 1) / 4 * math.log(math.pi))


class frexp_result(NamedTuple):  # noqa: N801 - torch.return_types.frexp
    mantissa: Any
    exponent: Any

    def __repr__(self) -> str:
        return f"mininn.return_types.frexp(\nmantissa={self.mantissa!r},\nexponent={self.exponent!r})"


def frexp(input: Any) -> Any:
    """``(mantissa, exponent)`` with ``input = mantissa * 2**exponent`` and ``0.5 <= |mantissa| < 1``."""
    a = input._data
    if a.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return frexp_result(*Frexp.apply(input))


class Frexp(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        mantissa, exponent = np.frexp(a)
        ctx.exponent = exponent
        return mantissa, exponent.astype(np.int32)

    @staticmethod
    def backward(ctx: Context, g: Any, _g_exponent: Any) -> Any:
        return np.ldexp(g, -ctx.exponent).astype(g.dtype, copy=False)


def nextafter(input: Any, other: Any) -> Any:
    """The next representable value after ``input`` towards ``other``."""
    a, b = E._both_tensors(*E.coerce(input, other))
    return wrap(np.nextafter(a._data, b._data))
