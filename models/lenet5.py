"""``lenet5``: LeNet-5 as in PyTorch's "Neural Networks" tutorial (``conv1``, ``conv2``, ``fc1``-``fc3``).

With ``padding=2`` on ``conv1`` it takes 28x28 MNIST digits; with ``padding=0``, the
paper's 32x32 input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import mininn.nn.functional as F
from mininn import Tensor, nn
from models.config import require
from models.image_classifier import image_classifier
from models.registry import register

__all__ = ["LeNet5", "LeNet5Config"]


@dataclass(frozen=True)
class LeNet5Config:
    in_channels: int = 1  # 1 for grey digits
    image_size: int = 28  # side of the square input
    padding: int = 2  # of conv1: 2 keeps 28x28 at 28x28, as the paper's 32x32 with 0
    num_classes: int = 10  # outputs of fc3
    activation: Literal["relu", "tanh"] = "relu"  # after each convolution and fc1, fc2

    def __post_init__(self) -> None:
        require(self.in_channels > 0, "in_channels", self.in_channels, "a positive integer")
        require(self.padding >= 0, "padding", self.padding, "a non-negative integer")
        require(self.num_classes > 0, "num_classes", self.num_classes, "a positive integer")
        require(_feature_side(self) >= 1, "image_size", self.image_size,
                f"an integer of at least {16 - 2 * self.padding} with padding={self.padding}")


def _feature_side(config: LeNet5Config) -> int:
    """Side of conv2's pooled output: (S + 2p - 4) // 2 - 4, halved."""
    return ((config.image_size + 2 * config.padding - 4) // 2 - 4) // 2


class LeNet5(nn.Module):
    """conv(5x5) -> pool -> conv(5x5) -> pool -> fc 120 -> fc 84 -> fc num_classes."""

    def __init__(self, config: LeNet5Config) -> None:
        super().__init__()
        self.config = config
        self.conv1 = nn.Conv2d(config.in_channels, 6, 5, padding=config.padding)
        self.conv2 = nn.Conv2d(6, 16, 5)
        side = _feature_side(config)
        self.fc1 = nn.Linear(16 * side * side, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, config.num_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = F.max_pool2d(self._act(self.conv1(x)), 2)  # (B, 6, 14, 14) for 28x28 input
        x = F.max_pool2d(self._act(self.conv2(x)), 2)  # (B, 16, 5, 5)
        x = x.flatten(1)  # (B, 400)
        x = self._act(self.fc1(x))  # (B, 120)
        x = self._act(self.fc2(x))  # (B, 84)
        return self.fc3(x)  # (B, num_classes)

    def _act(self, x: Tensor) -> Tensor:
        return x.relu() if self.config.activation == "relu" else x.tanh()


ARCHITECTURE = register(
    image_classifier(
        "lenet5",
        LeNet5Config,
        LeNet5,
        description="LeNet-5 (PyTorch tutorial layout), 28x28 digits by default",
    )
)
