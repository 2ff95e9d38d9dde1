"""Margin and embedding loss modules around ``mininn.nn.functional.loss_margin``.

The arguments, ``reduction`` and the deprecated ``size_average``/``reduce``
included, mean what they mean in the function that each class docstring names,
and ``weight`` is kept as a buffer (as in ``loss.py``); a class documents only
its own checks at construction.
"""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from collections.abc import Callable

from mininn.nn.functional import loss_margin as F
from mininn.nn.modules.distance import PairwiseDistance
from mininn.nn.modules.loss import _Loss, _WeightedLoss
from mininn.tensor import Tensor

__all__ = [
    "CosineEmbeddingLoss",
    "HingeEmbeddingLoss",
    "MarginRankingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
]


class HingeEmbeddingLoss(_Loss):
    """``x`` for targets 1, ``max(0, margin - x)`` for targets -1; see
    ``mininn.nn.functional.hinge_embedding_loss``.
    """

    def __init__(
        self,
        margin: float = 1.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class _PairMarginLoss(_Loss):
    """A loss of two inputs and a target of 1s and -1s, with a ``margin`` (default 0.0)."""

    def __init__(
        self,
        margin: float = 0.0,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class MarginRankingLoss(_PairMarginLoss):
    """``max(0, -y * (x1 - x2) + margin)``; see ``mininn.nn.functional.margin_ranking_loss``."""

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss; see ``mininn.nn.functional.soft_margin_loss``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over -1-terminated index lists; see
    ``mininn.nn.functional.multilabel_margin_loss``.
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """One-versus-all logistic loss; see ``mininn.nn.functional.multilabel_soft_margin_loss``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss; see ``mininn.nn.functional.multi_margin_loss``.

    Raises:
        ValueError: ``p`` is not 1 or 2, or ``weight`` is not one-dimensional.
    """

    def __init__(
        self,
        p: int = 1,
        margin: float = 1.0,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(
                f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.ndim}D instead"
            )
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(
            input, target, p=self.p, margin=self.margin, weight=self.weight, reduction=self.reduction
        )


class CosineEmbeddingLoss(_PairMarginLoss):
    """``1 - cos`` for targets 1, ``max(0, cos - margin)`` for targets -1; see
    ``mininn.nn.functional.cosine_embedding_loss``.
    """

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with the ``p``-norm distance; see
    ``mininn.nn.functional.triplet_margin_loss``.

    Raises:
        ValueError: ``margin`` is not positive.
    """

    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(
            anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps, swap=self.swap,
            reduction=self.reduction,
        )


class TripletMarginWithDistanceLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with any distance; see
    ``mininn.nn.functional.triplet_margin_with_distance_loss``.

    The default ``distance_function`` is a ``PairwiseDistance()`` module, a child
    of this one (as in torch).

    Raises:
        ValueError: ``margin`` is not positive.
    """

    def __init__(
        self,
        *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0,
        swap: bool = False,
        reduction: str = "mean",
    ) -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function, margin=self.margin,
            swap=self.swap, reduction=self.reduction,
        )
