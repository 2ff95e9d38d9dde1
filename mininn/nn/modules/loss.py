"""Loss modules: thin wrappers that hold ``reduction`` (and class weights as buffers)
around the loss functions of ``mininn.nn.functional``.

A constructor takes torch's arguments, which mean what they mean in the function
that the class docstring names; the class documents only what is its own, such as
what it checks when built. A ``weight`` argument is kept as the ``weight`` buffer
(``_WeightedLoss``).

``reduction`` is ``"none"``, ``"mean"`` (default) or ``"sum"``. Where torch's
signature has the deprecated ``size_average`` and ``reduce``, either one, when
given, overrides ``reduction`` (with torch's rules).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

from mininn.nn.functional import loss as F
from mininn.nn.functional.loss_ctc import ctc_loss
from mininn.nn.functional.loss_linear import LinearCrossEntropyOptions, linear_cross_entropy
from mininn.nn.functional.loss_probabilistic import gaussian_nll_loss, kl_div, poisson_nll_loss
from mininn.nn.functional.loss_regression import huber_loss, smooth_l1_loss
from mininn.nn.modules.linear import Linear
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CTCLoss",
    "CrossEntropyLoss",
    "GaussianNLLLoss",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "LinearCrossEntropyLoss",
    "LinearCrossEntropyOptions",
    "MSELoss",
    "NLLLoss",
    "NLLLoss2d",
    "PoissonNLLLoss",
    "SmoothL1Loss",
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
    """A loss with an optional ``weight`` buffer (None when not given)."""

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
    """Mean absolute error; see ``mininn.nn.functional.l1_loss``. Arguments: ``reduction``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error; see ``mininn.nn.functional.mse_loss``. Arguments: ``reduction``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices; see ``mininn.nn.functional.nll_loss``."""

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
    """Cross-entropy of logits; see ``mininn.nn.functional.cross_entropy``."""

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
    """Binary cross-entropy of probabilities; see ``mininn.nn.functional.binary_cross_entropy``."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_WeightedLoss):
    """Binary cross-entropy of logits; see
    ``mininn.nn.functional.binary_cross_entropy_with_logits``.

    ``pos_weight`` is kept as a buffer too.
    """

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        pos_weight: Tensor | None = None,
    ) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, pos_weight=self.pos_weight, reduction=self.reduction
        )


class NLLLoss2d(NLLLoss):
    """Deprecated alias of ``NLLLoss`` (warns with torch's ``FutureWarning`` when built)."""

    def __init__(
        self,
        weight: Tensor | None = None,
        size_average: bool | None = None,
        ignore_index: int = -100,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        warnings.warn(
            "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and "
            "see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


# ---- regression --------------------------------------------------------------------------
class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error above; see ``mininn.nn.functional.smooth_l1_loss``."""

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        beta: float = 1.0,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta``, scaled absolute error above; see ``mininn.nn.functional.huber_loss``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return huber_loss(input, target, reduction=self.reduction, delta=self.delta)


# ---- probabilistic -----------------------------------------------------------------------
class KLDivLoss(_Loss):
    """Kullback-Leibler divergence; see ``mininn.nn.functional.kl_div``.

    ``reduction`` may also be ``"batchmean"`` (the true KL divergence); ``"mean"`` warns.
    """

    def __init__(
        self,
        size_average: bool | None = None,
        reduce: bool | None = None,
        reduction: str = "mean",
        log_target: bool = False,
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood; see ``mininn.nn.functional.poisson_nll_loss``."""

    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average: bool | None = None,
        eps: float = 1e-8,
        reduce: bool | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return poisson_nll_loss(
            log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
            reduction=self.reduction,
        )


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood; see ``mininn.nn.functional.gaussian_nll_loss``."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor | float) -> Tensor:  # noqa: A002
        return gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist Temporal Classification loss; see ``mininn.nn.functional.ctc_loss``."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(
        self,
        log_probs: Tensor,
        targets: Tensor,
        input_lengths: Tensor | Sequence[int],
        target_lengths: Tensor | Sequence[int],
    ) -> Tensor:
        return ctc_loss(
            log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
            self.zero_infinity,
        )


# ---- linear + cross-entropy --------------------------------------------------------------
class LinearCrossEntropyLoss(_WeightedLoss):
    """A ``Linear`` layer fused with ``CrossEntropyLoss``; see
    ``mininn.nn.functional.linear_cross_entropy``.

    Args:
        in_features: Size of each input sample.
        num_classes: Number of classes ``C``.
        out_features: ``(d1, ..., dK)`` of a K-dimensional loss. Default: ``()``.
        bias: Give the linear layer a bias. Default: False.
        device, dtype: Of the linear layer's parameters.
        reduction, weight, ignore_index, label_smoothing, options: As in the function;
            ``weight`` is kept as the ``weight`` buffer.

    The layer is ``self.linear``, of ``C * prod(out_features)`` outputs (torch
    stores it flat); ``forward`` reshapes it to ``(C, d1, ..., dK, in_features)``.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        device: Any = None,
        dtype: Any = None,
        reduction: str = "mean",
        weight: Tensor | None = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options: LinearCrossEntropyOptions | None = None,
    ) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if not 0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(
            in_features, math.prod(out_features, start=num_classes), bias=bias, device=device, dtype=dtype
        )
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        shape = (self.num_classes, *self.out_features)
        linear_weight = self.linear.weight.reshape(*shape, self.linear.in_features)
        linear_bias = None if self.linear.bias is None else self.linear.bias.reshape(*shape)
        return linear_cross_entropy(
            input, linear_weight, target, linear_bias=linear_bias, weight=self.weight,
            reduction=self.reduction, ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing, options=self.options,
        )

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
            f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
            f"label_smoothing={self.label_smoothing}, options={self.options}"
        )
