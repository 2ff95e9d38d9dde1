# ruff: noqa: A001, A002  (torch names the first argument `input`)
"""Margin and embedding losses: hinge, ranking, soft margin, the multi-class and
multi-label margins, cosine embedding and the triplet losses.

The pointwise ones run through ``loss_regression``'s fused ``_ElementwiseLoss``;
the two multi-class margins are fused ``ArrayFunction``s over ``(N, C)`` arrays;
the embedding losses compose tensor ops (their distances are user-replaceable).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mininn._functions.elementwise import where
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import check_float, scalar_name
from mininn.nn.functional.activation import logsigmoid
from mininn.nn.functional.distance import pairwise_distance
from mininn.nn.functional.loss import (
    _check_broadcast,
    _check_float_mean,
    _expand_grad,
    _in_input_dtype,
    _reduce,
    _reduction,
)
from mininn.nn.functional.loss_regression import Rule, elementwise_loss
from mininn.tensor import Tensor

__all__ = [
    "cosine_embedding_loss",
    "hinge_embedding_loss",
    "margin_ranking_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _reduce_tensor(losses: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return losses.mean()
    if reduction == "sum":
        return losses.sum()
    return losses


# ---- pointwise margins -----------------------------------------------------------------
class _HingeEmbedding(Rule):
    """``x`` where ``t != -1`` plus ``max(0, margin - x)`` where ``t != 1`` (torch's masks)."""

    target_first = True

    def __init__(self, margin: float) -> None:
        self.margin = margin

    def value(self, x: Any, t: Any) -> Any:
        return np.where(t != 1, np.maximum(self.margin - x, 0), 0) + np.where(t != -1, x, 0)

    def grads(self, x: Any, t: Any) -> tuple[Any, Any]:
        gx = np.where((t != 1) & (self.margin - x > 0), -1.0, 0.0) + (t != -1)
        return gx, np.zeros_like(t)


class _SoftMargin(Rule):
    """``log(1 + exp(-t * x))``."""

    def value(self, x: Any, t: Any) -> Any:
        return np.logaddexp(0, -t * x)

    def grads(self, x: Any, t: Any) -> tuple[Any, Any]:
        z = -t * x
        sig = np.exp(z - np.logaddexp(0, z))  # sigmoid(-t * x)
        return -t * sig, -x * sig


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``x`` for targets 1, ``max(0, margin - x)`` for targets -1 (broadcast).

    Args:
        input: Distances of any shape.
        target: 1 or -1, broadcastable to ``input``.
        margin: Default: 1.0.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    _check_float_mean(input, reduction)
    target = _in_input_dtype(input, target, allow_int=True)
    return elementwise_loss(_HingeEmbedding(margin), input, target, reduction)


def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-target * input))``.

    Args:
        input: Scores of any shape.
        target: 1 or -1, broadcastable to ``input``.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    target = _in_input_dtype(input, target)
    return elementwise_loss(_SoftMargin(), input, target, reduction)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``: ``input1`` should rank above ``input2``
    where ``target`` is 1 (below it where -1).

    Args:
        input1, input2: Scores of one shape.
        target: 1 or -1, of the same number of dimensions.
        margin: Default: 0.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.shape!r}, input2: {input2.shape!r}, target: {target.shape!r} "
        )
    _check_broadcast(target, input1)
    losses = (-target * (input1 - input2) + margin).clamp(min=0)
    return _reduce_tensor(losses, reduction)


# ---- multi-class / multi-label margins -------------------------------------------------
def _check_vector_or_matrix(input: Tensor) -> None:
    if not ((input.ndim <= 1 and input.numel() != 0) or (input.ndim == 2 and input.shape[1] != 0)):
        raise RuntimeError(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
            f"{list(input.shape)}"
        )


def _check_long(t: Tensor) -> None:
    if t.dtype.name != "int64":
        raise RuntimeError(f"expected scalar type Long but found {scalar_name(t)}")


