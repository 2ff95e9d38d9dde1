"""``torchvision.ops.misc`` building blocks: conv-norm-activation stacks, squeeze-excitation, MLP, Permute.

Module names, constructor arguments and state-dict keys are torchvision 0.28's, so
``Conv2dNormActivation(3, 16)`` holds ``0.weight``, ``1.weight``, ``1.running_mean``, ...
exactly as torchvision's does.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import mininn
from mininn import Tensor, nn
from mininn.nn.modules.utils import _ntuple
from mininn.vision.ops.frozen_batch_norm import FrozenBatchNorm2d  # torchvision defines it here

interpolate = nn.functional.interpolate  # torchvision.ops.misc.interpolate

__all__ = [
    "ConvNormActivation",
    "Conv2dNormActivation",
    "Conv3dNormActivation",
    "SqueezeExcitation",
    "MLP",
    "Permute",
    "FrozenBatchNorm2d",
]


def _same_padding(kernel_size: Any, dilation: Any) -> int | tuple[int, ...]:
    """torchvision's default padding: ``(kernel_size - 1) // 2 * dilation`` per dimension."""
    if isinstance(kernel_size, int) and isinstance(dilation, int):
        return (kernel_size - 1) // 2 * dilation
    dims = len(kernel_size) if isinstance(kernel_size, Sequence) else len(dilation)
    kernel, dil = _ntuple(dims)(kernel_size), _ntuple(dims)(dilation)
    return tuple((kernel[i] - 1) // 2 * dil[i] for i in range(dims))


class ConvNormActivation(nn.Sequential):
    """``conv_layer``, then ``norm_layer`` (unless None), then ``activation_layer`` (unless None).

    Use :class:`Conv2dNormActivation` or :class:`Conv3dNormActivation`; this base warns as
    torchvision's does when built directly.

    Args:
        in_channels: channels of the input.
        out_channels: channels the convolution produces.
        kernel_size: convolution kernel size. Default 3.
        stride: convolution stride. Default 1.
        padding: convolution padding; None means ``(kernel_size - 1) // 2 * dilation``.
        groups: convolution groups. Default 1.
        norm_layer: called with ``out_channels``; None leaves the norm out.
        activation_layer: called with ``inplace=inplace`` (no argument when ``inplace`` is None);
            None leaves the activation out.
        dilation: convolution dilation. Default 1.
        inplace: passed to the activation. Default True.
        bias: convolution bias; None means "only when there is no norm layer".
        conv_layer: the convolution class.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, ...] = 3,
        stride: int | tuple[int, ...] = 1,
        padding: int | tuple[int, ...] | str | None = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        dilation: int | tuple[int, ...] = 1,
        inplace: bool | None = True,
        bias: bool | None = None,
        conv_layer: Callable[..., nn.Module] = nn.Conv2d,
    ) -> None:
        if padding is None:
            padding = _same_padding(kernel_size, dilation)
        if bias is None:
            bias = norm_layer is None
        layers = [
            conv_layer(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                dilation=dilation,
                groups=groups,
                bias=bias,
            )
        ]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            params = {} if inplace is None else {"inplace": inplace}
            layers.append(activation_layer(**params))
        super().__init__(*layers)
        self.out_channels = out_channels
        if self.__class__ == ConvNormActivation:
            warnings.warn(
                "Don't use ConvNormActivation directly, please use Conv2dNormActivation and "
                "Conv3dNormActivation instead.",
                stacklevel=2,
            )


class Conv2dNormActivation(ConvNormActivation):
    """``Conv2d`` -> ``norm_layer`` (default ``BatchNorm2d``) -> ``activation_layer`` (default ``ReLU``).

    Arguments as :class:`ConvNormActivation`, with ``nn.Conv2d`` as the convolution.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int] = 3,
        stride: int | tuple[int, int] = 1,
        padding: int | tuple[int, int] | str | None = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm2d,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        dilation: int | tuple[int, int] = 1,
        inplace: bool | None = True,
        bias: bool | None = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            groups,
            norm_layer,
            activation_layer,
            dilation,
            inplace,
            bias,
            nn.Conv2d,
        )


class Conv3dNormActivation(ConvNormActivation):
    """``Conv3d`` -> ``norm_layer`` (default ``BatchNorm3d``) -> ``activation_layer`` (default ``ReLU``).

    Arguments as :class:`ConvNormActivation`, with ``nn.Conv3d`` as the convolution.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int | tuple[int, int, int] = 3,
        stride: int | tuple[int, int, int] = 1,
        padding: int | tuple[int, int, int] | str | None = None,
        groups: int = 1,
        norm_layer: Callable[..., nn.Module] | None = nn.BatchNorm3d,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        dilation: int | tuple[int, int, int] = 1,
        inplace: bool | None = True,
        bias: bool | None = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            groups,
            norm_layer,
            activation_layer,
            dilation,
            inplace,
            bias,
            nn.Conv3d,
        )


class SqueezeExcitation(nn.Module):
    """Squeeze-and-Excitation: ``input * sigma(fc2(delta(fc1(avgpool(input)))))``.

    Args:
        input_channels: channels of the input.
        squeeze_channels: channels between ``fc1`` and ``fc2``.
        activation: ``delta``. Default ``nn.ReLU``.
        scale_activation: ``sigma``. Default ``nn.Sigmoid``.
    """

    def __init__(
        self,
        input_channels: int,
        squeeze_channels: int,
        activation: Callable[..., nn.Module] = nn.ReLU,
        scale_activation: Callable[..., nn.Module] = nn.Sigmoid,
    ) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input: Tensor) -> Tensor:
        scale = self.avgpool(input)  # (N, C, 1, 1)
        scale = self.activation(self.fc1(scale))
        return self.scale_activation(self.fc2(scale))

    def forward(self, input: Tensor) -> Tensor:
        return self._scale(input) * input


class MLP(nn.Sequential):
    """``Linear`` layers for each of ``hidden_channels``, with norm, activation and dropout between.

    Each hidden layer is ``Linear`` [-> ``norm_layer``] -> ``activation_layer`` -> ``Dropout``;
    the last is ``Linear`` -> ``Dropout``.

    Args:
        in_channels: features of the input.
        hidden_channels: the output features of each ``Linear``, last one included.
        norm_layer: called with each hidden width; None leaves it out. Default None.
        activation_layer: the activation class. Default ``nn.ReLU``.
        inplace: passed to the activation and the dropouts; None keeps their defaults.
        bias: bias of every ``Linear``. Default True.
        dropout: probability of every ``Dropout``. Default 0.0.
    """

    def __init__(
        self,
        in_channels: int,
        hidden_channels: list[int],
        norm_layer: Callable[..., nn.Module] | None = None,
        activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
        inplace: bool | None = None,
        bias: bool = True,
        dropout: float = 0.0,
    ) -> None:
        params = {} if inplace is None else {"inplace": inplace}
        layers: list[nn.Module] = []
        in_dim = in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer(**params))  # type: ignore[misc] - None fails here as in torchvision
            layers.append(nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **params))
        super().__init__(*layers)


class Permute(nn.Module):
    """Returns ``input.permute(*dims)``.

    Args:
        dims: the order of the input's dimensions in the output.
    """

    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        return mininn.permute(x, self.dims)
