# ruff: noqa: A001, A002  (torch names the first argument `input`)
"""Likelihood losses: ``kl_div``, ``poisson_nll_loss`` and ``gaussian_nll_loss``."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from mininn._dtype import get_default_dtype
from mininn._functions._util import broadcast_error, unbroadcast
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional.loss import _expand_grad, _legacy_reduction, _reduce, _reduction
from mininn.nn.functional.loss_regression import Rule, common_float, elementwise_loss
from mininn.tensor import Tensor

__all__ = ["gaussian_nll_loss", "kl_div", "poisson_nll_loss"]

_MEAN_KL_WARNING = (
    "reduction: 'mean' divides the total loss by both the batch size and the support size."
    "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
    "'mean' will be changed to behave the same as 'batchmean' in the next major release."
)


# ---- kl_div ----------------------------------------------------------------------------
class _KLDiv(Rule):
    """``t * (log t - x)`` (0 where ``t == 0``), or ``exp(t) * (t - x)`` for a log target."""

    target_first = True

    def __init__(self, log_target: bool) -> None:
        self.log_target = log_target

    def value(self, x: Any, t: Any) -> Any:
        if self.log_target:
            return np.exp(t) * (t - x)
        return np.where(t == 0, 0, t * np.log(t)) - t * x

    def grads(self, x: Any, t: Any) -> tuple[Any, Any]:
        if self.log_target:
            p = np.exp(t)
            return -p, p * (t - x + 1)
        return -t, np.log(t) + 1 - x


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    """Kullback-Leibler divergence of ``target`` from the log-probabilities ``input``.

    Args:
        input: Log-probabilities of any shape.
        target: Probabilities (log-probabilities if ``log_target``), broadcastable to ``input``.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"batchmean"`` (sum over the batch size, the true
            KL divergence), ``"sum"`` or ``"mean"`` (default; over all elements, warns).
        log_target: Whether ``target`` holds log-probabilities. Default: False.
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn(_MEAN_KL_WARNING, stacklevel=2)
    batchmean = reduction == "batchmean"
    reduction = _reduction("sum" if batchmean else reduction)
    if not (input.dtype.is_floating_point and target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    out = elementwise_loss(_KLDiv(log_target), input, target, reduction)
    if batchmean and input.ndim != 0:
        out = out / input.shape[0]
    return out


# ---- poisson_nll_loss ------------------------------------------------------------------
class _PoissonNLL(Rule):
    """``exp(x) - t * x`` (log input) or ``x - t * log(x + eps)``, plus Stirling's term if full."""

    target_first = True

    def __init__(self, log_input: bool, full: bool, eps: float) -> None:
        self.log_input, self.full, self.eps = log_input, full, eps

    def value(self, x: Any, t: Any) -> Any:
        if self.log_input:
            loss = np.exp(x) - t * x
        else:
            loss = x - t * np.log(x + self.eps)
        if self.full:
            stirling = t * np.log(t) - t + 0.5 * np.log(2 * math.pi * t)
            loss = loss + np.where(t > 1, stirling, 0)
        return loss

    def grads(self, x: Any, t: Any) -> tuple[Any, Any]:
        if self.log_input:
            gx, gt = np.exp(x) - t, -x
        else:
            gx, gt = 1 - t / (x + self.eps), -np.log(x + self.eps)
        if self.full:
            stirling = np.log(t) + 0.5 / t
            gt = gt + np.where(t > 1, stirling, 0 * stirling)  # nan at t == 0, as torch's masked grad
        return gx, gt


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average: bool | None = None,
    eps: float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of a Poisson distribution with rate ``input``.

    Args:
        input: The rate's log (``log_input=True``, default) or the rate itself.
        target: Counts, broadcastable to ``input``.
        log_input: Whether ``input`` is the log of the rate. Default: True.
        full: Add Stirling's approximation of ``log(target!)`` (targets above 1). Default: False.
        size_average, reduce: Deprecated; use ``reduction``.
        eps: Added to the rate before the log when ``log_input=False``. Default: 1e-8.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if not (input.dtype.is_floating_point or target.dtype.is_floating_point):
        input = input.to(get_default_dtype())
    return elementwise_loss(_PoissonNLL(log_input, full, eps), input, target, reduction)


# ---- gaussian_nll_loss -----------------------------------------------------------------
class _GaussianNLL(ArrayFunction):
    """``0.5 * (log v + (x - t)**2 / v)`` with ``v = max(var, eps)``; the clamp passes grads through."""

    @staticmethod
    def forward(ctx: Context, x: Any, t: Any, var: Any, eps: float, full: bool, reduction: str) -> Any:
        v = np.maximum(var, eps).astype(var.dtype, copy=False)
        d = x - t
        losses = 0.5 * (np.log(v) + d * d / v)
        if full:
            losses = losses + 0.5 * math.log(2 * math.pi)
        ctx.save_for_backward(d, v)
        ctx.meta = (x.shape, t.shape, var.shape, reduction, losses.shape)
        return _reduce(losses.astype(np.result_type(x, t, var), copy=False), reduction)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        d, v = ctx.saved_tensors
        x_shape, t_shape, var_shape, reduction, shape = ctx.meta
        g = _expand_grad(g, shape, reduction)
        gx = g * d / v
        gv = g * 0.5 * (1 / v - d * d / (v * v))
        grads = unbroadcast(gx, x_shape), unbroadcast(-gx, t_shape), unbroadcast(gv, var_shape)
        return (*grads, None, None, None)


def _homoscedastic_var(input: Tensor, var: Tensor) -> Tensor:
    """``var`` shaped to broadcast against ``input``, or torch's ValueError."""
    if var.shape == input.shape:
        return var
    if tuple(input.shape[:-1]) == tuple(var.shape):
        return var.unsqueeze(-1)
    mismatched = [v for i, v in zip(input.shape, var.shape) if i != v]
    if input.ndim == var.ndim and sum(mismatched) == 1:
        return var
    raise ValueError("var is of incorrect size")


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | float,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of ``target`` under Gaussians of mean ``input`` and variance ``var``.

    Args:
        input: Means, ``(N, *)`` or ``(*)``.
        target: Samples, broadcastable to ``input``.
        var: Variances: ``input``'s shape, one dim short of it, or with one
            dim of size 1 (homoscedastic); or one float. Clamped below at ``eps``.
        full: Add the constant ``0.5 * log(2 * pi)``. Default: False.
        eps: The smallest variance. Default: 1e-6.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = Tensor(np.full(input.shape, var, dtype=input._data.dtype))
    elif (var._data < 0).any():
        raise ValueError("var has negative entry/entries")
    var = _homoscedastic_var(input, var)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    try:
        np.broadcast_shapes(input.shape, target.shape, var.shape)
    except ValueError:
        raise broadcast_error(tuple(input.shape), tuple(target.shape)) from None
    input, target, var = common_float(input, target, var)
    return _GaussianNLL.apply(input, target, var, eps, full, reduction)
