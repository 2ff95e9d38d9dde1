"""Upsampling layers: ``Upsample``, ``UpsamplingNearest2d``, ``UpsamplingBilinear2d``."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from typing import Any

from mininn.nn.functional.upsampling import interpolate
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resample ``(N, C, *spatial)`` to ``size`` or by ``scale_factor`` (see ``F.interpolate``).

    Args:
        size: output spatial size (int or one per spatial dim).
        scale_factor: multiplier of the spatial size (float or one per dim); stored as floats.
        mode: ``nearest`` (default), ``nearest-exact``, ``linear``, ``bilinear``, ``bicubic``,
            ``trilinear`` or ``area``.
        align_corners: for the interpolating modes only. Default None (False).
        recompute_scale_factor: compute the kernels' scale from the output size.
    """

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None, recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor: Any = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of ``(N, C, H, W)``: ``Upsample(mode="nearest")``."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of ``(N, C, H, W)`` with ``align_corners=True``, as torch's layer."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
