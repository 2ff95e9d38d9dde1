"""torchvision's ResNet family on mininn: ResNet, ResNeXt and Wide ResNet.

Module names, state-dict keys, constructor arguments and initialisation follow
torchvision 0.28 (``torchvision.models.resnet``), so a state dict saved from a
torchvision ResNet loads here and gives the same outputs. The bottleneck puts its
stride on the 3x3 convolution (ResNet v1.5), as torchvision does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mininn
from mininn import nn
from mininn.nn import init
from mininn.tensor import Tensor
from mininn.vision.models._builder_args import refuse_weights, weights_enum
from mininn.vision.models._utils import _ovewrite_named_param

__all__ = [
    "ResNet",
    "BasicBlock",
    "Bottleneck",
    "resnet18",
    "resnet34",
    "resnet50",
    "resnet101",
    "resnet152",
    "resnext50_32x4d",
    "resnext101_32x8d",
    "resnext101_64x4d",
    "wide_resnet50_2",
    "wide_resnet101_2",
]

# torchvision's weights enums: files that name them import; builders refuse them (see _builder_args)
_V1 = ["IMAGENET1K_V1"]
_V1_V2 = ["IMAGENET1K_V1", "IMAGENET1K_V2"]
ResNet18_Weights = weights_enum("ResNet18_Weights", _V1, "IMAGENET1K_V1", __name__)
ResNet34_Weights = weights_enum("ResNet34_Weights", _V1, "IMAGENET1K_V1", __name__)
ResNet50_Weights = weights_enum("ResNet50_Weights", _V1_V2, "IMAGENET1K_V2", __name__)
ResNet101_Weights = weights_enum("ResNet101_Weights", _V1_V2, "IMAGENET1K_V2", __name__)
ResNet152_Weights = weights_enum("ResNet152_Weights", _V1_V2, "IMAGENET1K_V2", __name__)
ResNeXt50_32X4D_Weights = weights_enum("ResNeXt50_32X4D_Weights", _V1_V2, "IMAGENET1K_V2", __name__)
ResNeXt101_32X8D_Weights = weights_enum("ResNeXt101_32X8D_Weights", _V1_V2, "IMAGENET1K_V2", __name__)
ResNeXt101_64X4D_Weights = weights_enum("ResNeXt101_64X4D_Weights", _V1, "IMAGENET1K_V1", __name__)
Wide_ResNet50_2_Weights = weights_enum("Wide_ResNet50_2_Weights", _V1_V2, "IMAGENET1K_V2", __name__)
Wide_ResNet101_2_Weights = weights_enum("Wide_ResNet101_2_Weights", _V1_V2, "IMAGENET1K_V2", __name__)
__all__ += ["ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights", "ResNet101_Weights",
            "ResNet152_Weights", "ResNeXt50_32X4D_Weights", "ResNeXt101_32X8D_Weights",
            "ResNeXt101_64X4D_Weights", "Wide_ResNet50_2_Weights", "Wide_ResNet101_2_Weights"]

NormLayer = Callable[..., nn.Module]


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1,
            dilation: int = 1) -> nn.Conv2d:
    """3x3 convolution, padded to keep the size at stride 1, without bias."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution without bias."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection (ResNet-18/34).

    Args:
        inplanes: input channels.
        planes: output channels.
        stride: stride of the first convolution.
        downsample: module applied to the input for the residual (None: identity).
        groups: must be 1.
        base_width: must be 64.
        dilation: must be 1.
        norm_layer: normalisation constructor (default ``nn.BatchNorm2d``).

    Raises:
        ValueError: ``groups != 1`` or ``base_width != 64``.
        NotImplementedError: ``dilation > 1``.
    """

    expansion: int = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: NormLayer | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)  # after the convolutions: hook order
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (strided, grouped, dilated), 1x1 expand by 4, with a residual connection.

    Args:
        inplanes: input channels.
        planes: bottleneck channels before ``expansion``; the block outputs ``planes * 4``.
        stride: stride of the 3x3 convolution.
        downsample: module applied to the input for the residual (None: identity).
        groups: groups of the 3x3 convolution (ResNeXt's cardinality).
        base_width: width per group; the 3x3 has ``int(planes * base_width / 64) * groups`` channels.
        dilation: dilation of the 3x3 convolution.
        norm_layer: normalisation constructor (default ``nn.BatchNorm2d``).
    """

    expansion: int = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: NormLayer | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)  # after the convolutions: hook order
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision's ResNet: a 7x7 stem, four stages of ``block``, global average pool, ``fc``.

    Args:
        block: ``BasicBlock`` or ``Bottleneck`` (or a class with their signature and ``expansion``).
        layers: blocks per stage (four ints).
        num_classes: outputs of ``fc``.
        zero_init_residual: start each block's last norm at weight 0, so blocks begin as identities.
        groups: groups of the bottleneck's 3x3 convolutions.
        width_per_group: channels per group (64 for ResNet, 4 or 8 for ResNeXt, 128 for Wide ResNet).
        replace_stride_with_dilation: for stages 2-4, dilate instead of striding (three bools).
        norm_layer: normalisation constructor (default ``nn.BatchNorm2d``).

    Raises:
        ValueError: ``replace_stride_with_dilation`` does not hold three values.
    """

    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int], num_classes: int = 1000,
                 zero_init_residual: bool = False, groups: int = 1, width_per_group: int = 64,
                 replace_stride_with_dilation: list[bool] | None = None,
                 norm_layer: NormLayer | None = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None "
                             f"or a 3-element tuple, got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        dilate = replace_stride_with_dilation
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=dilate[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=dilate[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=dilate[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        self._init_weights(zero_init_residual)

    def _init_weights(self, zero_init_residual: bool) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                init.constant_(m.weight, 1)
                init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                last = m.bn3 if isinstance(m, Bottleneck) else m.bn2 if isinstance(m, BasicBlock) else None
                if last is not None and getattr(last, "weight", None) is not None:
                    init.constant_(last.weight, 0)

    def _make_layer(self, block: type[BasicBlock | Bottleneck], planes: int, blocks: int, stride: int = 1,
                    dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))  # (N, 64, H/4, W/4)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))  # (N, 512 * expansion, H/32, W/32)
        x = mininn.flatten(self.avgpool(x), 1)
        return self.fc(x)

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def _resnet(builder: str, block: type[BasicBlock | Bottleneck], layers: list[int], weights: Any,
            kwargs: dict[str, Any]) -> ResNet:
    refuse_weights(builder, weights, kwargs)
    return ResNet(block, layers, **kwargs)


def resnet18(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-18 (BasicBlock, [2, 2, 2, 2]); ``kwargs`` go to :class:`ResNet`.

    Raises:
        ValueError: ``weights`` other than None (mininn does not download weights).
    """
    return _resnet("resnet18", BasicBlock, [2, 2, 2, 2], weights, kwargs)


