"""Loss modules: thin wrappers that hold ``reduction`` (and class weights as buffers)
around the functions of ``mininn.nn.functional.loss``."""

from __future__ import annotations

from mininn.nn.functional import loss as F
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CrossEntropyLoss",
    "L1Loss",
    "MSELoss",
    "NLLLoss",
]


class _Loss(Module):
    """Base of all losses: resolves the deprecated ``size_average``/``reduce`` pair."""

    reduction: str

    def __init__(
        self, size_average: bool | None = None, reduce: bool | None = None, reduction: str = "mean"
    ) -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = F._legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with an optional per-class ``weight`` buffer (None when not given)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error; see ``mininn.nn.functional.l1_loss``.

    Args:
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error; see ``mininn.nn.functional.mse_loss``.

    Args:
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices; see ``mininn.nn.functional.nll_loss``.

    Args:
        weight: Optional ``(C)`` class weights, kept as the ``weight`` buffer.
        size_average, reduce: Deprecated; use ``reduction``.
        ignore_index: Target value that adds nothing. Default: -100.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.nll_loss(
            input, target, weight=self.weight, ignore_index=self.ignore_index,
            reduction=self.reduction,
        )


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of logits; see ``mininn.nn.functional.cross_entropy``.

    Args:
        weight: Optional ``(C)`` class weights, kept as the ``weight`` buffer.
        size_average, reduce: Deprecated; use ``reduction``.
        ignore_index: Target value that adds nothing. Default: -100.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
        label_smoothing: In ``[0, 1]``. Default: 0.0.
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.cross_entropy(
            input, target, weight=self.weight, ignore_index=self.ignore_index,
            reduction=self.reduction, label_smoothing=self.label_smoothing,
        )


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities; see ``mininn.nn.functional.binary_cross_entropy``.

    Args:
        weight: Optional weight broadcast to the losses, kept as a buffer.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits; see
    ``mininn.nn.functional.binary_cross_entropy_with_logits``.

    Args:
        weight: Optional weight broadcast to the losses, kept as a buffer.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
        pos_weight: Optional weight of positive examples (last dim), kept as a buffer.
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, pos_weight=self.pos_weight, reduction=self.reduction
        )
