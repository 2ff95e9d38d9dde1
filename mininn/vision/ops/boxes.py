"""torchvision's box operations on mininn tensors.

Boxes are ``(..., 4)`` tensors in ``(x1, y1, x2, y2)`` ("xyxy") unless a ``fmt`` says
otherwise; ``"xywh"`` is a corner plus width and height, ``"cxcywh"`` a centre plus
width and height. Arithmetic runs on mininn tensors, so the IoU functions carry
gradients (as in IoU-based losses); :func:`nms` and :func:`batched_nms` return int64
indices, computed as torchvision's CPU kernel does. Rotated formats are not available.
"""

from __future__ import annotations

import numpy as np

import mininn
from mininn.tensor import Tensor

__all__ = [
    "nms",
    "batched_nms",
    "remove_small_boxes",
    "clip_boxes_to_image",
    "box_convert",
    "box_area",
    "box_iou",
    "generalized_box_iou",
]

_AXIS_ALIGNED = ("xyxy", "xywh", "cxcywh")
_ROTATED = ("xywhr", "cxcywhr", "xyxyxyxy")


def _upcast(t: Tensor) -> Tensor:
    """float16/bfloat16 -> float32 and small ints -> int32, against overflow in products (as torchvision)."""
    if t.is_floating_point():
        return t if t.dtype in (mininn.float32, mininn.float64) else t.float()
    return t if t.dtype in (mininn.int32, mininn.int64) else t.int()


def _greedy_keep(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Indices kept by greedy NMS, highest score first: a box goes when its IoU with a kept one exceeds the
    threshold."""
    order = np.argsort(-scores, kind="stable")
    x1, y1, x2, y2 = (boxes[:, i] for i in range(4))
    areas = (x2 - x1) * (y2 - y1)
    suppressed = np.zeros(len(order), dtype=bool)
    keep = []
    for rank, i in enumerate(order):
        if suppressed[rank]:
            continue
        keep.append(i)
        rest = order[rank + 1:]
        width = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0, None)
        height = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0, None)
        inter = width * height
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = inter / (areas[i] + areas[rest] - inter)
        suppressed[rank + 1:] |= iou > iou_threshold
    return np.asarray(keep, dtype=np.int64)


def _check_nms_inputs(boxes: Tensor, scores: Tensor) -> None:
    """torchvision's kernel checks, with its messages."""
    if boxes.dim() != 2:
        raise RuntimeError(f"boxes should be a 2d tensor, got {boxes.dim()}D")
    if boxes.shape[1] != 4:
        raise RuntimeError(f"boxes should have 4 elements in dimension 1, got {boxes.shape[1]}")
    if scores.dim() != 1:
        raise RuntimeError(f"scores should be a 1d tensor, got {scores.dim()}D")
    if boxes.shape[0] != scores.shape[0]:
        raise RuntimeError("boxes and scores should have same number of elements in dimension 0, "
                           f"got {boxes.shape[0]} and {scores.shape[0]}")


def nms(boxes: Tensor, scores: Tensor, iou_threshold: float) -> Tensor:
    """Non-maximum suppression: drop each box whose IoU with a higher-scoring kept box is over the threshold.

    Args:
        boxes: ``(N, 4)`` boxes in ``(x1, y1, x2, y2)`` format.
        scores: ``(N,)`` scores.
        iou_threshold: boxes with IoU ``> iou_threshold`` against a kept box are discarded.

    Returns:
        int64 indices of the kept boxes, in decreasing order of score.

    Raises:
        RuntimeError: ``boxes`` not ``(N, 4)`` or ``scores`` not ``(N,)`` (torchvision's messages).
    """
    _check_nms_inputs(boxes, scores)
    keep = _greedy_keep(boxes.detach().cpu().numpy(), scores.detach().cpu().numpy(), float(iou_threshold))
    return mininn.tensor(keep, dtype=mininn.int64, device=boxes.device)


def batched_nms(boxes: Tensor, scores: Tensor, idxs: Tensor, iou_threshold: float) -> Tensor:
    """:func:`nms` within each category: boxes of different ``idxs`` never suppress each other.

    Args:
        boxes: ``(N, 4)`` boxes in ``(x1, y1, x2, y2)`` format.
        scores: ``(N,)`` scores.
        idxs: ``(N,)`` category of each box.
        iou_threshold: as in :func:`nms`.

    Returns:
        int64 indices of the kept boxes, in decreasing order of score.
    """
    _check_nms_inputs(boxes, scores)
    box_array = boxes.detach().cpu().numpy()
    score_array = scores.detach().cpu().numpy()
    categories = idxs.detach().cpu().numpy().reshape(-1)
    kept = []
    for category in np.unique(categories):
        members = np.flatnonzero(categories == category)
        kept.append(members[_greedy_keep(box_array[members], score_array[members], float(iou_threshold))])
    keep = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
    keep = keep[np.argsort(-score_array[keep], kind="stable")]
    return mininn.tensor(keep.astype(np.int64), dtype=mininn.int64, device=boxes.device)


def remove_small_boxes(boxes: Tensor, min_size: float) -> Tensor:
    """Indices of the boxes whose width and height are both at least ``min_size``."""
    ws, hs = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    keep = (ws >= min_size) & (hs >= min_size)
    return mininn.where(keep)[0]


def clip_boxes_to_image(boxes: Tensor, size: tuple[int, int]) -> Tensor:
    """``boxes`` clamped into an image of ``size = (height, width)``."""
    dim = boxes.dim()
    height, width = size
    boxes_x = boxes[..., 0::2].clamp(min=0, max=width)
    boxes_y = boxes[..., 1::2].clamp(min=0, max=height)
    return mininn.stack((boxes_x, boxes_y), dim=dim).reshape(boxes.shape)


def _to_xyxy(boxes: Tensor, fmt: str) -> Tensor:
    if fmt == "xyxy":
        return boxes
    a, b, w, h = boxes.unbind(-1)
    if fmt == "xywh":
        return mininn.stack([a, b, a + w, b + h], dim=-1)
    return mininn.stack((a - 0.5 * w, b - 0.5 * h, a + 0.5 * w, b + 0.5 * h), dim=-1)  # cxcywh


def _from_xyxy(boxes: Tensor, fmt: str) -> Tensor:
    x1, y1, x2, y2 = boxes.unbind(-1)
    if fmt == "xywh":
        return mininn.stack((x1, y1, x2 - x1, y2 - y1), dim=-1)
    return mininn.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)  # cxcywh


