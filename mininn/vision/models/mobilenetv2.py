"""``torchvision.models.mobilenetv2``: MobileNetV2 with torchvision's module names and state-dict keys.

``features.0`` is the stem (``Conv2dNormActivation``), ``features.1`` .. ``features.17`` the
inverted residual blocks (``features.N.conv``), ``features.18`` the last 1x1 convolution and
``classifier.1`` the linear layer, as in torchvision 0.28.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mininn
from mininn import Tensor, nn
from mininn.vision.models._builder_args import refuse_weights, weights_enum
from mininn.vision.models._channels import make_divisible
from mininn.vision.ops.misc import Conv2dNormActivation

__all__ = ["MobileNet_V2_Weights", "MobileNetV2", "InvertedResidual", "mobilenet_v2", "init_mobile_weights"]

# t (expansion), c (output channels), n (blocks), s (first block's stride)
_DEFAULT_SETTING = [
    [1, 16, 1, 1],
    [6, 24, 2, 2],
    [6, 32, 3, 2],
    [6, 64, 4, 2],
    [6, 96, 3, 1],
    [6, 160, 3, 2],
    [6, 320, 1, 1],
]


def init_mobile_weights(model: nn.Module, init_linear: Callable[[nn.Linear], None]) -> None:
    """The mobile families' initialisation: convolutions kaiming-normal (fan out), norms 1/0.

    Biases of convolutions become zero; ``init_linear`` initialises each ``Linear``.
    """
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            init_linear(m)


def _normal_linear(m: nn.Linear) -> None:
    nn.init.normal_(m.weight, 0, 0.01)
    nn.init.zeros_(m.bias)


class InvertedResidual(nn.Module):
    """Expand (1x1, unless ``expand_ratio`` is 1), depthwise 3x3, project (1x1); residual when shapes allow.

    Args:
        inp: input channels.
        oup: output channels.
        stride: 1 or 2 (of the depthwise convolution).
        expand_ratio: hidden channels per input channel.
        norm_layer: the norm class. Default ``nn.BatchNorm2d``.

    Raises:
        ValueError: ``stride`` is not 1 or 2.
    """

    def __init__(
        self,
        inp: int,
        oup: int,
        stride: int,
        expand_ratio: int,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        self.stride = stride
        if stride not in [1, 2]:
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(
                Conv2dNormActivation(
                    inp, hidden_dim, kernel_size=1, norm_layer=norm_layer, activation_layer=nn.ReLU6
                )
            )
        layers.extend(
            [
                Conv2dNormActivation(
                    hidden_dim,
                    hidden_dim,
                    stride=stride,
                    groups=hidden_dim,
                    norm_layer=norm_layer,
                    activation_layer=nn.ReLU6,
                ),
                nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
                norm_layer(oup),
            ]
        )
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x: Tensor) -> Tensor:
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al., 2018).

    Args:
        num_classes: outputs of the classifier. Default 1000.
        width_mult: multiplies every layer's channels. Default 1.0.
        inverted_residual_setting: rows ``[t, c, n, s]``; default the paper's table.
        round_nearest: channels are rounded to multiples of this (1 turns rounding off). Default 8.
        block: the inverted residual class. Default :class:`InvertedResidual`.
        norm_layer: the norm class. Default ``nn.BatchNorm2d``.
        dropout: dropout before the classifier's linear layer. Default 0.2.

    Raises:
        ValueError: an empty setting, or rows that are not 4 long.
    """

    def __init__(
        self,
        num_classes: int = 1000,
        width_mult: float = 1.0,
        inverted_residual_setting: list[list[int]] | None = None,
        round_nearest: int = 8,
        block: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        dropout: float = 0.2,
    ) -> None:
        super().__init__()
        block = InvertedResidual if block is None else block
        norm_layer = nn.BatchNorm2d if norm_layer is None else norm_layer
        if inverted_residual_setting is None:
            inverted_residual_setting = _DEFAULT_SETTING
        if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
            raise ValueError(
                "inverted_residual_setting should be non-empty or a 4-element list, "
                f"got {inverted_residual_setting}"
            )
        input_channel = make_divisible(32 * width_mult, round_nearest)
        self.last_channel = make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features: list[nn.Module] = [
            Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer, activation_layer=nn.ReLU6)
        ]
        for t, c, n, s in inverted_residual_setting:
            output_channel = make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(
                    block(
                        input_channel,
                        output_channel,
                        s if i == 0 else 1,
                        expand_ratio=t,
                        norm_layer=norm_layer,
                    )
                )
                input_channel = output_channel
        features.append(
            Conv2dNormActivation(
                input_channel,
                self.last_channel,
                kernel_size=1,
                norm_layer=norm_layer,
                activation_layer=nn.ReLU6,
            )
        )
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        init_mobile_weights(self, _normal_linear)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.features(x)  # (N, last_channel, H/32, W/32)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = mininn.flatten(x, 1)  # (N, last_channel)
        return self.classifier(x)

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def mobilenet_v2(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> MobileNetV2:
    """MobileNetV2 with random weights (``weights=None``); ``kwargs`` go to :class:`MobileNetV2`.

    Raises:
        ValueError: ``weights`` is not None (mininn does not download weights).
    """
    refuse_weights("mobilenet_v2", weights, kwargs)
    return MobileNetV2(**kwargs)


# torchvision's names of pretrained weights (mininn holds none: see _builder_args)
MobileNet_V2_Weights = weights_enum(
    "MobileNet_V2_Weights", ["IMAGENET1K_V1", "IMAGENET1K_V2"], "IMAGENET1K_V2", __name__
)
