"""The special functions the gamma-based families need, on NumPy alone.

``gammainc(a, x)``: the regularised lower incomplete gamma function ``P(a, x)``
(torch.special.gammainc; differentiable in ``x`` only, as in torch), and
``standard_gamma(alpha)``: Gamma(alpha, 1) draws whose gradient with respect to
``alpha`` is the implicit reparameterisation ``dx/dalpha = -(dP/dalpha) / p(x)``.
Both sum the series ``P(a, x) = x**a e**-x / Gamma(a + 1) * sum_n x**n / ((a+1)...(a+n))``,
whose terms are all positive (no cancellation); ``dP/da`` differentiates it term by term.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mininn._factories import default_generator
from mininn._functions.transcendental import digamma_array, lgamma_array
from mininn.autograd.graph import ArrayFunction, Context
from mininn.tensor import Tensor

__all__ = ["gammainc", "log_bessel_i", "standard_gamma"]

_EPS = np.finfo(np.float64).eps


def _series(a: np.ndarray, x: np.ndarray, with_derivative: bool) -> tuple[np.ndarray, np.ndarray]:
    """``sum_n t_n`` with ``t_0 = 1, t_n = t_{n-1} x / (a + n)`` and, when asked,
    ``sum_n t_n * (-sum_{k<=n} 1 / (a + k))`` (its derivative in ``a``)."""
    term = np.ones(np.broadcast(a, x).shape)
    total, harmonic, d_total = term.copy(), np.zeros_like(term), np.zeros_like(term)
    steps = int(min(np.max(x, initial=0.0) + 12 * math.sqrt(np.max(x, initial=0.0)) + 60, 100_000))
    for n in range(1, steps + 1):
        term = term * x / (a + n)
        total = total + term
        if with_derivative:
            harmonic = harmonic + 1 / (a + n)
            d_total = d_total - term * harmonic
        if np.all(term <= _EPS * total):
            break
    return total, d_total


def gammainc_array(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``P(a, x)`` elementwise in float64 (0 at 0, 1 at inf; NaN for ``a <= 0`` or ``x < 0``)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    ok = (a > 0) & (x > 0) & np.isfinite(x)
    a_ok, x_ok = np.where(ok, a, 1.0), np.where(ok, x, 1.0)
    total, _ = _series(a_ok, x_ok, False)
    log_front = a_ok * np.log(x_ok) - x_ok - lgamma_array(a_ok + 1)
    out = np.minimum(np.exp(log_front) * total, 1.0)
    out = np.where(x == 0, 0.0, np.where(x == np.inf, 1.0, out))
    return np.where((a > 0) & (x >= 0), out, np.nan)


def gammainc_grad_a(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``dP(a, x) / da`` elementwise in float64, for ``a > 0`` and ``0 < x < inf``."""
    total, d_total = _series(a, x, True)
    front = np.exp(a * np.log(x) - x - lgamma_array(a + 1))
    return front * ((np.log(x) - digamma_array(a + 1)) * total + d_total)


class _Gammainc(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, x: Any) -> Any:
        ctx.save_for_backward(a, x)
        dtype = np.result_type(a, x)
        return gammainc_array(a, x).astype(dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad and ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'igamma: input' is not implemented.")
        with np.errstate(all="ignore"):
            density = np.exp((a - 1) * np.log(x) - x - lgamma_array(np.asarray(a, np.float64)))
        return None, (g * density).astype(g.dtype, copy=False)


def gammainc(a: Tensor, x: Tensor) -> Tensor:
    """The regularised lower incomplete gamma function ``P(a, x)`` (torch.special.gammainc)."""
    return _Gammainc.apply(a, x)


class _StandardGamma(ArrayFunction):
    """Returns the given draws; backward is their implicit derivative in ``alpha``."""

    @staticmethod
    def forward(ctx: Context, alpha: Any, draws: Any) -> Any:
        ctx.save_for_backward(alpha, draws)
        return draws

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        alpha, x = ctx.saved_tensors
        a, xs = np.asarray(alpha, np.float64), np.asarray(x, np.float64)
        with np.errstate(all="ignore"):
            log_density = (a - 1) * np.log(xs) - xs - lgamma_array(a)
            dx = -gammainc_grad_a(a, xs) / np.exp(log_density)
        return (g * dx).astype(g.dtype, copy=False), None


def standard_gamma(alpha: Tensor) -> Tensor:
    """Gamma(``alpha``, 1) draws from mininn's generator (at least the dtype's smallest normal number),
    differentiable in ``alpha``."""
    gen = default_generator
    with gen._lock:
        draws = gen.rng.standard_gamma(np.asarray(alpha._data, np.float64))
    dtype = alpha._data.dtype
    draws = np.maximum(np.asarray(draws), np.finfo(dtype).tiny).astype(dtype)
    return _StandardGamma.apply(alpha, draws)


def log_bessel_i_array(order: int, x: np.ndarray) -> np.ndarray:
    """``log I_order(x)`` (modified Bessel function of the first kind, order 0 or 1) for ``x > 0``, in
    float64: the power series up to 50, the asymptotic expansion (12 terms, error below 1e-19) above."""
    x = np.asarray(x, np.float64)
    small = np.minimum(x, 50.0)
    half = small / 2
    term = half ** order  # (x/2)**order / order!
    first, tail = term, np.zeros_like(term)  # the sum kept apart from its first term: log1p for order 0
    for k in range(1, 200):
        term = term * half * half / (k * (k + order))
        tail = tail + term
        if k > 30 and np.all(term <= _EPS * (first + tail)):
            break
    mu = 4.0 * order * order
    big = np.maximum(x, 50.0)
    coef, series = np.ones_like(big), np.ones_like(big)
    for k in range(1, 13):
        coef = -coef * (mu - (2 * k - 1) ** 2) / (k * 8.0 * big)
        series = series + coef
    with np.errstate(divide="ignore"):
        asymptotic = big - 0.5 * np.log(2 * np.pi * big) + np.log(series)
        series_log = np.log1p(tail) if order == 0 else np.log(first + tail)
        return np.where(x <= 50.0, series_log, asymptotic)


class _LogBesselI(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, order: int) -> Any:
        out0, out1 = log_bessel_i_array(0, x), log_bessel_i_array(1, x)
        ctx.save_for_backward(np.asarray(x, np.float64), out0, out1)
        ctx.order = order
        return (out0 if order == 0 else out1).astype(x.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, log_i0, log_i1 = ctx.saved_tensors
        with np.errstate(all="ignore"):
            slope = np.exp(log_i1 - log_i0) if ctx.order == 0 else np.exp(log_i0 - log_i1) - 1 / x
        return (g * slope).astype(g.dtype, copy=False), None


def log_bessel_i(x: Tensor, order: int = 0) -> Tensor:
    """``log I_order(x)`` for order 0 or 1, differentiable in ``x``."""
    return _LogBesselI.apply(x, order)
