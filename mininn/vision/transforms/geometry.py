"""torchvision's affine image warps on mininn tensors: ``rotate``, ``affine``, RandomRotation, RandomAffine.

As torchvision's tensor path: the inverse affine matrix about the image centre, a
sampling grid at pixel centres, ``grid_sample`` (nearest or bilinear, zeros outside,
``align_corners=False``), and ``fill`` for the pixels that come from outside the image.
PIL images are not warped here (convert with ToTensor first).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

import mininn
import mininn.nn.functional as NF
from mininn import nn
from mininn.tensor import Tensor
from mininn.vision.transforms._image import (
    InterpolationMode,
    _assert_image_tensor,
    _interpolation_mode,
    get_dimensions,
)

__all__ = ["rotate", "affine", "RandomRotation", "RandomAffine"]


def _inverse_affine_matrix(center: Sequence[float], angle: float, translate: Sequence[float], scale: float,
                           shear: Sequence[float]) -> list[float]:
    """Output-to-input map of rotation ``angle``, ``scale``, ``shear`` and ``translate`` about ``center``."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    matrix = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
    matrix[2] += matrix[0] * (-cx - tx) + matrix[1] * (-cy - ty) + cx
    matrix[5] += matrix[3] * (-cx - tx) + matrix[4] * (-cy - ty) + cy
    return matrix


def _affine_grid(matrix: list[float], w: int, h: int, ow: int, oh: int, dtype: Any) -> np.ndarray:
    """``(1, oh, ow, 2)`` sampling grid in [-1, 1] units for an output of ``ow x oh`` pixel centres."""
    theta = np.asarray(matrix, dtype).reshape(2, 3)
    xs = np.linspace(-ow * 0.5 + 0.5, ow * 0.5 - 0.5, ow, dtype=np.float32).astype(dtype)
    ys = np.linspace(-oh * 0.5 + 0.5, oh * 0.5 - 0.5, oh, dtype=np.float32).astype(dtype)
    base = np.stack([np.broadcast_to(xs, (oh, ow)), np.broadcast_to(ys[:, None], (oh, ow)),
                     np.ones((oh, ow), dtype)], axis=-1)
    scaled = theta.T / np.asarray([0.5 * w, 0.5 * h], dtype)
    return (base.reshape(oh * ow, 3) @ scaled).reshape(1, oh, ow, 2).astype(dtype)


def _warp(img: Tensor, matrix: list[float], mode: str, fill: Any,
          out_size: tuple[int, int] | None = None) -> Tensor:
    _assert_image_tensor(img)
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"Interpolation mode '{mode}' is unsupported with Tensor input")
    h, w = img.shape[-2:]
    ow, oh = out_size or (w, h)
    work = img.dtype if img.is_floating_point() else mininn.float32
    np_dtype = np.float64 if work == mininn.float64 else np.float32
    grid = mininn.tensor(_affine_grid(matrix, w, h, ow, oh, np_dtype), device=img.device)
    squeeze = img.ndim < 4
    x = (img.unsqueeze(0) if squeeze else img).to(work)
    grid = grid.expand(x.shape[0], oh, ow, 2)
    if fill is not None:
        x = mininn.cat((x, mininn.ones((x.shape[0], 1, h, w), dtype=work, device=img.device)), dim=1)
    x = NF.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        x, mask = x[:, :-1], x[:, -1:].expand(x.shape[0], x.shape[1] - 1, oh, ow)
        values = list(fill) if isinstance(fill, (tuple, list)) else [float(fill)]
        fill_img = mininn.tensor(values, dtype=work, device=img.device).view(1, len(values), 1, 1)
        fill_img = fill_img.expand_as(x)
        x = mininn.where(mask < 0.5, fill_img, x) if mode == "nearest" else x * mask + (1.0 - mask) * fill_img
    x = x.squeeze(0) if squeeze else x
    if x.dtype != img.dtype:
        x = mininn.round(x).to(img.dtype)
    return x


