"""``torchvision.models.regnet``: RegNetX and RegNetY (Radosavovic et al., 2020), torchvision's names.

``stem`` (3x3 stride 2), ``trunk_output.blockS.blockS-I`` (each with ``proj``, ``f.a``, ``f.b``,
``f.se``, ``f.c``), ``avgpool`` and ``fc``, as in torchvision 0.28. The per-stage widths come
from the quantised linear rule, computed in float32 as torchvision computes them.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from mininn import Tensor, nn
from mininn.vision.models._builder_args import refuse_weights, weights_enum
from mininn.vision.models._channels import make_divisible
from mininn.vision.ops.misc import Conv2dNormActivation, SqueezeExcitation

__all__ = [
    "RegNet_X_16GF_Weights",
    "RegNet_X_1_6GF_Weights",
    "RegNet_X_32GF_Weights",
    "RegNet_X_3_2GF_Weights",
    "RegNet_X_400MF_Weights",
    "RegNet_X_800MF_Weights",
    "RegNet_X_8GF_Weights",
    "RegNet_Y_128GF_Weights",
    "RegNet_Y_16GF_Weights",
    "RegNet_Y_1_6GF_Weights",
    "RegNet_Y_32GF_Weights",
    "RegNet_Y_3_2GF_Weights",
    "RegNet_Y_400MF_Weights",
    "RegNet_Y_800MF_Weights",
    "RegNet_Y_8GF_Weights",
    "RegNet",
    "BlockParams",
    "SimpleStemIN",
    "BottleneckTransform",
    "ResBottleneckBlock",
    "AnyStage",
    "regnet_y_400mf",
    "regnet_y_800mf",
    "regnet_y_1_6gf",
    "regnet_y_3_2gf",
    "regnet_y_8gf",
    "regnet_y_16gf",
    "regnet_y_32gf",
    "regnet_y_128gf",
    "regnet_x_400mf",
    "regnet_x_800mf",
    "regnet_x_1_6gf",
    "regnet_x_3_2gf",
    "regnet_x_8gf",
    "regnet_x_16gf",
    "regnet_x_32gf",
]


class SimpleStemIN(Conv2dNormActivation):
    """The ImageNet stem: 3x3 stride-2 convolution, norm, activation."""

    def __init__(
        self,
        width_in: int,
        width_out: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
    ) -> None:
        super().__init__(
            width_in,
            width_out,
            kernel_size=3,
            stride=2,
            norm_layer=norm_layer,
            activation_layer=activation_layer,
        )


class BottleneckTransform(nn.Sequential):
    """1x1 (``a``), grouped 3x3 (``b``), squeeze-excitation (``se``, when ``se_ratio``), 1x1 (``c``)."""

    def __init__(
        self,
        width_in: int,
        width_out: int,
        stride: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        group_width: int,
        bottleneck_multiplier: float,
        se_ratio: float | None,
    ) -> None:
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        w_b = int(round(width_out * bottleneck_multiplier))
        g = w_b // group_width
        layers["a"] = Conv2dNormActivation(
            width_in, w_b, kernel_size=1, stride=1, norm_layer=norm_layer, activation_layer=activation_layer
        )
        layers["b"] = Conv2dNormActivation(
            w_b,
            w_b,
            kernel_size=3,
            stride=stride,
            groups=g,
            norm_layer=norm_layer,
            activation_layer=activation_layer,
        )
        if se_ratio:
            # the squeeze width is relative to the block's input width
            layers["se"] = SqueezeExcitation(
                input_channels=w_b,
                squeeze_channels=int(round(se_ratio * width_in)),
                activation=activation_layer,
            )
        layers["c"] = Conv2dNormActivation(
            w_b, width_out, kernel_size=1, stride=1, norm_layer=norm_layer, activation_layer=None
        )
        super().__init__(layers)


class ResBottleneckBlock(nn.Module):
    """``activation(proj(x) + f(x))``; ``proj`` (1x1 conv + norm) only when the shape changes."""

    def __init__(
        self,
        width_in: int,
        width_out: int,
        stride: int,
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        group_width: int = 1,
        bottleneck_multiplier: float = 1.0,
        se_ratio: float | None = None,
    ) -> None:
        super().__init__()
        self.proj: nn.Module | None = None
        if width_in != width_out or stride != 1:
            self.proj = Conv2dNormActivation(
                width_in,
                width_out,
                kernel_size=1,
                stride=stride,
                norm_layer=norm_layer,
                activation_layer=None,
            )
        self.f = BottleneckTransform(
            width_in,
            width_out,
            stride,
            norm_layer,
            activation_layer,
            group_width,
            bottleneck_multiplier,
            se_ratio,
        )
        self.activation = activation_layer(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        if self.proj is not None:
            x = self.proj(x) + self.f(x)
        else:
            x = x + self.f(x)
        return self.activation(x)


class AnyStage(nn.Sequential):
    """``depth`` blocks of one output width, named ``block{stage_index}-{i}``; the first one strides."""

    def __init__(
        self,
        width_in: int,
        width_out: int,
        stride: int,
        depth: int,
        block_constructor: Callable[..., nn.Module],
        norm_layer: Callable[..., nn.Module],
        activation_layer: Callable[..., nn.Module],
        group_width: int,
        bottleneck_multiplier: float,
        se_ratio: float | None = None,
        stage_index: int = 0,
    ) -> None:
        super().__init__()
        for i in range(depth):
            block = block_constructor(
                width_in if i == 0 else width_out,
                width_out,
                stride if i == 0 else 1,
                norm_layer,
                activation_layer,
                group_width,
                bottleneck_multiplier,
                se_ratio,
            )
            self.add_module(f"block{stage_index}-{i}", block)


class BlockParams:
    """Per-stage depths, widths, group widths, bottleneck multipliers and strides of a RegNet."""

    def __init__(
        self,
        depths: list[int],
        widths: list[int],
        group_widths: list[int],
        bottleneck_multipliers: list[float],
        strides: list[int],
        se_ratio: float | None = None,
    ) -> None:
        self.depths = depths
        self.widths = widths
        self.group_widths = group_widths
        self.bottleneck_multipliers = bottleneck_multipliers
        self.strides = strides
        self.se_ratio = se_ratio

    @classmethod
    def from_init_params(
        cls,
        depth: int,
        w_0: int,
        w_a: float,
        w_m: float,
        group_width: int,
        bottleneck_multiplier: float = 1.0,
        se_ratio: float | None = None,
        **kwargs: Any,
    ) -> BlockParams:
        """The stages of the quantised linear rule.

        Block ``i`` has width ``w_0 * w_m**round(log(u_i / w_0) / log(w_m))`` with
        ``u_i = w_0 + w_a * i``, rounded to a multiple of 8; equal neighbours form a stage.

        Raises:
            ValueError: ``w_a < 0``, ``w_0 <= 0``, ``w_m <= 1`` or ``w_0`` not a multiple of 8.
        """
        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ValueError("Invalid RegNet settings")
        block_widths = _block_widths(depth, w_0, w_a, w_m)
        starts = [i for i, w in enumerate(block_widths) if i == 0 or w != block_widths[i - 1]]
        stage_widths = [block_widths[i] for i in starts]
        stage_depths = [end - start for start, end in zip(starts, starts[1:] + [len(block_widths)])]
        num_stages = len(stage_widths)
        multipliers = [bottleneck_multiplier] * num_stages
        stage_widths, group_widths = cls._adjust_widths_groups_compatibilty(
            stage_widths, multipliers, [group_width] * num_stages
        )
        return cls(
            depths=stage_depths,
            widths=stage_widths,
            group_widths=group_widths,
            bottleneck_multipliers=multipliers,
            strides=[2] * num_stages,
            se_ratio=se_ratio,
        )

    def _get_expanded_params(self) -> Any:
        return zip(self.widths, self.strides, self.depths, self.group_widths, self.bottleneck_multipliers)

    @staticmethod
    def _adjust_widths_groups_compatibilty(
        stage_widths: list[int], bottleneck_ratios: list[float], group_widths: list[int]
    ) -> tuple[list[int], list[int]]:
        """Widths whose bottleneck width is a multiple of the (at most as wide) group width."""
        widths = [int(w * b) for w, b in zip(stage_widths, bottleneck_ratios)]
        group_widths_min = [min(g, w_bot) for g, w_bot in zip(group_widths, widths)]
        ws_bot = [make_divisible(w_bot, g) for w_bot, g in zip(widths, group_widths_min)]
        return [int(w_bot / b) for w_bot, b in zip(ws_bot, bottleneck_ratios)], group_widths_min


def _block_widths(depth: int, w_0: int, w_a: float, w_m: float) -> list[int]:
    """Each block's width, in float32 arithmetic as torchvision's default-dtype tensors compute it."""
    f32 = np.float32
    widths_cont = np.arange(depth, dtype=f32) * f32(w_a) + f32(w_0)
    capacity = np.round(np.log(widths_cont / f32(w_0)) / f32(math.log(w_m)))
    quantised = np.round(f32(w_0) * np.power(f32(w_m), capacity) / f32(8)) * f32(8)
    return [int(w) for w in quantised.astype(np.int32)]


def _resnet_style_init(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
            nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.01)
            nn.init.zeros_(m.bias)


class RegNet(nn.Module):
    """RegNet: a stem, one :class:`AnyStage` per stage of ``block_params``, average pooling and ``fc``.

    Args:
        block_params: the stages.
        num_classes: outputs. Default 1000.
        stem_width: channels of the stem. Default 32.
        stem_type: the stem class. Default :class:`SimpleStemIN`.
        block_type: the block class. Default :class:`ResBottleneckBlock`.
        norm_layer: the norm class. Default ``nn.BatchNorm2d``.
        activation: the activation class. Default ``nn.ReLU``.
    """

    def __init__(
        self,
        block_params: BlockParams,
        num_classes: int = 1000,
        stem_width: int = 32,
        stem_type: Callable[..., nn.Module] | None = None,
        block_type: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        activation: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        stem_type = SimpleStemIN if stem_type is None else stem_type
        norm_layer = nn.BatchNorm2d if norm_layer is None else norm_layer
        block_type = ResBottleneckBlock if block_type is None else block_type
        activation = nn.ReLU if activation is None else activation
        self.stem = stem_type(3, stem_width, norm_layer, activation)
        current_width = stem_width
        blocks: list[tuple[str, nn.Module]] = []
        for i, (width_out, stride, depth, group_width, multiplier) in enumerate(
            block_params._get_expanded_params()
        ):
            stage = AnyStage(
                current_width,
                width_out,
                stride,
                depth,
                block_type,
                norm_layer,
                activation,
                group_width,
                multiplier,
                block_params.se_ratio,
                stage_index=i + 1,
            )
            blocks.append((f"block{i + 1}", stage))
            current_width = width_out
        self.trunk_output = nn.Sequential(OrderedDict(blocks))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features=current_width, out_features=num_classes)
        _resnet_style_init(self)

    def forward(self, x: Tensor) -> Tensor:
        x = self.trunk_output(self.stem(x))
        x = self.avgpool(x).flatten(start_dim=1)  # (N, last width)
        return self.fc(x)


# builder -> from_init_params arguments (RegNetY: squeeze-excitation ratio 0.25)
_CONFIGS: dict[str, dict[str, Any]] = {
    "regnet_y_400mf": dict(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25),
    "regnet_y_800mf": dict(depth=14, w_0=56, w_a=38.84, w_m=2.4, group_width=16, se_ratio=0.25),
    "regnet_y_1_6gf": dict(depth=27, w_0=48, w_a=20.71, w_m=2.65, group_width=24, se_ratio=0.25),
    "regnet_y_3_2gf": dict(depth=21, w_0=80, w_a=42.63, w_m=2.66, group_width=24, se_ratio=0.25),
    "regnet_y_8gf": dict(depth=17, w_0=192, w_a=76.82, w_m=2.19, group_width=56, se_ratio=0.25),
    "regnet_y_16gf": dict(depth=18, w_0=200, w_a=106.23, w_m=2.48, group_width=112, se_ratio=0.25),
    "regnet_y_32gf": dict(depth=20, w_0=232, w_a=115.89, w_m=2.53, group_width=232, se_ratio=0.25),
    "regnet_y_128gf": dict(depth=27, w_0=456, w_a=160.83, w_m=2.52, group_width=264, se_ratio=0.25),
    "regnet_x_400mf": dict(depth=22, w_0=24, w_a=24.48, w_m=2.54, group_width=16),
    "regnet_x_800mf": dict(depth=16, w_0=56, w_a=35.73, w_m=2.28, group_width=16),
    "regnet_x_1_6gf": dict(depth=18, w_0=80, w_a=34.01, w_m=2.25, group_width=24),
    "regnet_x_3_2gf": dict(depth=25, w_0=88, w_a=26.31, w_m=2.25, group_width=48),
    "regnet_x_8gf": dict(depth=23, w_0=80, w_a=49.56, w_m=2.88, group_width=120),
    "regnet_x_16gf": dict(depth=22, w_0=216, w_a=55.59, w_m=2.1, group_width=128),
    "regnet_x_32gf": dict(depth=23, w_0=320, w_a=69.86, w_m=2.0, group_width=168),
}


def _regnet(name: str, weights: Any, kwargs: dict[str, Any]) -> RegNet:
    refuse_weights(name, weights, kwargs)
    params = BlockParams.from_init_params(**_CONFIGS[name], **kwargs)
    norm_layer = kwargs.pop("norm_layer", partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
    return RegNet(params, norm_layer=norm_layer, **kwargs)


def regnet_y_400mf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetY-400MF with random weights; ``kwargs`` go to :class:`RegNet`.

    Raises:
        ValueError: ``weights`` is not None (mininn does not download weights).
    """
    return _regnet("regnet_y_400mf", weights, kwargs)


