"""Channel rounding shared by the mobile families (MobileNet, EfficientNet, RegNet)."""

from __future__ import annotations

__all__ = ["make_divisible"]


def make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """``v`` rounded to the nearest multiple of ``divisor`` (at least ``min_value``), never 10% below ``v``.

    The rounding of the original TensorFlow MobileNet code, as torchvision's ``_make_divisible``.
    """
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v