class _MultiMargin(ArrayFunction):
    """``sum_{i != y} w[y] * max(0, margin - x[y] + x[i])**p / C`` per row."""

    @staticmethod
    def forward(ctx: Context, x: Any, y: Any, weight: Any, p: int, margin: float, reduction: str) -> Any:
        n, c = x.shape
        rows = np.arange(n)
        z = margin - x[rows, y][:, None] + x  # (N, C)
        z[rows, y] = 0
        active = z > 0
        zp = np.where(active, z if p == 1 else z * z, 0)
        scale = np.full(n, 1 / c, dtype=x.dtype) if weight is None else weight[y] / c
        losses = (zp.sum(axis=1) * scale).astype(x.dtype, copy=False)
        ctx.save_for_backward(z, active, y, scale)
        ctx.meta = (p, reduction)
        return _reduce(losses, reduction)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        z, active, y, scale = ctx.saved_tensors
        p, reduction = ctx.meta
        n = z.shape[0]
        g = _expand_grad(g, (n,), reduction) * scale
        local = np.where(active, 1 if p == 1 else 2 * z, 0) * g[:, None]
        rows = np.arange(n)
        local[rows, y] = -local.sum(axis=1)
        return local.astype(z.dtype, copy=False), None, None, None, None, None


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss of scores ``(N, C)`` or ``(C)`` and class indices ``(N)`` or ``()``.

    Args:
        input: Class scores.
        target: int64 class indices.
        p: 1 or 2, the power of each hinge. Default: 1.
        margin: Default: 1.0.
        weight: Optional ``(C)`` weight of each target class.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    _check_vector_or_matrix(input)
    n, c = (1, max(input.numel(), 1)) if input.ndim <= 1 else tuple(input.shape)
    if not (target.ndim <= 1 and target.numel() == n):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
            f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. "
            f"Input has shape {list(input.shape)}."
        )
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    _check_long(target)
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(input)} but found {scalar_name(weight)}")
    y = target._data.reshape(n)
    if ((y < 0) | (y >= c)).any():
        raise RuntimeError("target out of range")
    x = input.reshape(n, c)
    w = None if weight is None else weight._data
    out = _MultiMargin.apply(x, y, w, p, margin, reduction)
    return out.reshape(target.shape) if reduction == "none" else out


_PAIR_BUDGET = 1 << 22  # (slot, class) pairs held at once: rows are processed in chunks of this size


