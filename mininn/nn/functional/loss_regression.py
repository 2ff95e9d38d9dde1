# ruff: noqa: A001, A002  (torch names the first argument `input`)
"""Elementwise regression losses: ``smooth_l1_loss`` and ``huber_loss``.

Both run through ``_ElementwiseLoss``, one fused ``ArrayFunction`` for every loss
that is a pointwise rule of ``(input, target)``: a rule gives the losses in
forward and the two local derivatives in backward, and the ArrayFunction does the
broadcasting, the optional weight and the reduction around it. The
probabilistic and margin losses reuse it.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from mininn._dtype import from_numpy_dtype
from mininn._functions._util import unbroadcast
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional.loss import (
    _check_broadcast,
    _check_float_kernel,
    _elementwise_weight,
    _expand_grad,
    _in_input_dtype,
    _reduce,
    _reduction,
    _warn_target_size,
)
from mininn.tensor import Tensor

__all__ = ["huber_loss", "smooth_l1_loss"]


class Rule(Protocol):
    """A pointwise loss ``f(x, t)``: ``value`` for forward, ``grads`` -> ``(df/dx, df/dt)``.

    ``target_first``: torch's formula reads the target first, so a shape
    mismatch names the target's size as tensor ``a``.
    """

    target_first: bool = False

    def value(self, x: Any, t: Any) -> Any: ...

    def grads(self, x: Any, t: Any) -> tuple[Any, Any]: ...


class _ElementwiseLoss(ArrayFunction):
    """``rule(x, t)`` broadcast, times an optional weight, then reduced (mean over elements)."""

    @staticmethod
    def forward(ctx: Context, x: Any, t: Any, weight: Any, rule: Rule, reduction: str) -> Any:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            losses = rule.value(x, t)
        losses = np.broadcast_to(losses, np.broadcast_shapes(x.shape, t.shape)).astype(x.dtype, copy=False)
        if weight is not None:
            losses = losses * weight
        ctx.save_for_backward(x, t, weight)
        ctx.meta = (rule, reduction, losses.shape)
        return _reduce(losses, reduction)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, t, weight = ctx.saved_tensors
        rule, reduction, shape = ctx.meta
        g = _expand_grad(g, shape, reduction)
        if weight is not None:
            g = g * weight
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            gx, gt = rule.grads(x, t)
        grad_x = grad_t = None
        if ctx.needs_input_grad[0]:
            grad_x = unbroadcast((g * gx).astype(x.dtype, copy=False), x.shape)
        if ctx.needs_input_grad[1]:
            grad_t = unbroadcast((g * gt).astype(t.dtype, copy=False), t.shape)
        return grad_x, grad_t, None, None, None


def common_float(*tensors: Tensor) -> list[Tensor]:
    """The tensors in their promoted floating dtype (an integer target follows the input)."""
    dtypes = [t._data.dtype for t in tensors if t.dtype.is_floating_point]
    if not dtypes:
        return list(tensors)
    target = np.result_type(*dtypes)
    return [t if t._data.dtype == target else t.to(from_numpy_dtype(target)) for t in tensors]


def elementwise_loss(
    rule: Rule, input: Tensor, target: Tensor, reduction: str, weight: Any = None
) -> Tensor:
    """Apply ``rule`` through the fused ArrayFunction (``input``/``target`` already checked)."""
    _check_broadcast(*((target, input) if rule.target_first else (input, target)))
    input, target = common_float(input, target)
    return _ElementwiseLoss.apply(input, target, weight, rule, reduction)


# ---- smooth l1 / huber -----------------------------------------------------------------
class _SmoothL1(Rule):
    def __init__(self, beta: float) -> None:
        self.beta = beta

    def value(self, x: Any, t: Any) -> Any:
        d = abs(x - t)
        return np.where(d < self.beta, 0.5 * d * d / self.beta, d - 0.5 * self.beta)

    def grads(self, x: Any, t: Any) -> tuple[Any, Any]:
        d = x - t
        gx = np.where(abs(d) < self.beta, d / self.beta, np.sign(d))
        return gx, -gx


class _Huber(Rule):
    def __init__(self, delta: float) -> None:
        self.delta = delta

    def value(self, x: Any, t: Any) -> Any:
        d = abs(x - t)
        return np.where(d < self.delta, 0.5 * d * d, self.delta * (d - 0.5 * self.delta))

    def grads(self, x: Any, t: Any) -> tuple[Any, Any]:
        d = x - t
        gx = np.where(abs(d) < self.delta, d, self.delta * np.sign(d))
        return gx, -gx


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """Squared error below ``beta`` (scaled by ``1 / beta``), absolute error above it.

    Args:
        input: Predictions of any shape.
        target: Targets, broadcastable to ``input`` (a warning if the shapes differ).
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
        beta: The threshold; ``0`` gives the L1 loss. Default: 1.0.
    """
    _warn_target_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_float_kernel("smooth_l1_cpu", input, target)
    return elementwise_loss(_SmoothL1(beta), input, target, reduction)


def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """Squared error below ``delta``, ``delta``-scaled absolute error above it.

    Args:
        input: Predictions of any shape.
        target: Targets, broadcastable to ``input`` (a warning if the shapes differ).
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
        delta: The threshold, positive. Default: 1.0.
        weight: Optional per-element weights of ``input``'s shape; ``"mean"``
            still divides by the number of elements.
    """
    _warn_target_size(input, target)
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_float_kernel("huber_cpu", input, target)
    target = _in_input_dtype(input, target)
    return elementwise_loss(_Huber(delta), input, target, reduction, _elementwise_weight(input, weight))
