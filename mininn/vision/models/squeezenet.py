"""torchvision's SqueezeNet 1.0 and 1.1 on mininn.

Module names, state-dict keys, constructor arguments and initialisation follow
torchvision 0.28 (``torchvision.models.squeezenet``).
"""

from __future__ import annotations

from typing import Any

import mininn
from mininn import nn
from mininn.nn import init
from mininn.tensor import Tensor
from mininn.vision.models._builder_args import refuse_weights, weights_enum

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]

# torchvision's weights enums: files that name them import; builders refuse them (see _builder_args)
_V1 = ["IMAGENET1K_V1"]
SqueezeNet1_0_Weights = weights_enum("SqueezeNet1_0_Weights", _V1, "IMAGENET1K_V1", __name__)
SqueezeNet1_1_Weights = weights_enum("SqueezeNet1_1_Weights", _V1, "IMAGENET1K_V1", __name__)
__all__ += ["SqueezeNet1_0_Weights", "SqueezeNet1_1_Weights"]


class Fire(nn.Module):
    """A 1x1 squeeze convolution, then 1x1 and 3x3 expand convolutions concatenated (each with ReLU)."""

    def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int,
                 expand3x3_planes: int) -> None:
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return mininn.cat([self.expand1x1_activation(self.expand1x1(x)),
                           self.expand3x3_activation(self.expand3x3(x))], 1)


def _features_1_0() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 96, kernel_size=7, stride=2),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(96, 16, 64, 64),
        Fire(128, 16, 64, 64),
        Fire(128, 32, 128, 128),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(256, 32, 128, 128),
        Fire(256, 48, 192, 192),
        Fire(384, 48, 192, 192),
        Fire(384, 64, 256, 256),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(512, 64, 256, 256),
    )


def _features_1_1() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(3, 64, kernel_size=3, stride=2),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(64, 16, 64, 64),
        Fire(128, 16, 64, 64),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(128, 32, 128, 128),
        Fire(256, 32, 128, 128),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(256, 48, 192, 192),
        Fire(384, 48, 192, 192),
        Fire(384, 64, 256, 256),
        Fire(512, 64, 256, 256),
    )


class SqueezeNet(nn.Module):
    """SqueezeNet: fire modules, then dropout, a 1x1 convolution to the classes, ReLU, global average pool.

    Args:
        version: ``"1_0"`` or ``"1_1"``.
        num_classes: output channels of the final convolution.
        dropout: dropout probability before the final convolution.

    Raises:
        ValueError: another ``version``.
    """

    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes
        if version == "1_0":
            self.features = _features_1_0()
        elif version == "1_1":
            self.features = _features_1_1()
        else:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        x = self.classifier(self.features(x))  # (N, num_classes, 1, 1)
        return mininn.flatten(x, 1)


def _squeezenet(builder: str, version: str, weights: Any, kwargs: dict[str, Any]) -> SqueezeNet:
    refuse_weights(builder, weights, kwargs)
    return SqueezeNet(version, **kwargs)


def squeezenet1_0(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.0; ``kwargs`` go to :class:`SqueezeNet`.

    Raises:
        ValueError: ``weights`` other than None (mininn does not download weights).
    """
    return _squeezenet("squeezenet1_0", "1_0", weights, kwargs)


def squeezenet1_1(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.1 (2.4x less computation than 1.0, same accuracy); see :func:`squeezenet1_0`."""
    return _squeezenet("squeezenet1_1", "1_1", weights, kwargs)
