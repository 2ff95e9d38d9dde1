"""torchvision's ``FrozenBatchNorm2d``: batch norm with fixed statistics and affine values (all buffers)."""

from __future__ import annotations

from typing import Any

import mininn
from mininn import nn
from mininn.tensor import Tensor

__all__ = ["FrozenBatchNorm2d"]


class FrozenBatchNorm2d(nn.Module):
    """``x * weight / sqrt(running_var + eps) + (bias - running_mean * scale)`` per channel, never updated.

    ``weight``, ``bias``, ``running_mean`` and ``running_var`` are buffers (no gradients, saved in the
    state dict); a ``num_batches_tracked`` entry from a ``BatchNorm2d`` checkpoint is dropped on load.

    Args:
        num_features: channels ``C`` of an ``(N, C, H, W)`` input.
        eps: added to the variance for numerical stability.
    """

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", mininn.ones(num_features))
        self.register_buffer("bias", mininn.zeros(num_features))
        self.register_buffer("running_mean", mininn.zeros(num_features))
        self.register_buffer("running_var", mininn.ones(num_features))

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, local_metadata: dict[str, Any],
                              strict: bool, missing_keys: list[str], unexpected_keys: list[str],
                              error_msgs: list[str]) -> None:
        state_dict.pop(prefix + "num_batches_tracked", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def forward(self, x: Tensor) -> Tensor:
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        return x * scale + (b - rm * scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"