def _label_pairs(x: Any, target: Any) -> Any:
    """Per chunk of rows: ``(rows, z, active, slots)`` with ``z = 1 - x[target slot] + x[class]``
    ``(rows, slots, C)`` and ``active`` the pairs of a listed target and an unlisted class with ``z > 0``."""
    n, c = x.shape
    step = max(1, _PAIR_BUDGET // max(c * c, 1))
    for start in range(0, n, step):
        xs, ts = x[start:start + step], target[start:start + step]
        valid = np.cumprod(ts != -1, axis=1).astype(bool)  # slots before the first -1
        slots = np.where(valid, ts, 0)
        listed = np.zeros(xs.shape, dtype=bool)
        rows = np.broadcast_to(np.arange(xs.shape[0])[:, None], slots.shape)
        listed[rows[valid], slots[valid]] = True
        z = 1 - np.take_along_axis(xs, slots, axis=1)[:, :, None] + xs[:, None, :]
        active = (z > 0) & valid[:, :, None] & ~listed[:, None, :]
        yield slice(start, start + step), z, active, slots


class _MultiLabelMargin(ArrayFunction):
    """``sum_{j in targets} sum_{i not in targets} max(0, 1 - (x[j] - x[i])) / C`` per row."""

    @staticmethod
    def forward(ctx: Context, x: Any, target: Any, reduction: str) -> Any:
        losses = np.empty(x.shape[0], dtype=x.dtype)
        for rows, z, active, _ in _label_pairs(x, target):
            losses[rows] = np.where(active, z, 0).sum(axis=(1, 2)) / x.shape[1]
        ctx.save_for_backward(x, target)
        ctx.reduction = reduction
        return _reduce(losses, reduction)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, target = ctx.saved_tensors
        n, c = x.shape
        g = _expand_grad(g, (n,), ctx.reduction) / c
        grad = np.empty_like(x)
        for rows, _, active, slots in _label_pairs(x, target):
            counts = active.astype(x.dtype)
            chunk = counts.sum(axis=1)  # each active pair pushes x[class] up
            index = np.broadcast_to(np.arange(slots.shape[0])[:, None], slots.shape)
            np.add.at(chunk, (index, slots), -counts.sum(axis=2))  # ... and x[target] down
            grad[rows] = chunk * g[rows, None]
        return grad, None, None


def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-label hinge loss; each target row lists class indices, ended by the first -1.

    Args:
        input: Scores ``(C)`` or ``(N, C)``.
        target: int64 of ``input``'s shape.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    _check_vector_or_matrix(input)
    expected = tuple(input.shape) if input.ndim else (1,)
    if tuple(target.shape if target.ndim else (1,)) != expected:
        raise RuntimeError(
            f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}"
        )
    _check_long(target)
    n, c = (1, expected[0]) if input.ndim <= 1 else expected
    t = target._data.reshape(n, c)
    if ((t < -1) | (t >= c)).any():
        raise RuntimeError("argument #2 'target' is out of range")
    out = _MultiLabelMargin.apply(input.reshape(n, c), t, reduction)
    if reduction == "none" and input.ndim <= 1:
        out = out.reshape(())
    return out


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """One-versus-all logistic loss, averaged over the classes (the last dim).

    Args:
        input: Scores ``(N, C)`` (or any shape; the last dim holds the classes).
        target: 0 or 1, broadcastable to ``input``.
        weight: Optional weight broadcast to the per-class losses.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if input.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    check_float(input, "log_sigmoid_cpu")
    losses = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        losses = losses * weight
    losses = losses.sum(dim=-1) / input.shape[-1]
    return _reduce_tensor(losses, reduction)


# ---- embeddings ------------------------------------------------------------------------
_COSINE_EPS = 1e-12


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` for targets 1, ``max(0, cos(x1, x2) - margin)`` for targets -1.

    Args:
        input1, input2: Embeddings ``(N, D)`` (with a ``(N)`` target) or ``(D)`` (a ``()`` target).
        target: 1 or -1.
        margin: In ``[-1, 1]``. Default: 0.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    dims = target.ndim + 1
    if input1.ndim != dims or input2.ndim != dims:
        raise RuntimeError(
            f"{target.ndim}D target tensor expects {dims}D input tensors, but found inputs with sizes "
            f"{list(input1.shape)} and {list(input2.shape)}."
        )
    dim = target.ndim
    dot = (input1 * input2).sum(dim=dim)
    norms = ((input1 * input1).sum(dim=dim) + _COSINE_EPS) * ((input2 * input2).sum(dim=dim) + _COSINE_EPS)
    cos = dot / norms.sqrt()
    _check_broadcast(target, cos)
    zero = cos * 0
    pos = where(target == 1, 1 - cos, zero)
    neg = where(target == -1, (cos - margin).clamp(min=0), zero)
    return _reduce_tensor(pos + neg, reduction)


def _check_triplet_dims(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == p == n:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of "
            f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs"
        )


def _triplet(
    d_pos: Tensor, d_neg: Tensor, d_swap: Tensor | None, margin: float, reduction: str
) -> Tensor:
    if d_swap is not None:
        d_neg = d_neg.minimum(d_swap)
    return _reduce_tensor((margin + d_pos - d_neg).clamp(min=0), reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with the ``p``-norm distance over the last dim.

    Args:
        anchor, positive, negative: Embeddings ``(N, D)`` or ``(D)``.
        margin: Positive. Default: 1.0.
        p: The norm's degree. Default: 2.
        eps: Added to the differences before the norm. Default: 1e-6.
        swap: Use ``min(d(a, n), d(p, n))`` as the negative distance. Default: False.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    _check_triplet_dims(anchor, positive, negative)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    d_swap = pairwise_distance(positive, negative, p, eps) if swap else None
    return _triplet(d_pos, d_neg, d_swap, margin, reduction)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with any distance ``d``.

    Args:
        anchor, positive, negative: Embeddings of one number of dimensions.
        distance_function: ``d(x1, x2)``; default: the Euclidean pairwise distance.
        margin: Positive. Default: 1.0.
        swap: Use ``min(d(a, n), d(p, n))`` as the negative distance. Default: False.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """
    reduction = _reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    dist = distance_function or pairwise_distance
    d_swap = dist(positive, negative) if swap else None
    return _triplet(dist(anchor, positive), dist(anchor, negative), d_swap, margin, reduction)