def _center_offset(img: Tensor, center: Sequence[float] | None) -> list[float]:
    if center is None:
        return [0.0, 0.0]
    _, height, width = get_dimensions(img)
    return [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]


def _expanded_size(matrix: list[float], w: int, h: int) -> tuple[int, int]:
    """Width and height that hold the whole rotated image (torchvision's rounding)."""
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0],
                    [0.5 * w, -0.5 * h, 1.0]], np.float32)
    new_pts = pts @ np.asarray(matrix, np.float32).reshape(2, 3).T
    low = new_pts.min(0) + np.array([w * 0.5, h * 0.5], np.float32)
    high = new_pts.max(0) + np.array([w * 0.5, h * 0.5], np.float32)
    tol = np.float32(1e-4)
    size = np.ceil(np.trunc(high / tol) * tol) - np.floor(np.trunc(low / tol) * tol)
    return int(size[0]), int(size[1])


def rotate(img: Tensor, angle: float, interpolation: Any = InterpolationMode.NEAREST, expand: bool = False,
           center: Sequence[int] | None = None, fill: Any = None) -> Tensor:
    """Rotate a tensor image by ``angle`` degrees counter-clockwise about ``center`` (default the middle).

    Raises:
        TypeError: a bad ``angle``, ``center`` or ``interpolation`` (torchvision's messages).
    """
    mode = _interpolation_mode(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    matrix = _inverse_affine_matrix(_center_offset(img, center), -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    size = _expanded_size(matrix, img.shape[-1], img.shape[-2]) if expand else None
    return _warp(img, matrix, mode.value, fill, size)


def affine(img: Tensor, angle: float, translate: Sequence[int], scale: float, shear: Any,
           interpolation: Any = InterpolationMode.NEAREST, fill: Any = None,
           center: Sequence[int] | None = None) -> Tensor:
    """Rotate, scale, shear and translate a tensor image about ``center`` (default the middle).

    Raises:
        TypeError, ValueError: arguments torchvision refuses (its messages).
    """
    mode = _interpolation_mode(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    shears = [shear, 0.0] if isinstance(shear, numbers.Number) else list(shear)
    shears = shears * 2 if len(shears) == 1 else shears
    if len(shears) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shears}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    matrix = _inverse_affine_matrix(_center_offset(img, center), float(angle), [1.0 * t for t in translate],
                                    scale, shears)
    return _warp(img, matrix, mode.value, fill)


def _setup_angle(x: Any, name: str, req_sizes: tuple[int, ...] = (2,)) -> list[float]:
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(x), float(x)]
    _check_sequence(x, name, req_sizes)
    return [float(d) for d in x]


def _check_sequence(x: Any, name: str, req_sizes: tuple[int, ...]) -> None:
    msg = req_sizes[0] if len(req_sizes) < 2 else " or ".join(str(s) for s in req_sizes)
    if not isinstance(x, Sequence):
        raise TypeError(f"{name} should be a sequence of length {msg}.")
    if len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {msg}.")


def _uniform(low: float, high: float) -> float:
    return low + (high - low) * float(mininn.rand(1).item())


def _fill_per_channel(img: Any, fill: Any) -> Any:
    channels = get_dimensions(img)[0]
    return [float(fill)] * channels if isinstance(fill, (int, float)) else [float(f) for f in fill]


def _check_fill(fill: Any) -> Any:
    if fill is None:
        return 0
    if not isinstance(fill, (Sequence, numbers.Number)):
        raise TypeError("Fill should be either a sequence or a number.")
    return fill


class RandomRotation(nn.Module):
    """Rotate by an angle drawn from ``degrees`` (a number ``d`` means ``(-d, d)``)."""

    def __init__(self, degrees: Any, interpolation: Any = InterpolationMode.NEAREST, expand: bool = False,
                 center: Sequence[int] | None = None, fill: Any = 0) -> None:
        super().__init__()
        if isinstance(interpolation, int):
            interpolation = _interpolation_mode(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if center is not None:
            _check_sequence(center, "center", req_sizes=(2,))
        self.center = center
        self.interpolation = interpolation
        self.expand = expand
        self.fill = _check_fill(fill)

    @staticmethod
    def get_params(degrees: Sequence[float]) -> float:
        """An angle drawn uniformly from ``degrees``."""
        return _uniform(float(degrees[0]), float(degrees[1]))

    def forward(self, img: Tensor) -> Tensor:
        angle = self.get_params(self.degrees)
        fill = _fill_per_channel(img, self.fill)
        return rotate(img, angle, self.interpolation, self.expand, self.center, fill)

    def __repr__(self) -> str:
        text = f"{self.__class__.__name__}(degrees={self.degrees}, interpolation={self.interpolation.value}"
        text += f", expand={self.expand}"
        text += f", center={self.center}" if self.center is not None else ""
        text += f", fill={self.fill}" if self.fill is not None else ""
        return text + ")"


class RandomAffine(nn.Module):
    """Random rotation (``degrees``), translation (fractions of the size), scale and shear.

    Raises:
        ValueError, TypeError: arguments torchvision refuses (its messages).
    """

    def __init__(self, degrees: Any, translate: Sequence[float] | None = None,
                 scale: Sequence[float] | None = None, shear: Any = None,
                 interpolation: Any = InterpolationMode.NEAREST, fill: Any = 0,
                 center: Sequence[int] | None = None) -> None:
        super().__init__()
        if isinstance(interpolation, int):
            interpolation = _interpolation_mode(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence(translate, "translate", req_sizes=(2,))
            if not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence(scale, "scale", req_sizes=(2,))
            if any(s <= 0 for s in scale):
                raise ValueError("scale values should be positive")
        self.scale = scale
        self.shear = _setup_angle(shear, name="shear", req_sizes=(2, 4)) if shear is not None else None
        self.interpolation = interpolation
        self.fill = _check_fill(fill)
        if center is not None:
            _check_sequence(center, "center", req_sizes=(2,))
        self.center = center

    @staticmethod
    def get_params(degrees: Sequence[float], translate: Sequence[float] | None,
                   scale_ranges: Sequence[float] | None, shears: Sequence[float] | None,
                   img_size: Sequence[int]) -> tuple[float, tuple[int, int], float, tuple[float, float]]:
        """``(angle, (tx, ty), scale, (shear_x, shear_y))`` drawn from the ranges."""
        angle = _uniform(float(degrees[0]), float(degrees[1]))
        translations = (0, 0)
        if translate is not None:
            max_dx, max_dy = float(translate[0] * img_size[0]), float(translate[1] * img_size[1])
            translations = (int(round(_uniform(-max_dx, max_dx))), int(round(_uniform(-max_dy, max_dy))))
        scale = _uniform(scale_ranges[0], scale_ranges[1]) if scale_ranges is not None else 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1])
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3])
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img: Tensor) -> Tensor:
        _, height, width = get_dimensions(img)
        params = self.get_params(self.degrees, self.translate, self.scale, self.shear, [width, height])
        angle, translations, scale, shear = params
        return affine(img, angle, translations, scale, shear, interpolation=self.interpolation,
                      fill=_fill_per_channel(img, self.fill), center=self.center)

    def __repr__(self) -> str:
        text = f"{self.__class__.__name__}(degrees={self.degrees}"
        text += f", translate={self.translate}" if self.translate is not None else ""
        text += f", scale={self.scale}" if self.scale is not None else ""
        text += f", shear={self.shear}" if self.shear is not None else ""
        if self.interpolation != InterpolationMode.NEAREST:
            text += f", interpolation={self.interpolation.value}"
        text += f", fill={self.fill}" if self.fill != 0 else ""
        text += f", center={self.center}" if self.center is not None else ""
        return text + ")"
