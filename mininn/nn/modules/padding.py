"""Padding layers: constant (and zero), reflection, replication and circular, in 1, 2 and 3 dims.

Each holds ``padding`` as ``(left, right[, top, bottom[, front, back]])``, the
last dim's pair first, as ``F.pad`` takes it; an int pads every side alike.
"""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from typing import Any

from mininn.nn import functional as F
from mininn.nn.functional._utils import ntuple
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

_two = ntuple(2, "_pair")
_four = ntuple(4, "_quadruple")
_six = ntuple(6, "_ntuple_6")


# ---- constant and zero -----------------------------------------------------------------------


class _ConstantPadNd(Module):
    padding: tuple[int, ...]

    def __init__(self, value: float) -> None:
        super().__init__()
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

    def __init__(self, padding: int | tuple[int, int], value: float) -> None:
        super().__init__(value)
        self.padding = _two(padding)


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with ``value``: ``padding`` is an int or ``(left, right, top, bottom)``."""

    def __init__(self, padding: int | tuple[int, int, int, int], value: float) -> None:
        super().__init__(value)
        self.padding = _four(padding)


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with ``value``: ``padding`` is an int or
    ``(left, right, top, bottom, front, back)``."""

    def __init__(self, padding: int | tuple[int, int, int, int, int, int], value: float) -> None:
        super().__init__(value)
        self.padding = _six(padding)


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros: ``padding`` is an int or ``(left, right)``."""

    def __init__(self, padding: int | tuple[int, int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last 2 dims with zeros: ``padding`` is an int or ``(left, right, top, bottom)``."""

    def __init__(self, padding: int | tuple[int, int, int, int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last 3 dims with zeros: ``padding`` is an int or a 6-tuple."""

    def __init__(self, padding: int | tuple[int, int, int, int, int, int]) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


# ---- reflection, replication, circular --------------------------------------------------------------


class _ModePadNd(Module):
    """Pad through ``F.pad`` in ``mode``; ``padding`` is parsed to ``2 * dims`` ints by the subclass."""

    mode: str
    padding: tuple[int, ...]

    def __init__(self, padding: Any, parse: Any) -> None:
        super().__init__()
        self.padding = parse(padding)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePadNd):
    """Pad the last dim of ``(C, W)`` or ``(N, C, W)`` with its reflection (edge not repeated).

    Args:
        padding: an int for both sides, or ``(left, right)``; each must be less than ``W``.
    """

    mode = "reflect"

    def __init__(self, padding: int | tuple[int, int]) -> None:
        super().__init__(padding, _two)


class ReflectionPad2d(_ModePadNd):
    """Reflect the last 2 dims of ``(C, H, W)`` or ``(N, C, H, W)``: ``padding`` is an int or a 4-tuple."""

    mode = "reflect"

    def __init__(self, padding: int | tuple[int, int, int, int]) -> None:
        super().__init__(padding, _four)


class ReflectionPad3d(_ModePadNd):
    """Reflect the last 3 dims of a 4D or 5D input: ``padding`` is an int or a 6-tuple."""

    mode = "reflect"

    def __init__(self, padding: int | tuple[int, int, int, int, int, int]) -> None:
        super().__init__(padding, _six)


class ReplicationPad1d(_ModePadNd):
    """Pad the last dim of ``(C, W)`` or ``(N, C, W)`` by repeating its edge values.

    Args:
        padding: an int for both sides, or ``(left, right)``.
    """

    mode = "replicate"

    def __init__(self, padding: int | tuple[int, int]) -> None:
        super().__init__(padding, _two)


class ReplicationPad2d(_ModePadNd):
    """Repeat the edges of the last 2 dims of a 3D or 4D input: ``padding`` is an int or a 4-tuple."""

    mode = "replicate"

    def __init__(self, padding: int | tuple[int, int, int, int]) -> None:
        super().__init__(padding, _four)


class ReplicationPad3d(_ModePadNd):
    """Repeat the edges of the last 3 dims of a 4D or 5D input: ``padding`` is an int or a 6-tuple."""

    mode = "replicate"

    def __init__(self, padding: int | tuple[int, int, int, int, int, int]) -> None:
        super().__init__(padding, _six)


class _CircularPadNd(_ModePadNd):
    mode = "circular"
    dims = 0

    def _check_input_dim(self, input: Tensor) -> None:
        low = self.dims + 1
        if input.dim() not in (low, low + 1):
            raise ValueError(f"expected {low}D or {low + 1}D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pad the last dim of ``(C, W)`` or ``(N, C, W)`` by wrapping around (periodic boundary).

    Args:
        padding: an int for both sides, or ``(left, right)``; each at most ``W``.
    """

    dims = 1

    def __init__(self, padding: int | tuple[int, int]) -> None:
        super().__init__(padding, _two)


class CircularPad2d(_CircularPadNd):
    """Wrap the last 2 dims of a 3D or 4D input around: ``padding`` is an int or a 4-tuple."""

    dims = 2

    def __init__(self, padding: int | tuple[int, int, int, int]) -> None:
        super().__init__(padding, _four)


class CircularPad3d(_CircularPadNd):
    """Wrap the last 3 dims of a 4D or 5D input around: ``padding`` is an int or a 6-tuple."""

    dims = 3

    def __init__(self, padding: int | tuple[int, int, int, int, int, int]) -> None:
        super().__init__(padding, _six)
