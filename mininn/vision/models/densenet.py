"""torchvision's DenseNet-BC family on mininn (DenseNet-121/161/169/201).

Module names, state-dict keys, constructor arguments and initialisation follow
torchvision 0.28 (``torchvision.models.densenet``). ``memory_efficient=True``
(checkpointing in torch) computes the same values here without recomputation.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import mininn
import mininn.nn.functional as F
from mininn import nn
from mininn.nn import init
from mininn.tensor import Tensor
from mininn.vision.models._builder_args import refuse_weights, weights_enum

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]

# torchvision's weights enums: files that name them import; builders refuse them (see _builder_args)
_V1 = ["IMAGENET1K_V1"]
DenseNet121_Weights = weights_enum("DenseNet121_Weights", _V1, "IMAGENET1K_V1", __name__)
DenseNet161_Weights = weights_enum("DenseNet161_Weights", _V1, "IMAGENET1K_V1", __name__)
DenseNet169_Weights = weights_enum("DenseNet169_Weights", _V1, "IMAGENET1K_V1", __name__)
DenseNet201_Weights = weights_enum("DenseNet201_Weights", _V1, "IMAGENET1K_V1", __name__)
__all__ += ["DenseNet121_Weights", "DenseNet161_Weights", "DenseNet169_Weights", "DenseNet201_Weights"]


class _DenseLayer(nn.Module):
    """BN-ReLU-1x1 conv to ``bn_size * growth_rate`` channels, BN-ReLU-3x3 conv to ``growth_rate``."""

    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int, drop_rate: float,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1,
                               bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: list[Tensor]) -> Tensor:
        """The bottleneck: the concatenated earlier features through norm1, relu1 and conv1."""
        return self.conv1(self.relu1(self.norm1(mininn.cat(inputs, 1))))

    def forward(self, input: Tensor | list[Tensor]) -> Tensor:
        prev_features = [input] if isinstance(input, Tensor) else list(input)
        bottleneck_output = self.bn_function(prev_features)
        new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    """``num_layers`` dense layers, each fed every earlier output; returns all of them concatenated."""

    _version = 2

    def __init__(self, num_layers: int, num_input_features: int, bn_size: int, growth_rate: int,
                 drop_rate: float, memory_efficient: bool = False) -> None:
        super().__init__()
        for i in range(num_layers):
            layer = _DenseLayer(num_input_features + i * growth_rate, growth_rate=growth_rate,
                                bn_size=bn_size, drop_rate=drop_rate, memory_efficient=memory_efficient)
            self.add_module(f"denselayer{i + 1}", layer)

    def forward(self, init_features: Tensor) -> Tensor:
        features = [init_features]
        for _, layer in self.items():
            features.append(layer(features))
        return mininn.cat(features, 1)


class _Transition(nn.Sequential):
    """BN, ReLU, 1x1 convolution and a 2x2 average pool between dense blocks."""

    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    """Densenet-BC: a 7x7 stem, dense blocks joined by transitions, a final norm and a linear classifier.

    Args:
        growth_rate: channels each dense layer adds (``k`` in the paper).
        block_config: dense layers per block.
        num_init_features: channels of the stem convolution.
        bn_size: the bottleneck has ``bn_size * growth_rate`` channels.
        drop_rate: dropout after each dense layer.
        num_classes: outputs of the classifier.
        memory_efficient: accepted for torchvision's signature; the values are the same.
    """

    def __init__(self, growth_rate: int = 32, block_config: tuple[int, ...] = (6, 12, 24, 16),
                 num_init_features: int = 64, bn_size: int = 4, drop_rate: float = 0, num_classes: int = 1000,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
        ]))
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(num_layers=num_layers, num_input_features=num_features, bn_size=bn_size,
                                growth_rate=growth_rate, drop_rate=drop_rate,
                                memory_efficient=memory_efficient)
            self.features.add_module(f"denseblock{i + 1}", block)
            num_features += num_layers * growth_rate
            if i != len(block_config) - 1:
                trans = _Transition(num_input_features=num_features, num_output_features=num_features // 2)
                self.features.add_module(f"transition{i + 1}", trans)
                num_features //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)
        self._init_weights()

    def _init_weights(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                init.constant_(m.weight, 1)
                init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                init.constant_(m.bias, 0)

    def forward(self, x: Tensor) -> Tensor:
        out = F.relu(self.features(x), inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.classifier(mininn.flatten(out, 1))


def _densenet(builder: str, growth_rate: int, block_config: tuple[int, int, int, int], num_init_features: int,
              weights: Any, kwargs: dict[str, Any]) -> DenseNet:
    refuse_weights(builder, weights, kwargs)
    return DenseNet(growth_rate, block_config, num_init_features, **kwargs)


def densenet121(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-121 (growth 32, blocks (6, 12, 24, 16), 64 stem channels); ``kwargs`` go to :class:`DenseNet`.

    Raises:
        ValueError: ``weights`` other than None (mininn does not download weights).
    """
    return _densenet("densenet121", 32, (6, 12, 24, 16), 64, weights, kwargs)


def densenet161(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-161 (growth 48, blocks (6, 12, 36, 24), 96 stem channels); see :func:`densenet121`."""
    return _densenet("densenet161", 48, (6, 12, 36, 24), 96, weights, kwargs)


def densenet169(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-169 (growth 32, blocks (6, 12, 32, 32)); see :func:`densenet121`."""
    return _densenet("densenet169", 32, (6, 12, 32, 32), 64, weights, kwargs)


def densenet201(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-201 (growth 32, blocks (6, 12, 48, 32)); see :func:`densenet121`."""
    return _densenet("densenet201", 32, (6, 12, 48, 32), 64, weights, kwargs)
