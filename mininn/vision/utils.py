"""``torchvision.utils`` on mininn: ``make_grid`` and ``save_image``.

Generative model files (GANs, VAEs, diffusion) import these at the top to tile and save
samples; here they give torchvision's grid (same layout, padding, normalisation and
channel handling) and write it through Pillow when it is installed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

import mininn
from mininn.tensor import Tensor

__all__ = ["make_grid", "save_image"]


def _as_batch(tensor: Tensor | list[Tensor]) -> tuple[np.ndarray, Any]:
    """The images as an ``(N, C, H, W)`` array (one channel repeated to three, as torchvision)."""
    if isinstance(tensor, list):
        for t in tensor:
            if not isinstance(t, Tensor):
                raise TypeError(f"tensor or list of tensors expected, got a list containing {type(t)}")
        tensor = mininn.stack(tensor, dim=0)
    elif not isinstance(tensor, Tensor):
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    device = tensor.device
    array = tensor.detach().cpu().numpy().copy()
    if array.ndim == 2:
        array = array[None]
    if array.ndim == 3:
        array = (np.concatenate([array] * 3, 0) if array.shape[0] == 1 else array)[None]
    if array.ndim == 4 and array.shape[1] == 1:
        array = np.concatenate([array] * 3, 1)
    return array, device


def _normalize(images: np.ndarray, value_range: tuple[float, float] | None) -> None:
    low, high = value_range if value_range is not None else (float(images.min()), float(images.max()))
    np.clip(images, low, high, out=images)
    images -= images.dtype.type(low)
    images /= images.dtype.type(max(high - low, 1e-5))


def make_grid(tensor: Tensor | list[Tensor], nrow: int = 8, padding: int = 2, normalize: bool = False,
              value_range: tuple[float, float] | None = None, scale_each: bool = False,
              pad_value: float = 0.0) -> Tensor:
    """Tile a batch of images ``(N, C, H, W)`` (or a list of ``(C, H, W)``) into one ``(C, H', W')`` image.

    Args:
        tensor: the images; one-channel images become three-channel.
        nrow: images per row.
        padding: pixels between (and around) the images.
        normalize: shift and scale to [0, 1] by ``value_range`` (default: the images' min and max).
        value_range: ``(min, max)`` for ``normalize``.
        scale_each: normalise each image by its own range.
        pad_value: value of the padding.

    Raises:
        TypeError: not a tensor or list of tensors, or a ``value_range`` that is not a tuple.
    """
    images, device = _as_batch(tensor)
    if normalize is True:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        for batch in (images if scale_each is True else [images]):
            _normalize(batch, value_range)
    if images.shape[0] == 1:
        return mininn.tensor(images[0], device=device)
    nmaps = images.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = images.shape[2] + padding, images.shape[3] + padding
    grid_shape = (images.shape[1], height * ymaps + padding, width * xmaps + padding)
    grid = np.full(grid_shape, pad_value, images.dtype)
    for k in range(nmaps):
        y, x = divmod(k, xmaps)
        grid[:, y * height + padding:(y + 1) * height, x * width + padding:(x + 1) * width] = images[k]
    return mininn.tensor(grid, device=device)


def save_image(tensor: Tensor | list[Tensor], fp: str | Path | BinaryIO, format: str | None = None,
               **kwargs: Any) -> None:
    """Write :func:`make_grid`'s image (values in [0, 1]) to ``fp`` as 8-bit pixels, through Pillow.

    Raises:
        ImportError: Pillow is not installed.
    """
    try:
        from PIL import Image
    except ImportError as error:
        raise ImportError("torchvision.utils.save_image needs Pillow (pip install pillow)") from error
    grid = make_grid(tensor, **kwargs).detach().cpu().numpy()
    pixels = np.clip(grid * 255 + 0.5, 0, 255).transpose(1, 2, 0).astype(np.uint8)
    Image.fromarray(pixels).save(fp, format=format)