def box_convert(boxes: Tensor, in_fmt: str, out_fmt: str) -> Tensor:
    """``boxes`` converted from ``in_fmt`` to ``out_fmt`` (``"xyxy"``, ``"xywh"`` or ``"cxcywh"``).

    Raises:
        ValueError: an unknown format (torchvision's message).
        NotImplementedError: a rotated format (``xywhr``, ``cxcywhr``, ``xyxyxyxy``), which mininn lacks.
    """
    if in_fmt not in _AXIS_ALIGNED + _ROTATED or out_fmt not in _AXIS_ALIGNED + _ROTATED:
        raise ValueError(
            f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")
    if in_fmt == out_fmt:
        return boxes.clone()
    if in_fmt in _ROTATED or out_fmt in _ROTATED:
        raise NotImplementedError(f"box_convert from {in_fmt} to {out_fmt}: rotated box formats are not "
                                  "available in mininn")
    xyxy = _to_xyxy(boxes, in_fmt)
    return xyxy if out_fmt == "xyxy" else _from_xyxy(xyxy, out_fmt)


def box_area(boxes: Tensor, fmt: str = "xyxy") -> Tensor:
    """Areas of ``boxes`` (``(..., 4)`` -> ``(...)``) in format ``fmt``.

    Raises:
        ValueError: ``fmt`` not ``"xyxy"``, ``"xywh"`` or ``"cxcywh"`` (torchvision's message).
    """
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported Bounding Box area for given format {fmt}")
    boxes = _upcast(boxes)
    if fmt == "xyxy":
        return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    return boxes[..., 2] * boxes[..., 3]


def _box_inter_union(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> tuple[Tensor, Tensor]:
    area1 = box_area(boxes1, fmt=fmt)
    area2 = box_area(boxes2, fmt=fmt)
    corners1, corners2 = _to_xyxy(boxes1, fmt), _to_xyxy(boxes2, fmt)
    lt = mininn.max(corners1[..., None, :2], corners2[..., None, :, :2])  # (..., N, M, 2)
    rb = mininn.min(corners1[..., None, 2:], corners2[..., None, :, 2:])  # (..., N, M, 2)
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]  # (..., N, M)
    union = area1[..., None] + area2[..., None, :] - inter
    return inter, union


def box_iou(boxes1: Tensor, boxes2: Tensor, fmt: str = "xyxy") -> Tensor:
    """Pairwise intersection over union: ``(..., N, 4)`` and ``(..., M, 4)`` -> ``(..., N, M)``.

    Raises:
        ValueError: an unknown ``fmt`` (torchvision's message).
        NotImplementedError: a rotated format, which mininn lacks.
    """
    if fmt in _ROTATED:
        raise NotImplementedError(f"box_iou of rotated boxes ({fmt!r}) is not available in mininn")
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported format '{fmt}'. Supported axis-aligned formats: {_AXIS_ALIGNED}. "
                         f"Supported rotated formats: {_ROTATED}.")
    inter, union = _box_inter_union(boxes1, boxes2, fmt=fmt)
    return inter / union


def generalized_box_iou(boxes1: Tensor, boxes2: Tensor) -> Tensor:
    """Pairwise generalised IoU of ``(x1, y1, x2, y2)`` boxes: IoU minus the enclosing box's empty share."""
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    lti = mininn.min(boxes1[..., None, :2], boxes2[..., None, :, :2])
    rbi = mininn.max(boxes1[..., None, 2:], boxes2[..., None, :, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    areai = whi[..., 0] * whi[..., 1]
    return iou - (areai - union) / areai
