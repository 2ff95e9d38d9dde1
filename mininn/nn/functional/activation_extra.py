"""More activation functions: hard (piecewise-linear) approximations, Mish, shrinkage,
the gated linear unit and the softmax variants ``softmin`` and ``gumbel_softmax``.

Same conventions as ``activation``: one ``ArrayFunction`` per op with an analytic
backward (a ``_Pointwise`` where the op takes only the tensor), ``inplace=True``
through ``activation._finish``.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn import _factories
from mininn._dtype import get_default_dtype
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import check_float, scalar_name, wrap_dim, xp_of
from mininn.nn.functional.activation import _finish, _Pointwise, _softmax_dim, _stable_sigmoid, softmax
from mininn.tensor import Tensor

__all__ = [
    "hardswish",
    "hardsigmoid",
    "mish",
    "softsign",
    "tanhshrink",
    "hardshrink",
    "softshrink",
    "glu",
    "softmin",
    "gumbel_softmax",
]


def _as_float(input: Tensor) -> Tensor:
    """Integer input promoted to the default float dtype (torch's true division)."""
    return input if input.dtype.is_floating_point else input.to(get_default_dtype())


# ---- hard approximations -------------------------------------------------------------------


class _Hardswish(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        t = x.dtype.type
        return x * np.clip(x + t(3), t(0), t(6)) / t(6), x

    @staticmethod
    def grad(g: Any, x: Any) -> Any:
        t = x.dtype.type
        slope = np.where(x <= -3, t(0), np.where(x >= 3, t(1), x / t(3) + t(0.5)))
        return g * slope


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``."""
    check_float(input, "hardswish_cpu")
    return _finish(input, _Hardswish, inplace)


class _Hardsigmoid(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        t = x.dtype.type
        return np.clip(x + t(3), t(0), t(6)) / t(6), x

    @staticmethod
    def grad(g: Any, x: Any) -> Any:
        # torch's kernel multiplies by 1/6 rounded to float32, for double too
        return np.where((x > -3) & (x < 3), g * g.dtype.type(np.float32(1 / 6)), g.dtype.type(0))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``."""
    check_float(input, "hardsigmoid_cpu")
    return _finish(input, _Hardsigmoid, inplace)


# ---- smooth --------------------------------------------------------------------------------


class _Mish(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        t = x.dtype.type
        th = np.tanh(np.maximum(x, t(0)) + np.log1p(np.exp(-abs(x))))  # tanh(softplus(x))
        return x * th, x, th

    @staticmethod
    def grad(g: Any, x: Any, th: Any) -> Any:
        return g * (th + x * _stable_sigmoid(x) * (x.dtype.type(1) - th * th))


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    check_float(input, "mish_cpu")
    return _finish(input, _Mish, inplace)


class _Softsign(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        d = x.dtype.type(1) + abs(x)
        return x / d, d

    @staticmethod
    def grad(g: Any, d: Any) -> Any:
        return g / (d * d)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return _Softsign.apply(_as_float(input))


class _Tanhshrink(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        th = np.tanh(x)
        return x - th, th

    @staticmethod
    def grad(g: Any, th: Any) -> Any:
        return g * th * th


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return _Tanhshrink.apply(_as_float(input))


# ---- shrinkage -----------------------------------------------------------------------------


class _Shrink(ArrayFunction):
    """``x`` (hard) or ``x - sign(x) * lambd`` (soft) where ``|x| > lambd``, else 0."""

    @staticmethod
    def forward(ctx: Context, x: Any, lambd: float, soft: bool) -> Any:
        t = x.dtype.type
        keep = ~(abs(x) <= lambd)  # NaN passes through, as in torch
        ctx.save_for_backward(keep)
        kept = x - np.copysign(t(lambd), x) if soft else x
        return np.where(keep, kept, t(0))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (keep,) = ctx.saved_tensors
        return np.where(keep, g, g.dtype.type(0)), None, None


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0."""
    check_float(input, "hardshrink_cpu")
    return _Shrink.apply(input, float(lambd), False)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Raises:
        RuntimeError: ``lambd`` negative or beyond the dtype's range (torch's message).
    """
    check_float(input, "softshrink_check")
    top = float(np.finfo(input._data.dtype).max)
    if not 0 <= lambd <= top:
        raise RuntimeError(
            f"lambda must be in range [0, {top:g}] for input dtype {scalar_name(input)}, but found {lambd:g}"
        )
    return _Shrink.apply(input, float(lambd), True)


# ---- gated and softmax variants ------------------------------------------------------------


class _Glu(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, dim: int) -> Any:
        a, b = np.split(x, 2, axis=dim)
        s = _stable_sigmoid(b)
        ctx.save_for_backward(a, s)
        ctx.dim = dim
        return a * s

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, s = ctx.saved_tensors
        ga = g * s
        gb = ga * a * (s.dtype.type(1) - s)
        return xp_of(g).concatenate([ga, gb], axis=ctx.dim), None


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """``a * sigmoid(b)`` where ``a`` and ``b`` are the two halves of ``input`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.ndim)
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    check_float(input, "glu_cpu")
    return _Glu.apply(input, d)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``softmax(-x)`` along ``dim`` (``None``: torch's legacy choice, with a warning)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    return softmax(-input, dim, dtype=dtype)


class _StraightThrough(ArrayFunction):
    """Forward ``hard - soft + soft`` (torch's arithmetic); backward the identity to ``soft``."""

    @staticmethod
    def forward(ctx: Context, soft: Any, dim: int) -> Any:
        xp = xp_of(soft)
        positions = xp.arange(soft.shape[dim]).reshape([-1 if a == dim else 1 for a in range(soft.ndim)])
        hard = (positions == soft.argmax(axis=dim, keepdims=True)).astype(soft.dtype)
        return hard - soft + soft

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g, None


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with Gumbel(0, 1)
    noise ``g``; ``hard=True`` returns its one-hot argmax with the soft sample's gradient.

    ``eps`` is unused (kept for torch's signature).
    """
    d = wrap_dim(dim, logits.ndim)
    gen = _factories.default_generator
    with gen._lock:
        draws = gen.rng.standard_exponential(tuple(logits.shape))
    gumbels = Tensor(xp_of(logits._data).asarray(-np.log(draws)).astype(logits._data.dtype))
    soft = softmax((logits + gumbels) / tau, d)
    return _StraightThrough.apply(soft, d) if hard else soft
