"""``torchvision.models.mobilenetv3``: MobileNetV3 large and small, with torchvision's names and keys.

``features.0`` is the stem, ``features.1`` .. the inverted residual blocks (``features.N.block``),
the last entry of ``features`` the 1x1 expansion, then ``avgpool`` and ``classifier`` (``0`` and
``3`` are the linear layers), as in torchvision 0.28.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import mininn
from mininn import Tensor, nn
from mininn.vision.models._builder_args import refuse_weights, weights_enum
from mininn.vision.models._channels import make_divisible
from mininn.vision.models.mobilenetv2 import init_mobile_weights
from mininn.vision.ops.misc import Conv2dNormActivation
from mininn.vision.ops.misc import SqueezeExcitation as SElayer

__all__ = [
    "MobileNet_V3_Large_Weights",
    "MobileNet_V3_Small_Weights",
    "MobileNetV3",
    "InvertedResidual",
    "InvertedResidualConfig",
    "mobilenet_v3_large",
    "mobilenet_v3_small",
]


class InvertedResidualConfig:
    """One row of the MobileNetV3 paper's tables 1 and 2, channels scaled by ``width_mult``.

    Args:
        input_channels: channels in.
        kernel: depthwise kernel size.
        expanded_channels: channels after the expansion.
        out_channels: channels out.
        use_se: whether the block has squeeze-excitation.
        activation: ``"HS"`` (hardswish) or ``"RE"`` (ReLU).
        stride: depthwise stride.
        dilation: depthwise dilation.
        width_mult: channel multiplier.
    """

    def __init__(
        self,
        input_channels: int,
        kernel: int,
        expanded_channels: int,
        out_channels: int,
        use_se: bool,
        activation: str,
        stride: int,
        dilation: int,
        width_mult: float,
    ) -> None:
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels: int, width_mult: float) -> int:
        """``channels * width_mult`` rounded to a multiple of 8."""
        return make_divisible(channels * width_mult, 8)


_HARD_SE = partial(SElayer, scale_activation=nn.Hardsigmoid)


class InvertedResidual(nn.Module):
    """Expand (1x1), depthwise, squeeze-excitation (optional), project (1x1); residual when shapes allow.

    Args:
        cnf: the block's configuration.
        norm_layer: the norm class.
        se_layer: the squeeze-excitation class. Default ``SqueezeExcitation`` with a hard sigmoid.

    Raises:
        ValueError: a stride outside 1..2.
    """

    def __init__(
        self,
        cnf: InvertedResidualConfig,
        norm_layer: Callable[..., nn.Module],
        se_layer: Callable[..., nn.Module] = _HARD_SE,
    ) -> None:
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
        layers: list[nn.Module] = []
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(
                Conv2dNormActivation(
                    cnf.input_channels,
                    cnf.expanded_channels,
                    kernel_size=1,
                    norm_layer=norm_layer,
                    activation_layer=activation_layer,
                )
            )
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(
            Conv2dNormActivation(
                cnf.expanded_channels,
                cnf.expanded_channels,
                kernel_size=cnf.kernel,
                stride=stride,
                dilation=cnf.dilation,
                groups=cnf.expanded_channels,
                norm_layer=norm_layer,
                activation_layer=activation_layer,
            )
        )
        if cnf.use_se:
            squeeze_channels = make_divisible(cnf.expanded_channels // 4, 8)
            layers.append(se_layer(cnf.expanded_channels, squeeze_channels))
        layers.append(
            Conv2dNormActivation(
                cnf.expanded_channels,
                cnf.out_channels,
                kernel_size=1,
                norm_layer=norm_layer,
                activation_layer=None,
            )
        )
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result += input
        return result


def _normal_linear(m: nn.Linear) -> None:
    nn.init.normal_(m.weight, 0, 0.01)
    nn.init.zeros_(m.bias)


class MobileNetV3(nn.Module):
    """MobileNetV3 (Howard et al., 2019).

    Args:
        inverted_residual_setting: one :class:`InvertedResidualConfig` per block.
        last_channel: channels of the classifier's hidden layer.
        num_classes: outputs. Default 1000.
        block: the block class. Default :class:`InvertedResidual`.
        norm_layer: the norm class. Default ``BatchNorm2d(eps=0.001, momentum=0.01)``.
        dropout: dropout in the classifier. Default 0.2.
        **kwargs: ignored (torchvision's builders pass their own options through).

    Raises:
        ValueError: an empty setting. TypeError: entries that are not InvertedResidualConfig.
    """

    def __init__(
        self,
        inverted_residual_setting: list[InvertedResidualConfig],
        last_channel: int,
        num_classes: int = 1000,
        block: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        dropout: float = 0.2,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not (
            isinstance(inverted_residual_setting, Sequence)
            and all(isinstance(s, InvertedResidualConfig) for s in inverted_residual_setting)
        ):
            raise TypeError("The inverted_residual_setting should be List[InvertedResidualConfig]")
        block = InvertedResidual if block is None else block
        if norm_layer is None:
            norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        layers: list[nn.Module] = [
            Conv2dNormActivation(
                3,
                inverted_residual_setting[0].input_channels,
                kernel_size=3,
                stride=2,
                norm_layer=norm_layer,
                activation_layer=nn.Hardswish,
            )
        ]
        layers.extend(block(cnf, norm_layer) for cnf in inverted_residual_setting)
        lastconv_input_channels = inverted_residual_setting[-1].out_channels
        lastconv_output_channels = 6 * lastconv_input_channels
        layers.append(
            Conv2dNormActivation(
                lastconv_input_channels,
                lastconv_output_channels,
                kernel_size=1,
                norm_layer=norm_layer,
                activation_layer=nn.Hardswish,
            )
        )
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(lastconv_output_channels, last_channel),
            nn.Hardswish(inplace=True),
            nn.Dropout(p=dropout, inplace=True),
            nn.Linear(last_channel, num_classes),
        )
        init_mobile_weights(self, _normal_linear)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.avgpool(self.features(x))  # (N, 6 * last block channels, 1, 1)
        return self.classifier(mininn.flatten(x, 1))

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def _large_setting(
    conf: Callable[..., InvertedResidualConfig], reduce: int, dilation: int
) -> list[InvertedResidualConfig]:
    return [
        conf(16, 3, 16, 16, False, "RE", 1, 1),
        conf(16, 3, 64, 24, False, "RE", 2, 1),  # C1
        conf(24, 3, 72, 24, False, "RE", 1, 1),
        conf(24, 5, 72, 40, True, "RE", 2, 1),  # C2
        conf(40, 5, 120, 40, True, "RE", 1, 1),
        conf(40, 5, 120, 40, True, "RE", 1, 1),
        conf(40, 3, 240, 80, False, "HS", 2, 1),  # C3
        conf(80, 3, 200, 80, False, "HS", 1, 1),
        conf(80, 3, 184, 80, False, "HS", 1, 1),
        conf(80, 3, 184, 80, False, "HS", 1, 1),
        conf(80, 3, 480, 112, True, "HS", 1, 1),
        conf(112, 3, 672, 112, True, "HS", 1, 1),
        conf(112, 5, 672, 160 // reduce, True, "HS", 2, dilation),  # C4
        conf(160 // reduce, 5, 960 // reduce, 160 // reduce, True, "HS", 1, dilation),
        conf(160 // reduce, 5, 960 // reduce, 160 // reduce, True, "HS", 1, dilation),
    ]


def _small_setting(
    conf: Callable[..., InvertedResidualConfig], reduce: int, dilation: int
) -> list[InvertedResidualConfig]:
    return [
        conf(16, 3, 16, 16, True, "RE", 2, 1),  # C1
        conf(16, 3, 72, 24, False, "RE", 2, 1),  # C2
        conf(24, 3, 88, 24, False, "RE", 1, 1),
        conf(24, 5, 96, 40, True, "HS", 2, 1),  # C3
        conf(40, 5, 240, 40, True, "HS", 1, 1),
        conf(40, 5, 240, 40, True, "HS", 1, 1),
        conf(40, 5, 120, 48, True, "HS", 1, 1),
        conf(48, 5, 144, 48, True, "HS", 1, 1),
        conf(48, 5, 288, 96 // reduce, True, "HS", 2, dilation),  # C4
        conf(96 // reduce, 5, 576 // reduce, 96 // reduce, True, "HS", 1, dilation),
        conf(96 // reduce, 5, 576 // reduce, 96 // reduce, True, "HS", 1, dilation),
    ]


def _mobilenet_v3_conf(
    arch: str, width_mult: float = 1.0, reduced_tail: bool = False, dilated: bool = False, **kwargs: Any
) -> tuple[list[InvertedResidualConfig], int]:
    """The blocks and the classifier width of ``arch`` (``reduced_tail`` halves the last stage)."""
    reduce = 2 if reduced_tail else 1
    dilation = 2 if dilated else 1
    conf = partial(InvertedResidualConfig, width_mult=width_mult)
    if arch == "mobilenet_v3_large":
        return _large_setting(conf, reduce, dilation), InvertedResidualConfig.adjust_channels(
            1280 // reduce, width_mult
        )
    if arch == "mobilenet_v3_small":
        return _small_setting(conf, reduce, dilation), InvertedResidualConfig.adjust_channels(
            1024 // reduce, width_mult
        )
    raise ValueError(f"Unsupported model type {arch}")


def _mobilenet_v3(arch: str, weights: Any, kwargs: dict[str, Any]) -> MobileNetV3:
    refuse_weights(arch, weights, kwargs)
    setting, last_channel = _mobilenet_v3_conf(arch, **kwargs)
    return MobileNetV3(setting, last_channel, **kwargs)


def mobilenet_v3_large(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> MobileNetV3:
    """MobileNetV3-Large with random weights; ``kwargs`` (``width_mult``, ``reduced_tail``, ``dilated``,
    ``num_classes``, ``dropout``, ...) as torchvision's.

    Raises:
        ValueError: ``weights`` is not None (mininn does not download weights).
    """
    return _mobilenet_v3("mobilenet_v3_large", weights, kwargs)


def mobilenet_v3_small(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> MobileNetV3:
    """MobileNetV3-Small with random weights; ``kwargs`` as :func:`mobilenet_v3_large`.

    Raises:
        ValueError: ``weights`` is not None (mininn does not download weights).
    """
    return _mobilenet_v3("mobilenet_v3_small", weights, kwargs)


# torchvision's names of pretrained weights (mininn holds none: see _builder_args)
MobileNet_V3_Large_Weights = weights_enum(
    "MobileNet_V3_Large_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
MobileNet_V3_Small_Weights = weights_enum(
    "MobileNet_V3_Small_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
