"""torchvision's VGG family on mininn (VGG-11/13/16/19, with and without batch norm).

Module names, state-dict keys, constructor arguments and initialisation follow
torchvision 0.28 (``torchvision.models.vgg``).
"""

from __future__ import annotations

from typing import Any

import mininn
from mininn import nn
from mininn.nn import init
from mininn.tensor import Tensor
from mininn.vision.models._builder_args import refuse_weights, weights_enum

__all__ = [
    "VGG",
    "make_layers",
    "vgg11",
    "vgg11_bn",
    "vgg13",
    "vgg13_bn",
    "vgg16",
    "vgg16_bn",
    "vgg19",
    "vgg19_bn",
]

# torchvision's weights enums: files that name them import; builders refuse them (see _builder_args)
_V1 = ["IMAGENET1K_V1"]
VGG11_Weights = weights_enum("VGG11_Weights", _V1, "IMAGENET1K_V1", __name__)
VGG11_BN_Weights = weights_enum("VGG11_BN_Weights", _V1, "IMAGENET1K_V1", __name__)
VGG13_Weights = weights_enum("VGG13_Weights", _V1, "IMAGENET1K_V1", __name__)
VGG13_BN_Weights = weights_enum("VGG13_BN_Weights", _V1, "IMAGENET1K_V1", __name__)
VGG16_Weights = weights_enum("VGG16_Weights", [*_V1, "IMAGENET1K_FEATURES"], "IMAGENET1K_V1", __name__)
VGG16_BN_Weights = weights_enum("VGG16_BN_Weights", _V1, "IMAGENET1K_V1", __name__)
VGG19_Weights = weights_enum("VGG19_Weights", _V1, "IMAGENET1K_V1", __name__)
VGG19_BN_Weights = weights_enum("VGG19_BN_Weights", _V1, "IMAGENET1K_V1", __name__)
__all__ += ["VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights", "VGG13_BN_Weights", "VGG16_Weights",
            "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights"]

# output channels of each 3x3 convolution; "M" a 2x2 max pool
cfgs: dict[str, list[str | int]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M",
          512, 512, 512, 512, "M"],
}


class VGG(nn.Module):
    """``features``, a 7x7 adaptive average pool, and three linear layers with ReLU and dropout.

    Args:
        features: the convolutional part (e.g. :func:`make_layers`), ending in 512 channels.
        num_classes: outputs of the last linear layer.
        init_weights: apply torchvision's initialisation (convolutions kaiming-normal fan-out,
            linear layers N(0, 0.01), biases 0, batch norms 1 and 0).
        dropout: dropout probability of the classifier.
    """

    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )
        if init_weights:
            self._init_weights()

    def _init_weights(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    init.constant_(m.bias, 0)
            elif isinstance(m, nn.BatchNorm2d):
                init.constant_(m.weight, 1)
                init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                init.normal_(m.weight, 0, 0.01)
                init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        x = self.avgpool(self.features(x))  # (N, 512, 7, 7)
        return self.classifier(mininn.flatten(x, 1))


def make_layers(cfg: list[str | int], batch_norm: bool = False) -> nn.Sequential:
    """VGG's convolutions from a config: an int is a 3x3 conv (+ batch norm) + ReLU, "M" a max pool."""
    layers: list[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        conv2d = nn.Conv2d(in_channels, int(v), kernel_size=3, padding=1)
        norm = [nn.BatchNorm2d(int(v))] if batch_norm else []
        layers += [conv2d, *norm, nn.ReLU(inplace=True)]
        in_channels = int(v)
    return nn.Sequential(*layers)


def _vgg(builder: str, cfg: str, batch_norm: bool, weights: Any, kwargs: dict[str, Any]) -> VGG:
    refuse_weights(builder, weights, kwargs)
    return VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)


def vgg11(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 (config "A"); ``kwargs`` go to :class:`VGG`.

    Raises:
        ValueError: ``weights`` other than None (mininn does not download weights).
    """
    return _vgg("vgg11", "A", False, weights, kwargs)


def vgg11_bn(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 with batch norm; see :func:`vgg11`."""
    return _vgg("vgg11_bn", "A", True, weights, kwargs)


def vgg13(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 (config "B"); see :func:`vgg11`."""
    return _vgg("vgg13", "B", False, weights, kwargs)


def vgg13_bn(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 with batch norm; see :func:`vgg11`."""
    return _vgg("vgg13_bn", "B", True, weights, kwargs)


def vgg16(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 (config "D"); see :func:`vgg11`."""
    return _vgg("vgg16", "D", False, weights, kwargs)


def vgg16_bn(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 with batch norm; see :func:`vgg11`."""
    return _vgg("vgg16_bn", "D", True, weights, kwargs)


def vgg19(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 (config "E"); see :func:`vgg11`."""
    return _vgg("vgg19", "E", False, weights, kwargs)


def vgg19_bn(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 with batch norm; see :func:`vgg11`."""
    return _vgg("vgg19_bn", "E", True, weights, kwargs)
