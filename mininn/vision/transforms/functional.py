"""``torchvision.transforms.functional`` on mininn tensors: the functions behind the basic transforms.

Images are tensors of shape ``(..., C, H, W)`` (``(H, W)`` for one channel), as on
torchvision's tensor path; :func:`to_tensor` also takes ``(H, W[, C])`` NumPy arrays,
and PIL images (when Pillow is installed) also go through :func:`resize` and the crops
by Pillow's own methods, as on torchvision's PIL path. Resizing follows torchvision's tensor
path: ``F.interpolate`` with ``align_corners=False`` and anti-aliasing for bilinear
and bicubic unless ``antialias=False``.
"""

from __future__ import annotations

import numbers
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import mininn
import mininn.nn.functional as F
from mininn.tensor import Tensor
from mininn.vision.transforms._image import (
    _PIL_MODES,
    InterpolationMode,
    _assert_image_tensor,
    _interpolation_mode,
    _is_pil_image,
    get_dimensions,
)

__all__ = [
    "InterpolationMode",
    "get_dimensions",
    "to_tensor",
    "pil_to_tensor",
    "convert_image_dtype",
    "normalize",
    "resize",
    "crop",
    "center_crop",
    "hflip",
    "vflip",
    "pad",
    "resized_crop",
    "rgb_to_grayscale",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_saturation",
    "adjust_hue",
    "gaussian_blur",
    "erase",
    "rotate",
    "affine",
    "to_pil_image",
]


_MAX_VALUES = {"uint8": 255, "int8": 127, "int16": 32767, "uint16": 65535, "int32": 2147483647,
               "int64": 9223372036854775807}


def _pil_array(pic: Any) -> np.ndarray:
    """A PIL image as an ``(H, W, C)`` array of torchvision's dtype for its mode."""
    by_mode = {"I": np.int32, "I;16" if sys.byteorder == "little" else "I;16B": np.int16, "F": np.float32}
    array = np.array(pic, by_mode.get(pic.mode, np.uint8), copy=True)
    if pic.mode == "1":
        array = 255 * array
    return array.reshape(pic.size[1], pic.size[0], len(pic.getbands()))


def to_tensor(pic: Any) -> Tensor:
    """An ``(H, W[, C])`` array or a PIL image as a ``(C, H, W)`` tensor; uint8 becomes float in [0, 1].

    Raises:
        TypeError: ``pic`` is neither a NumPy array nor a PIL image.
        ValueError: an array that is not 2- or 3-dimensional.
    """
    if not (_is_pil_image(pic) or isinstance(pic, np.ndarray)):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if isinstance(pic, np.ndarray) and pic.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    array = _pil_array(pic) if _is_pil_image(pic) else (pic[:, :, None] if pic.ndim == 2 else pic)
    img = mininn.from_numpy(np.ascontiguousarray(array.transpose((2, 0, 1))))
    if img.dtype == mininn.uint8:
        return img.to(dtype=mininn.get_default_dtype()).div(255)
    return img


def pil_to_tensor(pic: Any) -> Tensor:
    """A PIL image as a ``(C, H, W)`` tensor of its own dtype (no scaling).

    Raises:
        TypeError: ``pic`` is not a PIL image.
    """
    if not _is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    array = np.array(pic, copy=True).reshape(pic.size[1], pic.size[0], len(pic.getbands()))
    return mininn.from_numpy(np.ascontiguousarray(array.transpose((2, 0, 1))))


def _max_value(dtype: Any) -> int:
    return _MAX_VALUES.get(str(dtype).removeprefix("mininn."), 1)


