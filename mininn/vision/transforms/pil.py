"""``to_pil_image`` / ``ToPILImage``: a tensor or array image as a PIL image (needs Pillow), as torchvision.

The modes and checks are torchvision's (its one-channel message prints ``numpy.dtype`` itself, as there).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from mininn.tensor import Tensor

__all__ = ["to_pil_image", "ToPILImage"]

_ONE_CHANNEL = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16" if sys.byteorder == "little" else "I;16B",
                np.dtype(np.int32): "I", np.dtype(np.float32): "F"}
_PERMITTED = {2: ["LA"], 3: ["RGB", "YCbCr", "HSV"], 4: ["RGBA", "CMYK", "RGBX"]}
_DEFAULT = {2: "LA", 3: "RGB", 4: "RGBA"}


def _mode(array: np.ndarray, mode: str | None) -> str:
    """torchvision's choice (and checks) of the PIL mode for an ``(H, W)`` or ``(H, W, C)`` array."""
    if array.ndim == 2:
        expected = _ONE_CHANNEL.get(array.dtype)
        if mode is not None and mode != expected:
            raise ValueError(
                f"Incorrect mode ({mode}) supplied for input type {np.dtype}. Should be {expected}")
        mode = expected
    else:
        channels = array.shape[2]
        if mode is not None and mode not in _PERMITTED[channels]:
            dims = "2D" if channels == 2 else f"{channels}D"
            raise ValueError(f"Only modes {_PERMITTED[channels]} are supported for {dims} inputs")
        if mode is None and array.dtype == np.uint8:
            mode = _DEFAULT[channels]
    if mode is None:
        raise TypeError(f"Input type {array.dtype} is not supported")
    return mode


def to_pil_image(pic: Any, mode: str | None = None) -> Any:
    """A ``(C, H, W)`` tensor or ``(H, W[, C])`` array as a PIL image; floats are scaled by 255 (unless "F").

    Raises:
        TypeError: not a tensor or array, or a dtype PIL cannot take.
        ValueError: not 2-/3-dimensional, more than 4 channels, or a mode that does not fit.
        ImportError: Pillow is not installed.
    """
    if isinstance(pic, Tensor):
        array = pic.detach().cpu().numpy()
        pic = array.transpose(1, 2, 0) if array.ndim == 3 else array
    elif not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if pic.ndim == 2:
        pic = pic[:, :, None]
    if pic.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    if pic.shape[-1] > 4:
        raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-1]} channels.")
    array = (pic * 255).astype(np.uint8) if np.issubdtype(pic.dtype, np.floating) and mode != "F" else pic
    array = array[:, :, 0] if array.shape[2] == 1 else array
    chosen = _mode(array, mode)
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError("to_pil_image needs Pillow (pip install pillow)") from error
    array = np.ascontiguousarray(array)
    height, width = array.shape[:2]
    return Image.frombuffer(chosen, (width, height), array.tobytes(), "raw", chosen, 0, 1)


class ToPILImage:
    """:func:`to_pil_image` as a transform, with an optional fixed ``mode``."""

    def __init__(self, mode: str | None = None) -> None:
        self.mode = mode

    def __call__(self, pic: Any) -> Any:
        return to_pil_image(pic, self.mode)

    def __repr__(self) -> str:
        text = f"{self.__class__.__name__}("
        if self.mode is not None:
            text += f"mode={self.mode}"
        return text + ")"
