"""``simple_cnn``: the seeds' ``SimpleModel`` (two 5x5 convolutions with ReLU) plus a linear head.

State-dict keys: ``conv1.*``, ``conv2.*`` (as in ``SimpleModel``) and ``fc.*``.
"""

from __future__ import annotations

from dataclasses import dataclass

import mininn.nn.functional as F
from mininn import Tensor, nn
from models.config import require
from models.image_classifier import image_classifier
from models.registry import register

__all__ = ["SimpleCNNConfig", "SimpleModel"]


@dataclass(frozen=True)
class SimpleCNNConfig:
    in_channels: int = 1  # 1 for grey images
    image_size: int = 28  # side of the square input; each 5x5 convolution takes 4 off it
    num_classes: int = 10  # outputs of the head

    def __post_init__(self) -> None:
        require(self.in_channels > 0, "in_channels", self.in_channels, "a positive integer")
        require(self.image_size > 8, "image_size", self.image_size, "an integer greater than 8")
        require(self.num_classes > 0, "num_classes", self.num_classes, "a positive integer")


class SimpleModel(nn.Module):
    """``conv1 = Conv2d(C, 20, 5)``, ``conv2 = Conv2d(20, 20, 5)``, ReLU after each, then ``fc``."""

    def __init__(self, config: SimpleCNNConfig) -> None:
        super().__init__()
        self.config = config
        self.conv1 = nn.Conv2d(config.in_channels, 20, 5)
        self.conv2 = nn.Conv2d(20, 20, 5)
        side = config.image_size - 8
        self.fc = nn.Linear(20 * side * side, config.num_classes)

    def forward(self, x: Tensor) -> Tensor:
        x = F.relu(self.conv1(x))  # (B, 20, S-4, S-4)
        x = F.relu(self.conv2(x))  # (B, 20, S-8, S-8)
        return self.fc(x.flatten(1))  # (B, num_classes)


ARCHITECTURE = register(
    image_classifier(
        "simple_cnn",
        SimpleCNNConfig,
        SimpleModel,
        description="two 5x5 convolutions with ReLU and a linear classifier (the seeds' SimpleModel)",
    )
)
