"""torchvision's ``roi_pool`` / ``RoIPool`` (Fast R-CNN's RoI max pooling) on mininn tensors.

With torchvision's kernel rules: box corners are scaled and rounded half away from zero,
a box spans ``end - start + 1`` pixels (at least 1), bin ``i`` covers
``[floor(i * bin), ceil((i + 1) * bin))`` offset by the box start and clipped to the map,
an empty bin is 0, and each output is the first maximum of its bin (row-major), which
is also where its gradient goes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import mininn
from mininn import nn
from mininn.tensor import Tensor
from mininn.vision.ops.roi_align import _pair, _rois_array, check_roi_boxes_shape

__all__ = ["roi_pool", "RoIPool"]


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


def _bin_edges(start: int, extent: int, bins: int, limit: int, dtype: Any) -> list[tuple[int, int]]:
    """``(begin, end)`` of each bin along one axis, in the kernel's precision."""
    size = dtype(extent) / dtype(bins)
    edges = []
    for i in range(bins):
        begin = int(np.floor(dtype(i) * size)) + start
        end = int(np.ceil(dtype(i + 1) * size)) + start
        edges.append((min(max(begin, 0), limit), min(max(end, 0), limit)))
    return edges


def _argmax_indices(data: np.ndarray, rois: np.ndarray, pooled: tuple[int, int],
                    spatial_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Flat ``h * W + w`` index of each bin's maximum ``(K, C, PH, PW)`` and which bins are non-empty."""
    _, channels, height, width = data.shape
    dtype = data.dtype.type if data.dtype.kind == "f" else np.float32
    corners = _round_half_away(rois[:, 1:].astype(dtype) * dtype(spatial_scale))
    index = np.zeros((len(rois), channels, *pooled), np.int64)
    valid = np.zeros((len(rois), 1, *pooled), bool)
    for k, (roi, (sw, sh, ew, eh)) in enumerate(zip(rois, corners)):
        feature = data[int(roi[0])]
        rows = _bin_edges(int(sh), max(int(eh - sh) + 1, 1), pooled[0], height, dtype)
        cols = _bin_edges(int(sw), max(int(ew - sw) + 1, 1), pooled[1], width, dtype)
        for i, (hs, he) in enumerate(rows):
            for j, (ws, we) in enumerate(cols):
                if he <= hs or we <= ws:
                    continue
                arg = feature[:, hs:he, ws:we].reshape(channels, -1).argmax(1)
                index[k, :, i, j] = (hs + arg // (we - ws)) * width + ws + arg % (we - ws)
                valid[k, 0, i, j] = True
    return index, valid


def roi_pool(input: Tensor, boxes: Tensor | list[Tensor], output_size: int | tuple[int, int],
             spatial_scale: float = 1.0) -> Tensor:
    """RoI max pooling: ``(N, C, H, W)`` features and K boxes -> ``(K, C, output_size[0], output_size[1])``.

    Args:
        input: the feature maps.
        boxes: a ``(K, 5)`` tensor of ``(batch index, x1, y1, x2, y2)``, or a list of ``(L, 4)`` box
            tensors, one per image of the batch.
        output_size: output bins ``(height, width)`` or one int for both.
        spatial_scale: factor from box coordinates to feature coordinates.

    Raises:
        AssertionError: ``boxes`` of the wrong shape (torchvision's messages).
        ValueError: ``input`` not 4-D.
    """
    check_roi_boxes_shape(boxes)
    if input.dim() != 4:
        raise ValueError(f"roi_pool expects input of shape (N, C, H, W); got {tuple(input.shape)}")
    pooled = _pair(output_size)
    rois = _rois_array(boxes)
    n, channels, height, width = input.shape
    if rois.shape[0] == 0:
        return mininn.zeros((0, channels, *pooled), dtype=input.dtype, device=input.device)
    index, valid = _argmax_indices(input.detach().cpu().numpy(), rois, pooled, float(spatial_scale))
    device = input.device
    batch = mininn.tensor(rois[:, 0].astype(np.int64)[:, None, None, None], device=device)
    channel = mininn.arange(channels, device=device).reshape(1, channels, 1, 1)
    gathered = input.reshape(n, channels, height * width)[batch, channel, mininn.tensor(index, device=device)]
    return mininn.where(mininn.tensor(valid, device=input.device), gathered, mininn.zeros_like(gathered))


class RoIPool(nn.Module):
    """:func:`roi_pool` as a module (no parameters).

    Args:
        output_size: output bins ``(height, width)`` or one int.
        spatial_scale: factor from box coordinates to feature coordinates.
    """

    def __init__(self, output_size: Any, spatial_scale: float) -> None:
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input: Tensor, rois: Tensor | list[Tensor]) -> Tensor:
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, "
                f"spatial_scale={self.spatial_scale})")