def resnet34(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-34 (BasicBlock, [3, 4, 6, 3]); see :func:`resnet18`."""
    return _resnet("resnet34", BasicBlock, [3, 4, 6, 3], weights, kwargs)


def resnet50(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-50 (Bottleneck, [3, 4, 6, 3]); see :func:`resnet18`."""
    return _resnet("resnet50", Bottleneck, [3, 4, 6, 3], weights, kwargs)


def resnet101(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-101 (Bottleneck, [3, 4, 23, 3]); see :func:`resnet18`."""
    return _resnet("resnet101", Bottleneck, [3, 4, 23, 3], weights, kwargs)


def resnet152(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-152 (Bottleneck, [3, 8, 36, 3]); see :func:`resnet18`."""
    return _resnet("resnet152", Bottleneck, [3, 8, 36, 3], weights, kwargs)


def _grouped(builder: str, layers: list[int], groups: int, width: int, weights: Any,
             kwargs: dict[str, Any]) -> ResNet:
    refuse_weights(builder, weights, kwargs)
    _ovewrite_named_param(kwargs, "groups", groups)
    _ovewrite_named_param(kwargs, "width_per_group", width)
    return ResNet(Bottleneck, layers, **kwargs)


def resnext50_32x4d(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNeXt-50 32x4d (groups 32, width 4 per group); see :func:`resnet18`.

    Raises:
        ValueError: ``groups`` or ``width_per_group`` given with another value (torchvision's message).
    """
    return _grouped("resnext50_32x4d", [3, 4, 6, 3], 32, 4, weights, kwargs)


def resnext101_32x8d(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNeXt-101 32x8d; see :func:`resnext50_32x4d`."""
    return _grouped("resnext101_32x8d", [3, 4, 23, 3], 32, 8, weights, kwargs)


def resnext101_64x4d(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNeXt-101 64x4d; see :func:`resnext50_32x4d`."""
    return _grouped("resnext101_64x4d", [3, 4, 23, 3], 64, 4, weights, kwargs)


def _wide(builder: str, layers: list[int], weights: Any, kwargs: dict[str, Any]) -> ResNet:
    refuse_weights(builder, weights, kwargs)
    _ovewrite_named_param(kwargs, "width_per_group", 64 * 2)
    return ResNet(Bottleneck, layers, **kwargs)


def wide_resnet50_2(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """Wide ResNet-50-2 (bottlenecks twice as wide); see :func:`resnext50_32x4d`."""
    return _wide("wide_resnet50_2", [3, 4, 6, 3], weights, kwargs)


def wide_resnet101_2(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """Wide ResNet-101-2; see :func:`resnext50_32x4d`."""
    return _wide("wide_resnet101_2", [3, 4, 23, 3], weights, kwargs)
