"""Image basics that the transforms' modules share: interpolation modes, the image checks, sizes."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Any

from mininn.tensor import Tensor

__all__ = ["InterpolationMode", "get_dimensions"]


class InterpolationMode(Enum):
    """Interpolation modes; tensors take ``NEAREST``, ``NEAREST_EXACT``, ``BILINEAR`` and ``BICUBIC``."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"  # PIL's modes; not for tensors
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_FROM_PIL_INT = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
                 4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}
_PIL_MODES = {InterpolationMode.NEAREST: 0, InterpolationMode.BILINEAR: 2, InterpolationMode.BICUBIC: 3,
              InterpolationMode.NEAREST_EXACT: 0, InterpolationMode.BOX: 4, InterpolationMode.HAMMING: 5,
              InterpolationMode.LANCZOS: 1}
def _interpolation_mode(interpolation: Any) -> InterpolationMode:
    if isinstance(interpolation, int) and not isinstance(interpolation, bool):
        return _FROM_PIL_INT[interpolation]
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow "
                        "integer constant")
    return interpolation


def _assert_image_tensor(img: Any) -> None:
    if not isinstance(img, Tensor) or img.ndim < 2:
        raise TypeError("Tensor is not a torch image.")


def _is_pil_image(img: Any) -> bool:
    image_module = sys.modules.get("PIL.Image")
    return image_module is not None and isinstance(img, image_module.Image)


def get_dimensions(img: Any) -> list[int]:
    """``[channels, height, width]`` of a tensor image (or PIL image)."""
    if _is_pil_image(img):
        return [len(img.getbands()), img.height, img.width]
    _assert_image_tensor(img)
    channels = 1 if img.ndim == 2 else img.shape[-3]
    height, width = img.shape[-2:]
    return [channels, height, width]