def convert_image_dtype(image: Tensor, dtype: Any = mininn.float32) -> Tensor:
    """``image`` in ``dtype``, rescaling between integer ranges and [0, 1] floats as torchvision does.

    Raises:
        TypeError: ``image`` is not a tensor.
        RuntimeError: a float to int32/int64 cast that cannot be exact (torchvision's message).
    """
    if not isinstance(image, Tensor):
        raise TypeError("Input img should be Tensor Image")
    if image.dtype == dtype:
        return image
    to_float = mininn.tensor(0, dtype=dtype).is_floating_point()
    if image.is_floating_point():
        if to_float:
            return image.to(dtype)
        if (image.dtype == mininn.float32 and dtype in (mininn.int32, mininn.int64)) or (
                image.dtype == mininn.float64 and dtype == mininn.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        eps = 1e-3  # (x * (max + 1 - eps)) maps [0, 1] evenly onto the integers
        return image.mul(float(_max_value(dtype)) + 1.0 - eps).to(dtype)
    input_max = float(_max_value(image.dtype))
    if to_float:
        return image.to(dtype) / input_max
    output_max = float(_max_value(dtype))
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        return mininn.div(image, factor, rounding_mode="floor").to(dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return image.to(dtype) * factor


def normalize(tensor: Tensor, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> Tensor:
    """``(tensor - mean) / std`` per channel of a ``(..., C, H, W)`` float tensor.

    Raises:
        TypeError: not a tensor image, or not floating point (torchvision's messages).
        ValueError: fewer than 3 dimensions, or a std of zero.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    _assert_image_tensor(tensor)
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tensor.size()}")
    if not inplace:
        tensor = tensor.clone()
    mean_t = mininn.as_tensor(mean, dtype=tensor.dtype, device=tensor.device)
    std_t = mininn.as_tensor(std, dtype=tensor.dtype, device=tensor.device)
    if (std_t == 0).any():
        raise ValueError(
            f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
    if mean_t.ndim == 1:
        mean_t = mean_t.view(-1, 1, 1)
    if std_t.ndim == 1:
        std_t = std_t.view(-1, 1, 1)
    return tensor.sub_(mean_t).div_(std_t)


def _resized_output_size(image_size: tuple[int, int], size: list[int], max_size: int | None) -> list[int]:
    h, w = image_size
    short, long = (w, h) if w <= h else (h, w)
    if len(size) == 2:
        return [size[0], size[1]]
    requested = size[0]
    new_short, new_long = requested, int(requested * long / short)
    if max_size is not None:
        if max_size <= requested:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested "
                             f"size for the smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    return [new_h, new_w]


def resize(img: Tensor, size: int | Sequence[int], interpolation: Any = InterpolationMode.BILINEAR,
           max_size: int | None = None, antialias: bool | None = True) -> Tensor:
    """Resize a ``(..., H, W)`` tensor image; an int ``size`` matches the smaller edge, keeping the aspect.

    Args:
        img: the image (uint8 or float; integer images are rounded back to their dtype).
        size: ``(h, w)``, or the smaller edge's length.
        interpolation: an :class:`InterpolationMode` or Pillow's integer constant.
        max_size: the longest the longer edge may become (only with an int ``size``).
        antialias: anti-alias bilinear and bicubic downsampling (``None`` means ``False`` for tensors).

    Raises:
        TypeError: a bad ``interpolation``.
        ValueError: a ``size`` of another length, or ``max_size`` with a two-value ``size``.
    """
    mode = _interpolation_mode(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in [1, 2]:
            raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element "
                             "tuple/list")
        if max_size is not None and len(size) != 1:
            raise ValueError("max_size should only be passed if size specifies the length of the smaller "
                             "edge, i.e. size should be an int or a sequence of length 1 in torchscript "
                             "mode.")
    _, height, width = get_dimensions(img)
    requested = [size] if isinstance(size, int) else list(size)
    output_size = _resized_output_size((height, width), requested, max_size)
    if [height, width] == output_size:
        return img
    if _is_pil_image(img):  # Pillow resizes (always anti-aliased), as torchvision's PIL path
        if antialias is False:
            warnings.warn("Anti-alias option is always applied for PIL Image input. "
                          "Argument antialias is ignored.", stacklevel=2)
        return img.resize(tuple(output_size[::-1]), _PIL_MODES[mode])
    if mode.value not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError(f"Interpolation mode {mode.value!r} is only for PIL images; tensors take nearest, "
                         "nearest-exact, bilinear or bicubic")
    smooth = bool(antialias) and mode.value in ("bilinear", "bicubic")
    return _resize_tensor(img, output_size, mode.value, smooth)


def _resize_tensor(img: Tensor, size: list[int], mode: str, antialias: bool) -> Tensor:
    out_dtype = img.dtype
    squeeze = img.ndim < 4
    x = img.unsqueeze(0) if squeeze else img
    cast = out_dtype not in (mininn.float32, mininn.float64)
    if cast:
        x = x.to(mininn.float32)
    align_corners = False if mode in ("bilinear", "bicubic") else None
    x = F.interpolate(x, size=size, mode=mode, align_corners=align_corners, antialias=antialias)
    if mode == "bicubic" and out_dtype == mininn.uint8:
        x = x.clamp(min=0, max=255)
    if squeeze:
        x = x.squeeze(0)
    if cast:
        if not mininn.tensor(0, dtype=out_dtype).is_floating_point():
            x = mininn.round(x)
        x = x.to(out_dtype)
    return x


def crop(img: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    """The ``height x width`` region at ``(top, left)``; parts outside the image are zero."""
    if _is_pil_image(img):
        return img.crop((left, top, left + width, top + height))
    _assert_image_tensor(img)
    _, h, w = get_dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        padding_ltrb = [max(-left + min(0, right), 0), max(-top + min(0, bottom), 0),
                        max(right - max(w, left), 0), max(bottom - max(h, top), 0)]
        region = img[..., max(top, 0):bottom, max(left, 0):right]
        return F.pad(region, [padding_ltrb[0], padding_ltrb[2], padding_ltrb[1], padding_ltrb[3]], value=0)
    return img[..., top:bottom, left:right]


def center_crop(img: Tensor, output_size: int | Sequence[int]) -> Tensor:
    """The central ``output_size`` region (``(h, w)`` or one int), zero-padded where the image is smaller."""
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    elif isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        output_size = (output_size[0], output_size[0])
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = output_size
    if (crop_width > image_width or crop_height > image_height) and not _is_pil_image(img):  # PIL crops pad
        pad_w, pad_h = max(crop_width - image_width, 0), max(crop_height - image_height, 0)
        img = F.pad(img, [pad_w // 2, (pad_w + 1) // 2, pad_h // 2, (pad_h + 1) // 2], value=0)
        _, image_height, image_width = get_dimensions(img)
        if crop_width == image_width and crop_height == image_height:
            return img
    crop_top = int(round((image_height - crop_height) / 2.0))
    crop_left = int(round((image_width - crop_width) / 2.0))
    return crop(img, crop_top, crop_left, crop_height, crop_width)


def hflip(img: Any) -> Any:
    """The image mirrored left to right (a tensor's last dimension; a PIL image through Pillow)."""
    if _is_pil_image(img):
        return img.transpose(sys.modules["PIL.Image"].Transpose.FLIP_LEFT_RIGHT)
    _assert_image_tensor(img)
    return img.flip(-1)


def vflip(img: Any) -> Any:
    """The image mirrored top to bottom (a tensor's second-last dimension; a PIL image through Pillow)."""
    if _is_pil_image(img):
        return img.transpose(sys.modules["PIL.Image"].Transpose.FLIP_TOP_BOTTOM)
    _assert_image_tensor(img)
    return img.flip(-2)


def _pad_amounts(padding: int | Sequence[int]) -> list[int]:
    """torchvision's padding forms (one int; 1, 2 or 4 values) as ``[left, right, top, bottom]``."""
    if isinstance(padding, int):
        return [padding] * 4
    values = list(padding)
    if len(values) == 1:
        return values * 4
    if len(values) == 2:
        return [values[0], values[0], values[1], values[1]]
    return [values[0], values[2], values[1], values[3]]


def pad(img: Tensor, padding: int | Sequence[int], fill: float = 0, padding_mode: str = "constant") -> Tensor:
    """Pad a tensor image: one int for every side, ``(left/right, top/bottom)``, or ``(l, t, r, b)``.

    Raises:
        TypeError: a bad ``padding`` or ``fill`` (torchvision's messages), or a PIL image.
        ValueError: a ``padding`` of another length or an unknown ``padding_mode``; ``symmetric``
            padding is not available in mininn.
    """
    _assert_image_tensor(img)
    fill = 0 if fill is None else fill
    if not isinstance(padding, (int, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if not isinstance(fill, (int, float)):
        raise TypeError("Got inappropriate fill arg")
    if isinstance(padding, (tuple, list)) and len(padding) not in [1, 2, 4]:
        raise ValueError(
            f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if padding_mode == "symmetric":
        raise ValueError(
            "padding_mode='symmetric' is not available in mininn; use 'reflect', 'edge' or 'constant'")
    amounts = _pad_amounts(padding)
    squeeze = img.ndim < 4
    x = img.unsqueeze(0) if squeeze else img
    cast = padding_mode != "constant" and img.dtype not in (mininn.float32, mininn.float64)
    if cast:
        x = x.to(mininn.float32)
    if padding_mode == "constant":
        x = F.pad(x, amounts, mode="constant", value=float(fill))
    else:
        x = F.pad(x, amounts, mode="replicate" if padding_mode == "edge" else "reflect")
    x = x.squeeze(0) if squeeze else x
    return x.to(img.dtype) if cast else x


def resized_crop(img: Any, top: int, left: int, height: int, width: int, size: int | Sequence[int],
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool | None = True) -> Any:
    """:func:`crop` then :func:`resize` (RandomResizedCrop's step)."""
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def rgb_to_grayscale(img: Tensor, num_output_channels: int = 1) -> Tensor:
    """Luma ``0.2989 R + 0.587 G + 0.114 B`` of a ``(..., 3, H, W)`` tensor, as 1 or 3 channels.

    Raises:
        TypeError: fewer than 3 dimensions, or channels other than 1 or 3.
        ValueError: ``num_output_channels`` other than 1 or 3.
    """
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    if img.shape[-3] not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {img.shape[-3]}")
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if img.shape[-3] == 3:
        r, g, b = img.unbind(dim=-3)
        gray = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(dim=-3)
    else:
        gray = img.clone()
    return gray.expand(img.shape) if num_output_channels == 3 else gray


def _assert_channels(img: Tensor, permitted: list[int]) -> None:
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(f"Input image tensor permitted channel values are {permitted}, but found {c}")


def _blend(img1: Tensor, img2: Tensor, ratio: float) -> Tensor:
    """``ratio * img1 + (1 - ratio) * img2`` clamped to the dtype's range, in ``img1``'s dtype."""
    bound = _max_value(img1.dtype)
    return (float(ratio) * img1 + (1.0 - float(ratio)) * img2).clamp(0, bound).to(img1.dtype)


def adjust_brightness(img: Tensor, brightness_factor: float) -> Tensor:
    """Scale the values by ``brightness_factor`` (0 black, 1 unchanged), clamped to the dtype's range.

    Raises:
        ValueError: a negative factor (torchvision's message).
    """
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    return _blend(img, mininn.zeros_like(img), brightness_factor)


def adjust_contrast(img: Tensor, contrast_factor: float) -> Tensor:
    """Blend with the image's mean gray level (0 flat gray, 1 unchanged).

    Raises:
        ValueError: a negative factor (torchvision's message).
    """
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [3, 1])
    dtype = img.dtype if img.is_floating_point() else mininn.float32
    gray = rgb_to_grayscale(img) if get_dimensions(img)[0] == 3 else img
    mean = gray.to(dtype).mean(dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


def adjust_saturation(img: Tensor, saturation_factor: float) -> Tensor:
    """Blend with the grayscale image (0 gray, 1 unchanged); one-channel images are returned as they are.

    Raises:
        ValueError: a negative factor (torchvision's message).
    """
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:
        return img
    return _blend(img, rgb_to_grayscale(img), saturation_factor)


def _rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    r, g, b = rgb[..., 0, :, :], rgb[..., 1, :, :], rgb[..., 2, :, :]
    maxc, minc = rgb.max(axis=-3), rgb.min(axis=-3)
    equal = maxc == minc
    chroma = maxc - minc
    s = chroma / np.where(equal, 1.0, maxc)
    divisor = np.where(equal, 1.0, chroma)
    rc, gc, bc = (maxc - r) / divisor, (maxc - g) / divisor, (maxc - b) / divisor
    h = ((maxc == r) * (bc - gc) + ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
         + ((maxc != g) & (maxc != r)) * (4.0 + gc - rc))
    h = np.fmod(h / 6.0 + 1.0, 1.0)
    return np.stack((h, s, maxc), axis=-3).astype(rgb.dtype)


def _hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    h, s, v = hsv[..., 0, :, :], hsv[..., 1, :, :], hsv[..., 2, :, :]
    sector = np.floor(h * 6.0)
    f = h * 6.0 - sector
    sector = sector.astype(np.int32) % 6
    p = np.clip(v * (1.0 - s), 0.0, 1.0)
    q = np.clip(v * (1.0 - s * f), 0.0, 1.0)
    t = np.clip(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    channels = [(v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q)]  # r, g, b by sector
    out = [np.select([sector == k for k in range(6)], list(c)) for c in channels]
    return np.stack(out, axis=-3).astype(hsv.dtype)


def adjust_hue(img: Tensor, hue_factor: float) -> Tensor:
    """Rotate the hue by ``hue_factor`` of a turn (in [-0.5, 0.5]); one-channel images are unchanged.

    Raises:
        ValueError: ``hue_factor`` outside [-0.5, 0.5] (torchvision's message).
        TypeError: ``img`` is not a tensor.
    """
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if not isinstance(img, Tensor):
        raise TypeError("Input img should be Tensor image")
    _assert_image_tensor(img)
    _assert_channels(img, [1, 3])
    if get_dimensions(img)[0] == 1:
        return img
    hsv = _rgb_to_hsv(convert_image_dtype(img, mininn.float32).detach().cpu().numpy())
    hsv[..., 0, :, :] = (hsv[..., 0, :, :] + np.float32(hue_factor)) % 1.0
    rgb = mininn.tensor(_hsv_to_rgb(hsv), device=img.device)
    return convert_image_dtype(rgb, img.dtype)


def _gaussian_kernel1d(kernel_size: int, sigma: float, dtype: Any) -> np.ndarray:
    half = (kernel_size - 1) * 0.5
    x = np.linspace(-half, half, kernel_size, dtype=dtype)
    pdf = np.exp(-0.5 * (x / dtype(sigma)) ** 2)
    return pdf / pdf.sum()


def gaussian_blur(img: Tensor, kernel_size: int | Sequence[int], sigma: Any = None) -> Tensor:
    """Blur a tensor image with a ``kernel_size`` Gaussian (reflect-padded, one kernel per channel).

    Args:
        img: ``(..., C, H, W)`` tensor image.
        kernel_size: odd positive ``(kx, ky)`` or one int.
        sigma: ``(sx, sy)`` or one float; default ``0.15 * k + 0.35``.

    Raises:
        TypeError: a bad ``kernel_size``, ``sigma`` or image (torchvision's messages).
        ValueError: an even or negative kernel size, or a non-positive sigma.
    """
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}")
    sizes = [kernel_size, kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
    if len(sizes) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(sizes)}")
    if any(k % 2 == 0 or k < 0 for k in sizes):
        raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [k * 0.15 + 0.35 for k in sizes]
    if not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, (int, float)):
        sigmas = [float(sigma)] * 2
    else:
        sigmas = list(sigma) * (2 if len(sigma) == 1 else 1)
    if len(sigmas) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigmas)}")
    if any(s <= 0.0 for s in sigmas):
        raise ValueError(f"sigma should have positive values. Got {sigma}")
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor. Got {type(img)}")
    _assert_image_tensor(img)
    work = img.dtype if img.is_floating_point() else mininn.float32
    np_dtype = np.float64 if work == mininn.float64 else np.float32
    kernel = np.outer(_gaussian_kernel1d(sizes[1], sigmas[1], np_dtype),
                      _gaussian_kernel1d(sizes[0], sigmas[0], np_dtype))
    channels = img.shape[-3]
    weight = mininn.tensor(np.broadcast_to(kernel, (channels, 1, *kernel.shape)).copy(), device=img.device)
    squeeze = img.ndim < 4
    x = (img.unsqueeze(0) if squeeze else img).to(work)
    x = F.pad(x, [sizes[0] // 2, sizes[0] // 2, sizes[1] // 2, sizes[1] // 2], mode="reflect")
    x = F.conv2d(x, weight, groups=channels)
    x = x.squeeze(0) if squeeze else x
    if x.dtype != img.dtype:
        x = mininn.round(x).to(img.dtype)
    return x


def erase(img: Tensor, i: int, j: int, h: int, w: int, v: Tensor, inplace: bool = False) -> Tensor:
    """``img`` with the ``h x w`` region at ``(i, j)`` set to ``v`` (a copy unless ``inplace``).

    Raises:
        TypeError: ``img`` is not a tensor image.
    """
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    _assert_image_tensor(img)
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img


from mininn.vision.transforms.geometry import affine, rotate  # noqa: E402  (geometry builds on the above)
from mininn.vision.transforms.pil import to_pil_image  # noqa: E402
