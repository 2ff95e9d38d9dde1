"""``torchvision.ops.stochastic_depth``: randomly drop residual branches while training."""

from __future__ import annotations

import mininn
from mininn import Tensor, nn

__all__ = ["stochastic_depth", "StochasticDepth"]


def stochastic_depth(input: Tensor, p: float, mode: str, training: bool = True) -> Tensor:
    """Zero the whole input (``mode="batch"``) or whole rows of it (``"row"``) with probability ``p``.

    Survivors are scaled by ``1 / (1 - p)``. Outside training, or with ``p == 0``, the
    input comes back unchanged (the same tensor).

    Args:
        input: ``(N, ...)``; a row is one of the ``N``.
        p: drop probability, in [0, 1].
        mode: ``"batch"`` or ``"row"``.
        training: apply the drop. Default True.

    Raises:
        ValueError: ``p`` outside [0, 1] or an unknown ``mode`` (torchvision's messages).
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ["batch", "row"]:
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = mininn.empty(size, dtype=input.dtype, device=input.device).bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(nn.Module):
    """:func:`stochastic_depth` with ``p`` and ``mode`` fixed, applied only in training mode.

    Args:
        p: drop probability, in [0, 1].
        mode: ``"batch"`` or ``"row"``.
    """

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input: Tensor) -> Tensor:
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
