"""Pixel shuffles: ``PixelShuffle`` and ``PixelUnshuffle`` (sub-pixel convolution layouts)."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from mininn.nn.functional.shuffle import pixel_shuffle, pixel_unshuffle
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """``(*, C * r * r, H, W)`` -> ``(*, C, H * r, W * r)`` with ``r = upscale_factor``."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(*, C, H * r, W * r)`` -> ``(*, C * r * r, H, W)`` with ``r = downscale_factor``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
