"""Distance layers: ``PairwiseDistance`` and ``CosineSimilarity`` (wrappers over ``nn.functional``)."""

from __future__ import annotations

from mininn.nn import functional as F
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` along the last dim.

    Args:
        p: the norm degree (may be 0, negative or infinite). Default 2.
        eps: added to the difference to avoid a zero norm. Default 1e-6.
        keepdim: keep the reduced dim (size 1). Default False.
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim``, each norm clamped below at ``eps``.

    Args:
        dim: the dim holding the vectors. Default 1.
        eps: the smallest norm. Default 1e-8.
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
