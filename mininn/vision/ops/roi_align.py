"""torchvision's ``roi_align`` / ``RoIAlign`` (Mask R-CNN's RoI Align) on mininn tensors.

Each output bin averages bilinear samples on a regular grid inside its part of the
box, with torchvision's kernel rules: ``sampling_ratio`` samples per bin side (or
``ceil(roi size / output size)`` when it is <= 0), samples beyond one pixel outside
the feature map count as 0, coordinates clamp to the edge, and ``aligned=True``
shifts boxes by half a pixel (``aligned=False`` keeps boxes at least 1x1).

Sampling and bilinear weights are separable along y and x, so each box becomes
``Wy @ feature @ Wx.T`` with constant weight matrices: the result carries
gradients to ``input`` (not to the boxes, as in torchvision).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import mininn
from mininn import nn
from mininn.tensor import Tensor

__all__ = ["roi_align", "RoIAlign"]


def _pair(value: int | tuple[int, int] | list[int]) -> tuple[int, int]:
    if isinstance(value, (tuple, list)):
        return int(value[0]), int(value[1])
    return int(value), int(value)


def check_roi_boxes_shape(boxes: Tensor | list[Tensor] | tuple[Tensor, ...]) -> None:
    """torchvision's check: a ``(K, 5)`` tensor or a list of ``(L, 4)`` tensors (its messages)."""
    if isinstance(boxes, (list, tuple)):
        for tensor in boxes:
            if tensor.dim() != 2 or tensor.shape[1] != 4:
                raise AssertionError(
                    "The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
    elif isinstance(boxes, Tensor):
        if boxes.dim() != 2 or boxes.shape[1] != 5:
            raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 5]")
    else:
        raise AssertionError("boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]")


def _rois_array(boxes: Tensor | list[Tensor] | tuple[Tensor, ...]) -> np.ndarray:
    """``(K, 5)`` float64 rows ``(batch index, x1, y1, x2, y2)``."""
    def array(t: Tensor) -> np.ndarray:
        return t.detach().cpu().numpy().astype(np.float64)

    if isinstance(boxes, Tensor):
        return array(boxes)
    parts = [np.concatenate([np.full((b.shape[0], 1), i, np.float64), array(b)], 1)
             for i, b in enumerate(boxes)]
    return np.concatenate(parts, 0) if parts else np.zeros((0, 5), np.float64)


def _axis_weights(start: float, size: float, bins: int, grid: int, length: int) -> np.ndarray:
    """``(bins, length)``: each bin's summed bilinear weights of its ``grid`` samples along one axis."""
    weights = np.zeros((bins, length), np.float64)
    if grid <= 0:
        return weights
    bin_size = size / bins
    for b in range(bins):
        for i in range(grid):
            coordinate = start + b * bin_size + (i + 0.5) * bin_size / grid
            if coordinate < -1.0 or coordinate > length:
                continue  # the kernel's "empty" sample: it adds 0 but still counts
            coordinate = max(coordinate, 0.0)
            low = int(coordinate)
            if low >= length - 1:
                weights[b, length - 1] += 1.0
                continue
            frac = coordinate - low
            weights[b, low] += 1.0 - frac
            weights[b, low + 1] += frac
    return weights


def _roi_weights(roi: np.ndarray, spatial_scale: float, output_size: tuple[int, int], sampling_ratio: int,
                 aligned: bool, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-box ``Wy`` ``(PH, H)`` and ``Wx`` ``(PW, W)``; their product averages each bin's samples."""
    offset = 0.5 if aligned else 0.0
    start_w, start_h, end_w, end_h = (roi[1:] * spatial_scale - offset).tolist()
    roi_w, roi_h = end_w - start_w, end_h - start_h
    if not aligned:
        roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
    pooled_h, pooled_w = output_size
    grid_h = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_h / pooled_h)
    grid_w = sampling_ratio if sampling_ratio > 0 else math.ceil(roi_w / pooled_w)
    count = max(grid_h * grid_w, 1)
    wy = _axis_weights(start_h, roi_h, pooled_h, grid_h, height) / count
    wx = _axis_weights(start_w, roi_w, pooled_w, grid_w, width)
    return wy, wx


def roi_align(input: Tensor, boxes: Tensor | list[Tensor], output_size: int | tuple[int, int],
              spatial_scale: float = 1.0, sampling_ratio: int = -1, aligned: bool = False) -> Tensor:
    """RoI Align: ``(N, C, H, W)`` features and K boxes -> ``(K, C, output_size[0], output_size[1])``.

    Args:
        input: the feature maps.
        boxes: a ``(K, 5)`` tensor of ``(batch index, x1, y1, x2, y2)``, or a list of ``(L, 4)`` box
            tensors, one per image of the batch.
        output_size: output bins ``(height, width)`` or one int for both.
        spatial_scale: factor from box coordinates to feature coordinates (0.5 for a stride-2 map).
        sampling_ratio: samples per bin side; <= 0 samples ``ceil(box size / output size)``.
        aligned: shift boxes by -0.5 pixel (Detectron2's alignment).

    Raises:
        AssertionError: ``boxes`` of the wrong shape (torchvision's messages).
        ValueError: ``input`` not 4-D.
    """
    check_roi_boxes_shape(boxes)
    if input.dim() != 4:
        raise ValueError(f"roi_align expects input of shape (N, C, H, W); got {tuple(input.shape)}")
    pooled = _pair(output_size)
    rois = _rois_array(boxes)
    _, channels, height, width = input.shape
    if rois.shape[0] == 0:
        return mininn.zeros((0, channels, *pooled), dtype=input.dtype, device=input.device)
    pieces = []
    for roi in rois:
        wy, wx = _roi_weights(roi, float(spatial_scale), pooled, int(sampling_ratio), bool(aligned), height,
                              width)
        feature = input[int(roi[0])]  # (C, H, W)
        wy_t = mininn.tensor(wy, dtype=input.dtype, device=input.device)
        wx_t = mininn.tensor(wx.T, dtype=input.dtype, device=input.device)
        pieces.append(mininn.matmul(mininn.matmul(wy_t, feature), wx_t))  # (C, PH, PW)
    return mininn.stack(pieces, 0)


class RoIAlign(nn.Module):
    """:func:`roi_align` as a module (no parameters).

    Args:
        output_size: output bins ``(height, width)`` or one int.
        spatial_scale: factor from box coordinates to feature coordinates.
        sampling_ratio: samples per bin side (<= 0: adaptive).
        aligned: shift boxes by -0.5 pixel.
    """

    def __init__(self, output_size: Any, spatial_scale: float, sampling_ratio: int,
                 aligned: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale}, sampling_ratio={self.sampling_ratio}, "
                f"aligned={self.aligned})")
