"""Padding layers: constant (and zero), reflection, replication and circular, in 1, 2 and 3 dims.

Each holds ``padding`` as ``(left, right[, top, bottom[, front, back]])``, the
last dim's pair first, as ``F.pad`` takes it; an int pads every side alike.
"""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from mininn.nn import functional as F
from mininn.nn.functional._utils import ntuple
from mininn.nn.modules._utils import check_optional_batch_dim
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = [
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
]


class _PadNd(Module):
    """Pad the last ``_nd`` dims through ``F.pad`` in ``mode``; ``padding`` holds ``2 * _nd`` ints."""

    mode: str
    _nd: int

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__()
        self.padding: tuple[int, ...] = ntuple(2 * self._nd)(padding)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


# ---- constant and zero -----------------------------------------------------------------------


class _ConstantPadNd(_PadNd):
    mode = "constant"

    def __init__(self, padding: int | tuple[int, ...], value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``; negative amounts crop.

    Args:
        padding: an int for both sides, or ``(left, right)``.
        value: the fill value.
    """

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with ``value``: ``padding`` is an int or ``(left, right, top, bottom)``."""

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with ``value``: ``padding`` is an int or
    ``(left, right, top, bottom, front, back)``."""

    _nd = 3


class _ZeroPad(_ConstantPadNd):
    """A ``ConstantPadNd`` of zeros, whose repr shows only ``padding``."""

    def __init__(self, padding: int | tuple[int, ...]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pad the last dim with zeros: ``padding`` is an int or ``(left, right)``."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pad the last 2 dims with zeros: ``padding`` is an int or ``(left, right, top, bottom)``."""


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Pad the last 3 dims with zeros: ``padding`` is an int or a 6-tuple."""


# ---- reflection, replication, circular --------------------------------------------------------------


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class ReflectionPad1d(_ReflectionPadNd):
    """Pad the last dim of ``(C, W)`` or ``(N, C, W)`` with its reflection (edge not repeated).

    Args:
        padding: an int for both sides, or ``(left, right)``; each must be less than ``W``.
    """

    _nd = 1


class ReflectionPad2d(_ReflectionPadNd):
    """Reflect the last 2 dims of ``(C, H, W)`` or ``(N, C, H, W)``: ``padding`` is an int or a 4-tuple."""

    _nd = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Reflect the last 3 dims of a 4D or 5D input: ``padding`` is an int or a 6-tuple."""

    _nd = 3


class ReplicationPad1d(_ReplicationPadNd):
    """Pad the last dim of ``(C, W)`` or ``(N, C, W)`` by repeating its edge values.

    Args:
        padding: an int for both sides, or ``(left, right)``.
    """

    _nd = 1


class ReplicationPad2d(_ReplicationPadNd):
    """Repeat the edges of the last 2 dims of a 3D or 4D input: ``padding`` is an int or a 4-tuple."""

    _nd = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Repeat the edges of the last 3 dims of a 4D or 5D input: ``padding`` is an int or a 6-tuple."""

    _nd = 3


class _CircularPadNd(_PadNd):
    mode = "circular"

    def _check_input_dim(self, input: Tensor) -> None:
        check_optional_batch_dim(input, self._nd + 1)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim of ``(C, W)`` or ``(N, C, W)`` by wrapping around (periodic boundary).

    Args:
        padding: an int for both sides, or ``(left, right)``; each at most ``W``.
    """

    _nd = 1


class CircularPad2d(_CircularPadNd):
    """Wrap the last 2 dims of a 3D or 4D input around: ``padding`` is an int or a 4-tuple."""

    _nd = 2


class CircularPad3d(_CircularPadNd):
    """Wrap the last 3 dims of a 4D or 5D input around: ``padding`` is an int or a 6-tuple."""

    _nd = 3
