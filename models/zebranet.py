"""``zebranet``: an AlexNet-style classifier in torchvision's AlexNet layout.

torchvision's ``features`` / ``avgpool`` / ``classifier`` are called ``convpart`` /
``avgpooling`` / ``classifier`` here, so keys read ``convpart.0.weight``,
``classifier.1.weight``, ... with the same indices as torchvision's.
"""

from __future__ import annotations

from dataclasses import dataclass

from mininn import Tensor, nn
from models.config import require
from models.image_classifier import image_classifier
from models.registry import register

__all__ = ["ZebraNet", "ZebraNetConfig"]


@dataclass(frozen=True)
class ZebraNetConfig:
    in_channels: int = 3  # RGB
    num_classes: int = 1000  # outputs of the last Linear
    dropout: float = 0.5  # before each of the first two Linear layers
    widths: tuple[int, int, int, int, int] = (64, 192, 384, 256, 256)  # channels of the 5 convolutions
    hidden_features: int = 4096  # width of the two hidden Linear layers
    image_size: int = 224  # side of the square input declared in the signature (at least 63)

    def __post_init__(self) -> None:
        require(self.in_channels > 0, "in_channels", self.in_channels, "a positive integer")
        require(self.num_classes > 0, "num_classes", self.num_classes, "a positive integer")
        require(0.0 <= self.dropout <= 1.0, "dropout", self.dropout, "a probability in [0, 1]")
        require(all(w > 0 for w in self.widths), "widths", self.widths, "5 positive integers")
        require(self.hidden_features > 0, "hidden_features", self.hidden_features, "a positive integer")
        require(self.image_size >= 63, "image_size", self.image_size, "an integer of at least 63")


class ZebraNet(nn.Module):
    """Five convolutions (ReLU, three max-pools), 6x6 adaptive average pool, three Linear layers."""

    def __init__(self, config: ZebraNetConfig) -> None:
        super().__init__()
        self.config = config
        c1, c2, c3, c4, c5 = config.widths
        self.convpart = nn.Sequential(
            nn.Conv2d(config.in_channels, c1, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(c1, c2, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(c2, c3, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(c3, c4, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(c4, c5, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpooling = nn.AdaptiveAvgPool2d((6, 6))
        hidden = config.hidden_features
        self.classifier = nn.Sequential(
            nn.Dropout(p=config.dropout),
            nn.Linear(c5 * 6 * 6, hidden),
            nn.ReLU(inplace=True),
            nn.Dropout(p=config.dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, config.num_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        x = self.convpart(x)  # (B, c5, 6, 6) for 224x224 input
        x = self.avgpooling(x)  # (B, c5, 6, 6)
        x = x.flatten(1)  # (B, c5 * 36)
        return self.classifier(x)  # (B, num_classes)


ARCHITECTURE = register(
    image_classifier(
        "zebranet",
        ZebraNetConfig,
        ZebraNet,
        description="AlexNet-style classifier (torchvision AlexNet layout)",
    )
)
