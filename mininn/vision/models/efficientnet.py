"""``torchvision.models.efficientnet``: EfficientNet B0-B7 and V2 S/M/L, with torchvision's names and keys.

``features.0`` is the stem, ``features.1`` .. one ``Sequential`` stage per configuration row
(``features.S.B.block``), the last entry of ``features`` the 1x1 head convolution, then
``avgpool`` and ``classifier.1``, as in torchvision 0.28.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import mininn
from mininn import Tensor, nn
from mininn.vision.models._builder_args import refuse_weights, weights_enum
from mininn.vision.models._channels import make_divisible
from mininn.vision.models.mobilenetv2 import init_mobile_weights
from mininn.vision.ops.misc import Conv2dNormActivation, SqueezeExcitation
from mininn.vision.ops.stochastic_depth import StochasticDepth

__all__ = [
    "EfficientNet_B0_Weights",
    "EfficientNet_B1_Weights",
    "EfficientNet_B2_Weights",
    "EfficientNet_B3_Weights",
    "EfficientNet_B4_Weights",
    "EfficientNet_B5_Weights",
    "EfficientNet_B6_Weights",
    "EfficientNet_B7_Weights",
    "EfficientNet_V2_L_Weights",
    "EfficientNet_V2_M_Weights",
    "EfficientNet_V2_S_Weights",
    "EfficientNet",
    "MBConv",
    "FusedMBConv",
    "MBConvConfig",
    "FusedMBConvConfig",
    "efficientnet_b0",
    "efficientnet_b1",
    "efficientnet_b2",
    "efficientnet_b3",
    "efficientnet_b4",
    "efficientnet_b5",
    "efficientnet_b6",
    "efficientnet_b7",
    "efficientnet_v2_s",
    "efficientnet_v2_m",
    "efficientnet_v2_l",
]


@dataclass
class _MBConvConfig:
    expand_ratio: float
    kernel: int
    stride: int
    input_channels: int
    out_channels: int
    num_layers: int
    block: Callable[..., nn.Module]

    @staticmethod
    def adjust_channels(channels: int, width_mult: float, min_value: int | None = None) -> int:
        """``channels * width_mult`` rounded to a multiple of 8."""
        return make_divisible(channels * width_mult, 8, min_value)


class MBConvConfig(_MBConvConfig):
    """A stage of MBConv blocks (EfficientNet's table 1), scaled by ``width_mult`` and ``depth_mult``."""

    def __init__(
        self,
        expand_ratio: float,
        kernel: int,
        stride: int,
        input_channels: int,
        out_channels: int,
        num_layers: int,
        width_mult: float = 1.0,
        depth_mult: float = 1.0,
        block: Callable[..., nn.Module] | None = None,
    ) -> None:
        input_channels = self.adjust_channels(input_channels, width_mult)
        out_channels = self.adjust_channels(out_channels, width_mult)
        num_layers = self.adjust_depth(num_layers, depth_mult)
        super().__init__(
            expand_ratio,
            kernel,
            stride,
            input_channels,
            out_channels,
            num_layers,
            MBConv if block is None else block,
        )

    @staticmethod
    def adjust_depth(num_layers: int, depth_mult: float) -> int:
        """``ceil(num_layers * depth_mult)``."""
        return int(math.ceil(num_layers * depth_mult))


class FusedMBConvConfig(_MBConvConfig):
    """A stage of FusedMBConv blocks (EfficientNetV2's table 4)."""

    def __init__(
        self,
        expand_ratio: float,
        kernel: int,
        stride: int,
        input_channels: int,
        out_channels: int,
        num_layers: int,
        block: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__(
            expand_ratio,
            kernel,
            stride,
            input_channels,
            out_channels,
            num_layers,
            FusedMBConv if block is None else block,
        )


class MBConv(nn.Module):
    """Expand (1x1), depthwise, squeeze-excitation, project (1x1); stochastic-depth residual if shapes allow.

    Raises:
        ValueError: a stride outside 1..2.
    """

    def __init__(
        self,
        cnf: MBConvConfig,
        stochastic_depth_prob: float,
        norm_layer: Callable[..., nn.Module],
        se_layer: Callable[..., nn.Module] = SqueezeExcitation,
    ) -> None:
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        layers: list[nn.Module] = []
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded != cnf.input_channels:
            layers.append(
                Conv2dNormActivation(
                    cnf.input_channels,
                    expanded,
                    kernel_size=1,
                    norm_layer=norm_layer,
                    activation_layer=nn.SiLU,
                )
            )
        layers.append(
            Conv2dNormActivation(
                expanded,
                expanded,
                kernel_size=cnf.kernel,
                stride=cnf.stride,
                groups=expanded,
                norm_layer=norm_layer,
                activation_layer=nn.SiLU,
            )
        )
        squeeze_channels = max(1, cnf.input_channels // 4)
        layers.append(se_layer(expanded, squeeze_channels, activation=partial(nn.SiLU, inplace=True)))
        layers.append(
            Conv2dNormActivation(
                expanded, cnf.out_channels, kernel_size=1, norm_layer=norm_layer, activation_layer=None
            )
        )
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += input
        return result


class FusedMBConv(nn.Module):
    """Fused expand (kxk) and project (1x1), or one kxk convolution when there is no expansion.

    Raises:
        ValueError: a stride outside 1..2.
    """

    def __init__(
        self, cnf: FusedMBConvConfig, stochastic_depth_prob: float, norm_layer: Callable[..., nn.Module]
    ) -> None:
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        layers: list[nn.Module] = []
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded != cnf.input_channels:
            layers.append(
                Conv2dNormActivation(
                    cnf.input_channels,
                    expanded,
                    kernel_size=cnf.kernel,
                    stride=cnf.stride,
                    norm_layer=norm_layer,
                    activation_layer=nn.SiLU,
                )
            )
            layers.append(
                Conv2dNormActivation(
                    expanded, cnf.out_channels, kernel_size=1, norm_layer=norm_layer, activation_layer=None
                )
            )
        else:
            layers.append(
                Conv2dNormActivation(
                    cnf.input_channels,
                    cnf.out_channels,
                    kernel_size=cnf.kernel,
                    stride=cnf.stride,
                    norm_layer=norm_layer,
                    activation_layer=nn.SiLU,
                )
            )
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += input
        return result


def _uniform_linear(m: nn.Linear) -> None:
    init_range = 1.0 / math.sqrt(m.out_features)
    nn.init.uniform_(m.weight, -init_range, init_range)
    nn.init.zeros_(m.bias)


class EfficientNet(nn.Module):
    """EfficientNet V1 (Tan & Le, 2019) and V2 (Tan & Le, 2021).

    Args:
        inverted_residual_setting: one config per stage (MBConvConfig or FusedMBConvConfig).
        dropout: dropout before the classifier.
        stochastic_depth_prob: the last block's drop probability (earlier blocks scale linearly). Default 0.2.
        num_classes: outputs. Default 1000.
        norm_layer: the norm class. Default ``nn.BatchNorm2d``.
        last_channel: channels of the head convolution; default 4x the last stage's.

    Raises:
        ValueError: an empty setting. TypeError: entries that are not MBConv configs.
    """

    def __init__(
        self,
        inverted_residual_setting: Sequence[MBConvConfig | FusedMBConvConfig],
        dropout: float,
        stochastic_depth_prob: float = 0.2,
        num_classes: int = 1000,
        norm_layer: Callable[..., nn.Module] | None = None,
        last_channel: int | None = None,
    ) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not (
            isinstance(inverted_residual_setting, Sequence)
            and all(isinstance(s, _MBConvConfig) for s in inverted_residual_setting)
        ):
            raise TypeError("The inverted_residual_setting should be List[MBConvConfig]")
        norm_layer = nn.BatchNorm2d if norm_layer is None else norm_layer
        layers: list[nn.Module] = [
            Conv2dNormActivation(
                3,
                inverted_residual_setting[0].input_channels,
                kernel_size=3,
                stride=2,
                norm_layer=norm_layer,
                activation_layer=nn.SiLU,
            )
        ]
        layers.extend(_stages(inverted_residual_setting, stochastic_depth_prob, norm_layer))
        lastconv_input = inverted_residual_setting[-1].out_channels
        lastconv_output = last_channel if last_channel is not None else 4 * lastconv_input
        layers.append(
            Conv2dNormActivation(
                lastconv_input,
                lastconv_output,
                kernel_size=1,
                norm_layer=norm_layer,
                activation_layer=nn.SiLU,
            )
        )
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout, inplace=True), nn.Linear(lastconv_output, num_classes)
        )
        init_mobile_weights(self, _uniform_linear)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.avgpool(self.features(x))  # (N, C, 1, 1)
        return self.classifier(mininn.flatten(x, 1))

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def _stages(
    setting: Sequence[_MBConvConfig], stochastic_depth_prob: float, norm_layer: Callable[..., nn.Module]
) -> list[nn.Module]:
    """One ``Sequential`` per config; the drop probability grows with the block's index over all blocks."""
    total_blocks = sum(cnf.num_layers for cnf in setting)
    block_id = 0
    stages: list[nn.Module] = []
    for cnf in setting:
        stage: list[nn.Module] = []
        for _ in range(cnf.num_layers):
            block_cnf = copy.copy(cnf)
            if stage:  # every block after a stage's first keeps the width and stride 1
                block_cnf.input_channels = block_cnf.out_channels
                block_cnf.stride = 1
            sd_prob = stochastic_depth_prob * float(block_id) / total_blocks
            stage.append(block_cnf.block(block_cnf, sd_prob, norm_layer))
            block_id += 1
        stages.append(nn.Sequential(*stage))
    return stages


def _v1_setting(width_mult: float, depth_mult: float) -> list[_MBConvConfig]:
    conf = partial(MBConvConfig, width_mult=width_mult, depth_mult=depth_mult)
    return [
        conf(1, 3, 1, 32, 16, 1),
        conf(6, 3, 2, 16, 24, 2),
        conf(6, 5, 2, 24, 40, 2),
        conf(6, 3, 2, 40, 80, 3),
        conf(6, 5, 1, 80, 112, 3),
        conf(6, 5, 2, 112, 192, 4),
        conf(6, 3, 1, 192, 320, 1),
    ]


# expand_ratio, kernel, stride, input_channels, out_channels, num_layers; F = FusedMBConv, M = MBConv
_V2_ROWS: dict[str, list[tuple[str, int, int, int, int, int, int]]] = {
    "s": [
        ("F", 1, 3, 1, 24, 24, 2),
        ("F", 4, 3, 2, 24, 48, 4),
        ("F", 4, 3, 2, 48, 64, 4),
        ("M", 4, 3, 2, 64, 128, 6),
        ("M", 6, 3, 1, 128, 160, 9),
        ("M", 6, 3, 2, 160, 256, 15),
    ],
    "m": [
        ("F", 1, 3, 1, 24, 24, 3),
        ("F", 4, 3, 2, 24, 48, 5),
        ("F", 4, 3, 2, 48, 80, 5),
        ("M", 4, 3, 2, 80, 160, 7),
        ("M", 6, 3, 1, 160, 176, 14),
        ("M", 6, 3, 2, 176, 304, 18),
        ("M", 6, 3, 1, 304, 512, 5),
    ],
    "l": [
        ("F", 1, 3, 1, 32, 32, 4),
        ("F", 4, 3, 2, 32, 64, 7),
        ("F", 4, 3, 2, 64, 96, 7),
        ("M", 4, 3, 2, 96, 192, 10),
        ("M", 6, 3, 1, 192, 224, 19),
        ("M", 6, 3, 2, 224, 384, 25),
        ("M", 6, 3, 1, 384, 640, 7),
    ],
}


def _v2_setting(size: str) -> list[_MBConvConfig]:
    return [(FusedMBConvConfig if kind == "F" else MBConvConfig)(*row) for kind, *row in _V2_ROWS[size]]


def _efficientnet_conf(arch: str, **kwargs: Any) -> tuple[list[_MBConvConfig], int | None]:
    """torchvision's ``_efficientnet_conf``: the stages of ``arch`` and its head width (None: 4x the last).

    ``efficientnet_b*`` needs ``width_mult`` and ``depth_mult`` in ``kwargs``.

    Raises:
        ValueError: an unknown ``arch``.
    """
    if arch.startswith("efficientnet_b"):
        return _v1_setting(kwargs.pop("width_mult"), kwargs.pop("depth_mult")), None
    for size in ("s", "m", "l"):
        if arch.startswith(f"efficientnet_v2_{size}"):
            return _v2_setting(size), 1280
    raise ValueError(f"Unsupported model type {arch}")


# builder -> (width_mult, depth_mult, default dropout, BatchNorm eps/momentum overrides)
_V1 = {
    "efficientnet_b0": (1.0, 1.0, 0.2, {}),
    "efficientnet_b1": (1.0, 1.1, 0.2, {}),
    "efficientnet_b2": (1.1, 1.2, 0.3, {}),
    "efficientnet_b3": (1.2, 1.4, 0.3, {}),
    "efficientnet_b4": (1.4, 1.8, 0.4, {}),
    "efficientnet_b5": (1.6, 2.2, 0.4, {"eps": 0.001, "momentum": 0.01}),
    "efficientnet_b6": (1.8, 2.6, 0.5, {"eps": 0.001, "momentum": 0.01}),
    "efficientnet_b7": (2.0, 3.1, 0.5, {"eps": 0.001, "momentum": 0.01}),
}
_V2_DROPOUT = {"efficientnet_v2_s": 0.2, "efficientnet_v2_m": 0.3, "efficientnet_v2_l": 0.4}


def _build_v1(name: str, weights: Any, kwargs: dict[str, Any]) -> EfficientNet:
    refuse_weights(name, weights, kwargs)
    width, depth, dropout, bn = _V1[name]
    if bn:
        kwargs = {"norm_layer": partial(nn.BatchNorm2d, **bn), **kwargs}
    return EfficientNet(
        _v1_setting(width, depth), kwargs.pop("dropout", dropout), last_channel=None, **kwargs
    )


def _build_v2(name: str, weights: Any, kwargs: dict[str, Any]) -> EfficientNet:
    refuse_weights(name, weights, kwargs)
    kwargs = {"norm_layer": partial(nn.BatchNorm2d, eps=1e-03), **kwargs}
    dropout = kwargs.pop("dropout", _V2_DROPOUT[name])
    return EfficientNet(_v2_setting(name[-1]), dropout, last_channel=1280, **kwargs)


def efficientnet_b0(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNet-B0 with random weights; ``kwargs`` go to :class:`EfficientNet`.

    Raises:
        ValueError: ``weights`` is not None (mininn does not download weights).
    """
    return _build_v1("efficientnet_b0", weights, kwargs)


def efficientnet_b1(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNet-B1 with random weights; as :func:`efficientnet_b0`."""
    return _build_v1("efficientnet_b1", weights, kwargs)


def efficientnet_b2(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNet-B2 with random weights; as :func:`efficientnet_b0`."""
    return _build_v1("efficientnet_b2", weights, kwargs)


def efficientnet_b3(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNet-B3 with random weights; as :func:`efficientnet_b0`."""
    return _build_v1("efficientnet_b3", weights, kwargs)


def efficientnet_b4(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNet-B4 with random weights; as :func:`efficientnet_b0`."""
    return _build_v1("efficientnet_b4", weights, kwargs)


def efficientnet_b5(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNet-B5 with random weights (BatchNorm eps 0.001, momentum 0.01); see efficientnet_b0."""
    return _build_v1("efficientnet_b5", weights, kwargs)


def efficientnet_b6(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNet-B6 with random weights (BatchNorm eps 0.001, momentum 0.01); see efficientnet_b0."""
    return _build_v1("efficientnet_b6", weights, kwargs)


def efficientnet_b7(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNet-B7 with random weights (BatchNorm eps 0.001, momentum 0.01); see efficientnet_b0."""
    return _build_v1("efficientnet_b7", weights, kwargs)


def efficientnet_v2_s(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNetV2-S with random weights (BatchNorm eps 0.001); ``kwargs`` go to :class:`EfficientNet`.

    Raises:
        ValueError: ``weights`` is not None (mininn does not download weights).
    """
    return _build_v2("efficientnet_v2_s", weights, kwargs)


def efficientnet_v2_m(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNetV2-M with random weights; as :func:`efficientnet_v2_s`."""
    return _build_v2("efficientnet_v2_m", weights, kwargs)


def efficientnet_v2_l(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> EfficientNet:
    """EfficientNetV2-L with random weights; as :func:`efficientnet_v2_s`."""
    return _build_v2("efficientnet_v2_l", weights, kwargs)


# torchvision's names of pretrained weights (mininn holds none: see _builder_args)
EfficientNet_B0_Weights = weights_enum(
    "EfficientNet_B0_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
EfficientNet_B1_Weights = weights_enum(
    "EfficientNet_B1_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
EfficientNet_B2_Weights = weights_enum(
    "EfficientNet_B2_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
EfficientNet_B3_Weights = weights_enum(
    "EfficientNet_B3_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
EfficientNet_B4_Weights = weights_enum(
    "EfficientNet_B4_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
EfficientNet_B5_Weights = weights_enum(
    "EfficientNet_B5_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
EfficientNet_B6_Weights = weights_enum(
    "EfficientNet_B6_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
EfficientNet_B7_Weights = weights_enum(
    "EfficientNet_B7_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
EfficientNet_V2_L_Weights = weights_enum(
    "EfficientNet_V2_L_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
EfficientNet_V2_M_Weights = weights_enum(
    "EfficientNet_V2_M_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
EfficientNet_V2_S_Weights = weights_enum(
    "EfficientNet_V2_S_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__
)
