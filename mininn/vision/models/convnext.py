"""``torchvision.models.convnext``: ConvNeXt tiny/small/base/large, with torchvision's names and keys.

``features.0`` is the 4x4 patchify stem, then stages of :class:`CNBlock` (``features.S.B.block``,
``features.S.B.layer_scale``) alternating with downsampling (``features.S.0`` norm, ``.1`` conv),
then ``avgpool`` and ``classifier`` (norm, flatten, linear), as in torchvision 0.28.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import mininn
from mininn import Tensor, nn
from mininn.nn import functional as F
from mininn.vision.models._builder_args import refuse_weights, weights_enum
from mininn.vision.ops.misc import Conv2dNormActivation, Permute
from mininn.vision.ops.stochastic_depth import StochasticDepth

__all__ = [
    "ConvNeXt_Base_Weights",
    "ConvNeXt_Large_Weights",
    "ConvNeXt_Small_Weights",
    "ConvNeXt_Tiny_Weights",
    "ConvNeXt",
    "CNBlock",
    "CNBlockConfig",
    "LayerNorm2d",
    "convnext_tiny",
    "convnext_small",
    "convnext_base",
    "convnext_large",
]


class LayerNorm2d(nn.LayerNorm):
    """``LayerNorm`` over the channels of an ``(N, C, H, W)`` input."""

    def forward(self, x: Tensor) -> Tensor:
        x = x.permute(0, 2, 3, 1)  # (N, H, W, C)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """Depthwise 7x7, LayerNorm, Linear 4x, GELU, Linear back; times ``layer_scale``, plus the input.

    Args:
        dim: channels.
        layer_scale: the initial value of every entry of ``layer_scale`` (``(dim, 1, 1)``).
        stochastic_depth_prob: drop probability of the residual branch.
        norm_layer: the norm class. Default ``LayerNorm(eps=1e-6)``.
    """

    def __init__(
        self,
        dim: int,
        layer_scale: float,
        stochastic_depth_prob: float,
        norm_layer: Callable[..., nn.Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            norm_layer(dim),
            nn.Linear(in_features=dim, out_features=4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(mininn.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input: Tensor) -> Tensor:
        result = self.layer_scale * self.block(input)
        result = self.stochastic_depth(result)
        result += input
        return result


class CNBlockConfig:
    """One stage: ``num_layers`` blocks of ``input_channels``, then a downsampling to ``out_channels``
    (none when ``out_channels`` is None)."""

    def __init__(self, input_channels: int, out_channels: int | None, num_layers: int) -> None:
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}(input_channels={self.input_channels}, "
            f"out_channels={self.out_channels}, num_layers={self.num_layers})"
        )


class ConvNeXt(nn.Module):
    """ConvNeXt (Liu et al., 2022).

    Args:
        block_setting: the stages.
        stochastic_depth_prob: the last block's drop probability (earlier ones scale linearly). Default 0.0.
        layer_scale: initial layer scale of every block. Default 1e-6.
        num_classes: outputs. Default 1000.
        block: the block class. Default :class:`CNBlock`.
        norm_layer: the norm of the stem, downsamplings and classifier. Default ``LayerNorm2d(eps=1e-6)``.
        **kwargs: ignored, as in torchvision.

    Raises:
        ValueError: an empty setting. TypeError: entries that are not CNBlockConfig.
    """

    def __init__(
        self,
        block_setting: list[CNBlockConfig],
        stochastic_depth_prob: float = 0.0,
        layer_scale: float = 1e-6,
        num_classes: int = 1000,
        block: Callable[..., nn.Module] | None = None,
        norm_layer: Callable[..., nn.Module] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not block_setting:
            raise ValueError("The block_setting should not be empty")
        if not (
            isinstance(block_setting, Sequence) and all(isinstance(s, CNBlockConfig) for s in block_setting)
        ):
            raise TypeError("The block_setting should be List[CNBlockConfig]")
        block = CNBlock if block is None else block
        norm_layer = partial(LayerNorm2d, eps=1e-6) if norm_layer is None else norm_layer
        layers: list[nn.Module] = [
            Conv2dNormActivation(
                3,
                block_setting[0].input_channels,
                kernel_size=4,
                stride=4,
                padding=0,
                norm_layer=norm_layer,
                activation_layer=None,
                bias=True,
            )
        ]
        total_blocks = sum(cnf.num_layers for cnf in block_setting)
        block_id = 0
        for cnf in block_setting:
            stage: list[nn.Module] = []
            for _ in range(cnf.num_layers):
                sd_prob = stochastic_depth_prob * block_id / (total_blocks - 1.0)
                stage.append(block(cnf.input_channels, layer_scale, sd_prob))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(
                    nn.Sequential(
                        norm_layer(cnf.input_channels),
                        nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2),
                    )
                )
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        last = block_setting[-1]
        last_channels = last.out_channels if last.out_channels is not None else last.input_channels
        self.classifier = nn.Sequential(
            norm_layer(last_channels), nn.Flatten(1), nn.Linear(last_channels, num_classes)
        )
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def _forward_impl(self, x: Tensor) -> Tensor:
        x = self.avgpool(self.features(x))  # (N, C, 1, 1)
        return self.classifier(x)

    def forward(self, x: Tensor) -> Tensor:
        return self._forward_impl(x)


# builder -> (stages as (input_channels, out_channels, num_layers), default stochastic depth)
_CONFIGS: dict[str, tuple[list[tuple[int, int | None, int]], float]] = {
    "convnext_tiny": ([(96, 192, 3), (192, 384, 3), (384, 768, 9), (768, None, 3)], 0.1),
    "convnext_small": ([(96, 192, 3), (192, 384, 3), (384, 768, 27), (768, None, 3)], 0.4),
    "convnext_base": ([(128, 256, 3), (256, 512, 3), (512, 1024, 27), (1024, None, 3)], 0.5),
    "convnext_large": ([(192, 384, 3), (384, 768, 3), (768, 1536, 27), (1536, None, 3)], 0.5),
}


def _convnext(name: str, weights: Any, kwargs: dict[str, Any]) -> ConvNeXt:
    refuse_weights(name, weights, kwargs)
    stages, sd_prob = _CONFIGS[name]
    block_setting = [CNBlockConfig(*stage) for stage in stages]
    return ConvNeXt(
        block_setting, stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", sd_prob), **kwargs
    )


def convnext_tiny(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ConvNeXt:
    """ConvNeXt-Tiny with random weights; ``kwargs`` go to :class:`ConvNeXt`.

    Raises:
        ValueError: ``weights`` is not None (mininn does not download weights).
    """
    return _convnext("convnext_tiny", weights, kwargs)


def convnext_small(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ConvNeXt:
    """ConvNeXt-Small with random weights; as :func:`convnext_tiny`."""
    return _convnext("convnext_small", weights, kwargs)


def convnext_base(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ConvNeXt:
    """ConvNeXt-Base with random weights; as :func:`convnext_tiny`."""
    return _convnext("convnext_base", weights, kwargs)


def convnext_large(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> ConvNeXt:
    """ConvNeXt-Large with random weights; as :func:`convnext_tiny`."""
    return _convnext("convnext_large", weights, kwargs)


# torchvision's names of pretrained weights (mininn holds none: see _builder_args)
ConvNeXt_Base_Weights = weights_enum("ConvNeXt_Base_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
ConvNeXt_Large_Weights = weights_enum("ConvNeXt_Large_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
ConvNeXt_Small_Weights = weights_enum("ConvNeXt_Small_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
ConvNeXt_Tiny_Weights = weights_enum("ConvNeXt_Tiny_Weights", ["IMAGENET1K_V1"], "IMAGENET1K_V1", __name__)
