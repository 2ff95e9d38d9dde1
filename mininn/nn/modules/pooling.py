"""Pooling layers: ``MaxPool1d/2d``, ``AvgPool1d/2d``, ``AdaptiveAvgPool1d/2d``."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from typing import Any

from mininn.nn import functional as F
from mininn.nn.functional._utils import single
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, L)``; ``stride`` defaults to ``kernel_size``, padding is -inf."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, H, W)``.

    Args:
        kernel_size: window size (int or pair).
        stride: step; default ``kernel_size``.
        padding: implicit ``-inf`` padding on both sides, at most half the kernel.
        dilation: spacing between window elements.
        return_indices: also return each maximum's flat ``H * W`` index.
        ceil_mode: round the output size up (windows may start in the right/bottom padding).
    """

    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """Mean over sliding windows of ``(N, C, L)``."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = single(kernel_size)
        self.stride = single(stride if stride is not None else kernel_size)
        self.padding = single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Mean over sliding windows of ``(N, C, H, W)``.

    Args:
        kernel_size: window size; ``stride`` defaults to it.
        padding: implicit zero padding, at most half the kernel.
        ceil_mode: round the output size up.
        count_include_pad: whether padding zeros count in the divisor. Default ``True``.
        divisor_override: use this divisor instead.
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average ``(N, C, L)`` into ``output_size`` bins."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average ``(N, C, H, W)`` into an ``output_size`` grid (``(1, 1)``: global average pooling)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)
