"""``resnet18`` / ``resnet34``: torchvision's ResNet with ``BasicBlock``, module for module.

Names follow torchvision (``conv1``, ``bn1``, ``layer1.0.conv1``, ``layer2.0.downsample.0``,
``fc``), so a torchvision ResNet state dict loads strictly and gives the same outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

from mininn import Tensor, nn
from models.config import require
from models.image_classifier import image_classifier
from models.registry import register

__all__ = ["BasicBlock", "ResNet", "ResNetConfig", "resnet18", "resnet34"]


@dataclass(frozen=True)
class ResNetConfig:
    num_classes: int = 1000  # outputs of fc
    in_channels: int = 3  # channels of the input image (torchvision: always 3)
    zero_init_residual: bool = False  # start each block's bn2 at zero (torchvision's option)
    image_size: int = 224  # side of the square input declared in the signature (at least 32)

    def __post_init__(self) -> None:
        require(self.num_classes > 0, "num_classes", self.num_classes, "a positive integer")
        require(self.in_channels > 0, "in_channels", self.in_channels, "a positive integer")
        require(self.image_size >= 32, "image_size", self.image_size, "an integer of at least 32")


def conv3x3(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """3x3 convolution with padding 1 and no bias."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution without bias (the downsample shortcut)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a residual shortcut."""

    expansion = 1

    def __init__(
        self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x  # (B, inplanes, H, W)
        out = self.relu(self.bn1(self.conv1(x)))  # (B, planes, H/stride, W/stride)
        out = self.bn2(self.conv2(out))  # (B, planes, H/stride, W/stride)
        if self.downsample is not None:
            identity = self.downsample(x)  # (B, planes, H/stride, W/stride)
        return self.relu(out + identity)


class ResNet(nn.Module):
    """Stem (7x7 conv, bn, relu, max-pool), four stages of blocks, global average pool, fc."""

    def __init__(self, layers: tuple[int, int, int, int], config: ResNetConfig) -> None:
        super().__init__()
        self.config = config
        self.inplanes = 64
        self.conv1 = nn.Conv2d(config.in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * BasicBlock.expansion, config.num_classes)
        self._init_weights(config.zero_init_residual)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * BasicBlock.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * BasicBlock.expansion, stride),
                nn.BatchNorm2d(planes * BasicBlock.expansion),
            )
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * BasicBlock.expansion
        layers += [BasicBlock(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def _init_weights(self, zero_init_residual: bool) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock):
                    nn.init.constant_(m.bn2.weight, 0)

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))  # (B, 64, H/4, W/4)
        x = self.layer1(x)  # (B, 64, H/4, W/4)
        x = self.layer2(x)  # (B, 128, H/8, W/8)
        x = self.layer3(x)  # (B, 256, H/16, W/16)
        x = self.layer4(x)  # (B, 512, H/32, W/32)
        x = self.avgpool(x).flatten(1)  # (B, 512)
        return self.fc(x)  # (B, num_classes)


def resnet18(config: ResNetConfig) -> ResNet:
    """ResNet-18: BasicBlock stages of 2, 2, 2, 2."""
    return ResNet((2, 2, 2, 2), config)


def resnet34(config: ResNetConfig) -> ResNet:
    """ResNet-34: BasicBlock stages of 3, 4, 6, 3."""
    return ResNet((3, 4, 6, 3), config)


for _name, _build in (("resnet18", resnet18), ("resnet34", resnet34)):
    register(image_classifier(_name, ResNetConfig, _build, description=f"torchvision {_name} (BasicBlock)"))