def regnet_y_800mf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetY-800MF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_y_800mf", weights, kwargs)


def regnet_y_1_6gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetY-1.6GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_y_1_6gf", weights, kwargs)


def regnet_y_3_2gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetY-3.2GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_y_3_2gf", weights, kwargs)


def regnet_y_8gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetY-8GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_y_8gf", weights, kwargs)


def regnet_y_16gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetY-16GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_y_16gf", weights, kwargs)


def regnet_y_32gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetY-32GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_y_32gf", weights, kwargs)


def regnet_y_128gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetY-128GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_y_128gf", weights, kwargs)


def regnet_x_400mf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetX-400MF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_x_400mf", weights, kwargs)


def regnet_x_800mf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetX-800MF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_x_800mf", weights, kwargs)


def regnet_x_1_6gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetX-1.6GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_x_1_6gf", weights, kwargs)


def regnet_x_3_2gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetX-3.2GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_x_3_2gf", weights, kwargs)


def regnet_x_8gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetX-8GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_x_8gf", weights, kwargs)


def regnet_x_16gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetX-16GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_x_16gf", weights, kwargs)


def regnet_x_32gf(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> RegNet:
    """RegNetX-32GF with random weights; as :func:`regnet_y_400mf`."""
    return _regnet("regnet_x_32gf", weights, kwargs)


# torchvision's names of pretrained weights (mininn holds none: see _builder_args)
RegNet_X_16GF_Weights = weights_enum(
    "RegNet_X_16GF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_X_1_6GF_Weights = weights_enum(
    "RegNet_X_1_6GF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_X_32GF_Weights = weights_enum(
    "RegNet_X_32GF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_X_3_2GF_Weights = weights_enum(
    "RegNet_X_3_2GF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_X_400MF_Weights = weights_enum(
    "RegNet_X_400MF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_X_800MF_Weights = weights_enum(
    "RegNet_X_800MF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_X_8GF_Weights = weights_enum(
    "RegNet_X_8GF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_Y_128GF_Weights = weights_enum(
    "RegNet_Y_128GF_Weights",
    ["IMAGENET1K_SWAG_E2E_V1", "IMAGENET1K_SWAG_LINEAR_V1"],
    "IMAGENET1K_SWAG_E2E_V1",
    __name__,
)
RegNet_Y_16GF_Weights = weights_enum(
    "RegNet_Y_16GF_Weights",
    ["IMAGENET1K_V1", "IMAGENET1K_V2", "IMAGENET1K_SWAG_E2E_V1", "IMAGENET1K_SWAG_LINEAR_V1"],
    "IMAGENET1K_V2",
    __name__,
)
RegNet_Y_1_6GF_Weights = weights_enum(
    "RegNet_Y_1_6GF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_Y_32GF_Weights = weights_enum(
    "RegNet_Y_32GF_Weights",
    ["IMAGENET1K_V1", "IMAGENET1K_V2", "IMAGENET1K_SWAG_E2E_V1", "IMAGENET1K_SWAG_LINEAR_V1"],
    "IMAGENET1K_V2",
    __name__,
)
RegNet_Y_3_2GF_Weights = weights_enum(
    "RegNet_Y_3_2GF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_Y_400MF_Weights = weights_enum(
    "RegNet_Y_400MF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_Y_800MF_Weights = weights_enum(
    "RegNet_Y_800MF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
RegNet_Y_8GF_Weights = weights_enum(
    "RegNet_Y_8GF_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
