"""Convolution layers: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d``."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from typing import Any

from mininn.nn import functional as F
from mininn.nn.functional._utils import ntuple
from mininn.nn.modules._utils import register_weight_and_bias, reset_kaiming_uniform
from mininn.nn.modules.module import Module
from mininn.tensor import Size, Tensor

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _reversed_padding(padding: str | tuple[int, ...], kernel_size: tuple[int, ...],
                      dilation: tuple[int, ...]) -> list[int] | tuple[int, ...]:
    """``F.pad``'s argument (last dim first, before/after) for non-zero padding modes.

    A list for string padding and a tuple otherwise, as torch keeps it.
    """
    n = len(kernel_size)
    out = [0, 0] * n
    for i in range(n):
        rev = n - 1 - i  # F.pad lists the last dim first
        if isinstance(padding, str):
            total = dilation[i] * (kernel_size[i] - 1) if padding == "same" else 0
            out[2 * rev], out[2 * rev + 1] = total // 2, total - total // 2
        else:
            out[2 * rev] = out[2 * rev + 1] = padding[i]
    return out if isinstance(padding, str) else tuple(out)


class _ConvNd(Module):
    """Shared constructor, initialisation and repr of the convolution layers."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple[int, ...],
                 stride: tuple[int, ...], padding: Any, dilation: tuple[int, ...], transposed: bool,
                 output_padding: tuple[int, ...], groups: int, bias: bool, padding_mode: str,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        _check_args(in_channels, out_channels, stride, padding, groups, padding_mode)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = _reversed_padding(padding, kernel_size, dilation)
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        register_weight_and_bias(self, shape, out_channels, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight`` from ``kaiming_uniform_(a=sqrt(5))``; ``bias`` from U(+-1/sqrt(fan_in))."""
        reset_kaiming_uniform(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


def _check_args(in_channels: int, out_channels: int, stride: tuple[int, ...], padding: Any, groups: int,
                padding_mode: str) -> None:
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups != 0:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups != 0:
        raise ValueError("out_channels must be divisible by groups")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(
            "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, but got "
            f"padding_mode='{padding_mode}'"
        )


class _Conv(_ConvNd):
    """A forward convolution of ``_nd`` spatial dims (``padding_mode`` handled by ``F.pad``)."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        as_nd = ntuple(self._nd)
        super().__init__(in_channels, out_channels, as_nd(kernel_size), as_nd(stride),
                         padding if isinstance(padding, str) else as_nd(padding), as_nd(dilation),
                         False, as_nd(0), groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        conv = _CONV[self._nd]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over ``(N, C_in, L)``.

    Args:
        in_channels, out_channels: channel counts (each divisible by ``groups``).
        kernel_size, stride, dilation: ints or 1-tuples.
        padding: an int, a 1-tuple, ``'valid'`` or ``'same'`` (stride 1 only).
        groups: split channels into this many independent convolutions.
        bias: learn a bias per output channel. Default ``True``.
        padding_mode: ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.

    Attributes:
        weight: ``(out_channels, in_channels // groups, k)``; bias ``(out_channels,)``.
    """

    _nd = 1


class Conv2d(_Conv):
    """2-D convolution over ``(N, C_in, H, W)``; the arguments of ``Conv1d``, with pairs for tuples.

    Attributes:
        weight: ``(out_channels, in_channels // groups, kh, kw)`` from ``kaiming_uniform_(a=sqrt(5))``;
        bias: ``(out_channels,)`` from U(+-1/sqrt(fan_in)), or ``None``.
    """

    _nd = 2


class Conv3d(_Conv):
    """3-D convolution over ``(N, C_in, D, H, W)``; the arguments of ``Conv1d``, with triples for tuples.

    Attributes:
        weight: ``(out_channels, in_channels // groups, kd, kh, kw)`` from ``kaiming_uniform_(a=sqrt(5))``;
        bias: ``(out_channels,)`` from U(+-1/sqrt(fan_in)), or ``None``.
    """

    _nd = 3


class _ConvTranspose(_ConvNd):
    """A transposed convolution; ``forward(input, output_size=None)`` may pick the output size."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        as_nd = ntuple(self._nd)
        super().__init__(in_channels, out_channels, as_nd(kernel_size), as_nd(stride), as_nd(padding),
                         as_nd(dilation), True, as_nd(output_padding), groups, bias, padding_mode,
                         device, dtype)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The ``output_padding`` that yields ``output_size`` (spatial, or with batch/channel dims)."""
        n = self._nd
        if output_size is None:
            return self.output_padding
        output_size = list(output_size)
        non_spatial = 2 if input.ndim == n + 2 else 1
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} "
                f"or {non_spatial + n} elements (got {len(output_size)})"
            )
        spatial = input.shape[non_spatial:]
        min_sizes = [
            (spatial[d] - 1) * self.stride[d] - 2 * self.padding[d]
            + self.dilation[d] * (self.kernel_size[d] - 1) + 1
            for d in range(n)
        ]
        max_sizes = [m + self.stride[d] - 1 for d, m in enumerate(min_sizes)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from {min_sizes} "
                    f"to {max_sizes} (for an input of {Size(input.shape[2:])})"
                )
        return tuple(s - m for s, m in zip(output_size, min_sizes))

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        conv = _CONV_TRANSPOSE[self._nd]
        output_padding = self._output_padding(input, output_size)
        return conv(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                    self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution (the gradient of ``Conv1d``) over ``(N, C_in, L)``.

    Attributes:
        weight: ``(in_channels, out_channels // groups, k)``; bias ``(out_channels,)``.
    """

    _nd = 1


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution (the gradient of ``Conv2d``) over ``(N, C_in, H, W)``.

    Output size: ``(H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``.

    Attributes:
        weight: ``(in_channels, out_channels // groups, kh, kw)``; bias ``(out_channels,)``.
    """

    _nd = 2


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution (the gradient of ``Conv3d``) over ``(N, C_in, D, H, W)``.

    Output size per dim: ``(D - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1``;
    ``forward(input, output_size)`` picks ``output_padding`` to reach ``output_size``.

    Attributes:
        weight: ``(in_channels, out_channels // groups, kd, kh, kw)``; bias ``(out_channels,)``.
    """

    _nd = 3
