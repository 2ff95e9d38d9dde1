"""``Dropout``: active in training mode only."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from mininn.nn import functional as F
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["Dropout"]


class Dropout(Module):
    """Zero each element with probability ``p`` in training and scale the rest by ``1/(1-p)``.

    In eval mode it is the identity. The mask comes from the global generator,
    so ``mininn.manual_seed`` reproduces it.

    Raises:
        ValueError: ``p`` outside ``[0, 1]``.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
