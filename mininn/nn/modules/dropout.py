"""Dropout layers: ``Dropout``, channel-wise ``Dropout1d/2d/3d`` and the SELU-preserving
``AlphaDropout``/``FeatureAlphaDropout``. All are active in training mode only."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from mininn.nn import functional as F
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """What every dropout layer holds: the probability ``p`` and ``inplace``.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training and scale the rest by ``1/(1-p)``.

    In eval mode it is the identity. The mask comes from the global generator,
    so ``mininn.manual_seed`` reproduces it.
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p`` in training."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of an ``(N, C, H, W)`` input with probability ``p`` in training
    (a 3-D input is read as ``(N, C, L)``, with torch's warning)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``
    in training."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps zero mean and unit variance (see ``F.alpha_dropout``)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (dim 1) (see ``F.feature_alpha_dropout``)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training)
