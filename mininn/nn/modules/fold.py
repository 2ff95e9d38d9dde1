"""Sliding-block layers: ``Unfold`` (im2col) and ``Fold`` (col2im)."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from typing import Any

from mininn.nn.functional.fold import fold, unfold
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sum ``(N, C * kh * kw, L)`` sliding blocks into ``(N, C, *output_size)`` (see ``F.fold``).

    Args:
        output_size: spatial size of the image (int or pair).
        kernel_size: block size (int or pair).
        dilation: spacing between block elements. Default 1.
        padding: implicit zero padding on both sides (cropped off the result). Default 0.
        stride: step between blocks. Default 1.
    """

    def __init__(self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
                 stride: Any = 1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extract sliding blocks of ``(N, C, H, W)`` as ``(N, C * kh * kw, L)`` columns (see ``F.unfold``).

    Args:
        kernel_size: block size (int or pair).
        dilation: spacing between block elements. Default 1.
        padding: implicit zero padding on both sides. Default 0.
        stride: step between blocks. Default 1.
    """

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")
