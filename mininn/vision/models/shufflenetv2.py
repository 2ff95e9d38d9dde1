"""torchvision's ShuffleNet V2 on mininn (x0.5, x1.0, x1.5, x2.0).

Module names, state-dict keys and constructor arguments follow torchvision 0.28
(``torchvision.models.shufflenetv2``); layers keep their default initialisation, as there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mininn
from mininn import nn
from mininn.tensor import Tensor
from mininn.vision.models._builder_args import refuse_weights, weights_enum

__all__ = [
    "ShuffleNetV2",
    "shufflenet_v2_x0_5",
    "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5",
    "shufflenet_v2_x2_0",
]

# torchvision's weights enums: files that name them import; builders refuse them (see _builder_args)
_V1 = ["IMAGENET1K_V1"]
ShuffleNet_V2_X0_5_Weights = weights_enum("ShuffleNet_V2_X0_5_Weights", _V1, "IMAGENET1K_V1", __name__)
ShuffleNet_V2_X1_0_Weights = weights_enum("ShuffleNet_V2_X1_0_Weights", _V1, "IMAGENET1K_V1", __name__)
ShuffleNet_V2_X1_5_Weights = weights_enum("ShuffleNet_V2_X1_5_Weights", _V1, "IMAGENET1K_V1", __name__)
ShuffleNet_V2_X2_0_Weights = weights_enum("ShuffleNet_V2_X2_0_Weights", _V1, "IMAGENET1K_V1", __name__)
__all__ += ["ShuffleNet_V2_X0_5_Weights", "ShuffleNet_V2_X1_0_Weights", "ShuffleNet_V2_X1_5_Weights",
            "ShuffleNet_V2_X2_0_Weights"]


def channel_shuffle(x: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups: ``(N, g*c, H, W)`` -> groups' channels alternating."""
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups
    x = x.view(batchsize, groups, channels_per_group, height, width)
    x = mininn.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, num_channels, height, width)


class InvertedResidual(nn.Module):
    """ShuffleNet V2 unit: split (stride 1) or copy (stride > 1), convolve the branches, concatenate, shuffle.

    Raises:
        ValueError: ``stride`` outside 1..3, or at stride 1 ``inp`` other than ``oup // 2 * 2``.
    """

    def __init__(self, inp: int, oup: int, stride: int) -> None:
        super().__init__()
        if not (1 <= stride <= 3):
            raise ValueError("illegal stride value")
        self.stride = stride
        branch_features = oup // 2
        if (self.stride == 1) and (inp != branch_features << 1):
            raise ValueError(
                f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. "
                "If stride == 1 then inp should be equal to oup // 2 << 1."
            )
        if self.stride > 1:
            self.branch1 = nn.Sequential(
                self.depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1),
                nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if (self.stride > 1) else branch_features, branch_features, kernel_size=1, stride=1,
                      padding=0, bias=False),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
            self.depthwise_conv(branch_features, branch_features, kernel_size=3, stride=self.stride,
                                padding=1),
            nn.BatchNorm2d(branch_features),
            nn.Conv2d(branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
        )

    @staticmethod
    def depthwise_conv(i: int, o: int, kernel_size: int, stride: int = 1, padding: int = 0,
                       bias: bool = False) -> nn.Conv2d:
        """A convolution with one group per input channel."""
        return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

    def forward(self, x: Tensor) -> Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = mininn.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = mininn.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """ShuffleNet V2: a 3x3 stem and max pool, three stages of inverted residuals, a 1x1 conv, mean, ``fc``.

    Args:
        stages_repeats: units in stages 2, 3 and 4 (three ints).
        stages_out_channels: channels of the stem, the three stages and ``conv5`` (five ints).
        num_classes: outputs of ``fc``.
        inverted_residual: the unit's constructor ``(inp, oup, stride)``.

    Raises:
        ValueError: ``stages_repeats`` not three values or ``stages_out_channels`` not five.
    """

    def __init__(self, stages_repeats: list[int], stages_out_channels: list[int], num_classes: int = 1000,
                 inverted_residual: Callable[..., nn.Module] = InvertedResidual) -> None:
        super().__init__()
        if len(stages_repeats) != 3:
            raise ValueError("expected stages_repeats as list of 3 positive ints")
        if len(stages_out_channels) != 5:
            raise ValueError("expected stages_out_channels as list of 5 positive ints")
        self._stage_out_channels = stages_out_channels
        input_channels = 3
        output_channels = self._stage_out_channels[0]
        self.conv1 = nn.Sequential(
            nn.Conv2d(input_channels, output_channels, 3, 2, 1, bias=False),
            nn.BatchNorm2d(output_channels),
            nn.ReLU(inplace=True),
        )
        input_channels = output_channels
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.stage2: nn.Sequential
        self.stage3: nn.Sequential
        self.stage4: nn.Sequential
        for name, repeats, output_channels in zip(("stage2", "stage3", "stage4"), stages_repeats,
                                                  self._stage_out_channels[1:]):
            units = [inverted_residual(input_channels, output_channels, 2)]
            units += [inverted_residual(output_channels, output_channels, 1) for _ in range(repeats - 1)]
            setattr(self, name, nn.Sequential(*units))
            input_channels = output_channels
        output_channels = self._stage_out_channels[-1]
        self.conv5 = nn.Sequential(
            nn.Conv2d(input_channels, output_channels, 1, 1, 0, bias=False),
            nn.BatchNorm2d(output_channels),
            nn.ReLU(inplace=True),
        )
        self.fc = nn.Linear(output_channels, num_classes)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.conv1(x))
        x = self.conv5(self.stage4(self.stage3(self.stage2(x))))  # (N, C5, H/32, W/32)
        return self.fc(x.mean([2, 3]))  # global pool

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


def _shufflenetv2(builder: str, weights: Any, channels: list[int], kwargs: dict[str, Any]) -> ShuffleNetV2:
    refuse_weights(builder, weights, kwargs)
    return ShuffleNetV2([4, 8, 4], channels, **kwargs)


def shufflenet_v2_x0_5(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ShuffleNetV2:
    """ShuffleNet V2 with 0.5x output channels; ``kwargs`` go to :class:`ShuffleNetV2`.

    Raises:
        ValueError: ``weights`` other than None (mininn does not download weights).
    """
    return _shufflenetv2("shufflenet_v2_x0_5", weights, [24, 48, 96, 192, 1024], kwargs)


def shufflenet_v2_x1_0(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ShuffleNetV2:
    """ShuffleNet V2 with 1.0x output channels; see :func:`shufflenet_v2_x0_5`."""
    return _shufflenetv2("shufflenet_v2_x1_0", weights, [24, 116, 232, 464, 1024], kwargs)


def shufflenet_v2_x1_5(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ShuffleNetV2:
    """ShuffleNet V2 with 1.5x output channels; see :func:`shufflenet_v2_x0_5`."""
    return _shufflenetv2("shufflenet_v2_x1_5", weights, [24, 176, 352, 704, 1024], kwargs)


def shufflenet_v2_x2_0(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ShuffleNetV2:
    """ShuffleNet V2 with 2.0x output channels; see :func:`shufflenet_v2_x0_5`."""
    return _shufflenetv2("shufflenet_v2_x2_0", weights, [24, 244, 488, 976, 2048], kwargs)
