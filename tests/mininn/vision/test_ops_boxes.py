"""torchvision.ops box functions on mininn against real torchvision (nms against a greedy reference:
torchvision's C++ kernels do not load beside the CPU torch wheel)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
from mininn.vision import ops

tv = import_torchvision()
torch = pytest.importorskip("torch")


def random_boxes(rng: np.random.Generator, n: int, scale: float = 20.0) -> np.ndarray:
    corner = rng.uniform(0, scale, (n, 2))
    size = rng.uniform(0.5, scale / 2, (n, 2))
    return np.concatenate([corner, corner + size], 1).astype(np.float32)


def both(array: np.ndarray) -> tuple[Any, Any]:
    return mininn.tensor(array), torch.from_numpy(array)


@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "cxcywh"])
def test_box_iou_and_area_equal_torchvision_in_every_axis_aligned_format(fmt: str) -> None:
    rng = np.random.default_rng(0)
    (a, ta), (b, tb) = both(random_boxes(rng, 7)), both(random_boxes(rng, 5))
    np.testing.assert_allclose(ops.box_iou(a, b, fmt=fmt).numpy(), tv.ops.box_iou(ta, tb, fmt=fmt).numpy(),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ops.box_area(a, fmt=fmt).numpy(), tv.ops.box_area(ta, fmt=fmt).numpy(),
                               rtol=1e-6)


def test_box_iou_broadcasts_leading_dimensions_as_torchvision() -> None:
    rng = np.random.default_rng(1)
    a, ta = both(random_boxes(rng, 6).reshape(2, 3, 4))
    b, tb = both(random_boxes(rng, 8).reshape(2, 4, 4))
    got = ops.box_iou(a, b).numpy()
    assert got.shape == (2, 3, 4)
    np.testing.assert_allclose(got, tv.ops.box_iou(ta, tb).numpy(), rtol=1e-6, atol=1e-7)


def test_generalized_box_iou_and_its_gradient_equal_torchvision() -> None:
    rng = np.random.default_rng(2)
    a_np, b_np = random_boxes(rng, 4).astype(np.float64), random_boxes(rng, 3).astype(np.float64)
    a = mininn.tensor(a_np, requires_grad=True)
    ta = torch.tensor(a_np, requires_grad=True)
    got = ops.generalized_box_iou(a, mininn.tensor(b_np))
    expected = tv.ops.generalized_box_iou(ta, torch.tensor(b_np))
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    (1 - got).sum().backward()
    (1 - expected).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("in_fmt", "out_fmt"), [
    ("xyxy", "xywh"), ("xyxy", "cxcywh"), ("xywh", "xyxy"), ("cxcywh", "xyxy"), ("xywh", "cxcywh"),
    ("cxcywh", "xywh"), ("xyxy", "xyxy"),
])
def test_box_convert_equals_torchvision(in_fmt: str, out_fmt: str) -> None:
    boxes, tboxes = both(random_boxes(np.random.default_rng(3), 6).reshape(2, 3, 4))
    got = ops.box_convert(boxes, in_fmt, out_fmt)
    np.testing.assert_allclose(got.numpy(), tv.ops.box_convert(tboxes, in_fmt, out_fmt).numpy(), rtol=1e-6)
    assert got is not boxes


def test_box_convert_and_iou_refuse_unknown_and_rotated_formats() -> None:
    boxes = mininn.tensor(random_boxes(np.random.default_rng(4), 2))
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions for given in_fmt xyxy and "
                                         "out_fmt yxyx"):
        ops.box_convert(boxes, "xyxy", "yxyx")
    with pytest.raises(NotImplementedError, match="rotated box formats are not available in mininn"):
        ops.box_convert(boxes, "xyxy", "cxcywhr")
    with pytest.raises(ValueError, match="Unsupported Bounding Box area for given format xyxyxyxy"):
        ops.box_area(boxes, fmt="xyxyxyxy")
    with pytest.raises(ValueError, match="Unsupported format 'abcd'"):
        ops.box_iou(boxes, boxes, fmt="abcd")


def test_clip_and_remove_small_boxes_equal_torchvision() -> None:
    raw = np.array([[-3, 2, 40, 9], [1, -1, 2.5, 30], [5, 5, 5.2, 9], [0, 0, 10, 10]], np.float32)
    boxes, tboxes = both(raw)
    np.testing.assert_array_equal(ops.clip_boxes_to_image(boxes, (20, 32)).numpy(),
                                  tv.ops.clip_boxes_to_image(tboxes, (20, 32)).numpy())
    keep = ops.remove_small_boxes(boxes, 1.0)
    assert keep.dtype == mininn.int64
    np.testing.assert_array_equal(keep.numpy(), tv.ops.remove_small_boxes(tboxes, 1.0).numpy())


def greedy_nms(boxes: np.ndarray, scores: np.ndarray, threshold: float) -> list[int]:
    """torchvision's documented semantics, written plainly: best first, drop those with IoU > threshold."""
    remaining = sorted(range(len(scores)), key=lambda i: -scores[i])
    keep: list[int] = []
    while remaining:
        best = remaining.pop(0)
        keep.append(best)
        ious = tv.ops.box_iou(torch.from_numpy(boxes[[best]]), torch.from_numpy(boxes[remaining])).numpy()[0]
        remaining = [i for i, iou in zip(remaining, ious) if not iou > threshold]
    return keep


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.9])
def test_nms_keeps_what_greedy_suppression_keeps(threshold: float) -> None:
    rng = np.random.default_rng(5)
    raw = random_boxes(rng, 60, scale=30)
    scores = rng.permutation(60).astype(np.float32) / 60  # distinct: the order is defined
    keep = ops.nms(mininn.tensor(raw), mininn.tensor(scores), threshold)
    assert keep.dtype == mininn.int64
    assert keep.numpy().tolist() == greedy_nms(raw, scores, threshold)


def test_batched_nms_suppresses_only_within_a_category() -> None:
    rng = np.random.default_rng(6)
    raw = random_boxes(rng, 40, scale=15)
    scores = rng.permutation(40).astype(np.float32)
    idxs = rng.integers(0, 3, 40)
    keep = ops.batched_nms(mininn.tensor(raw), mininn.tensor(scores), mininn.tensor(idxs), 0.4).numpy()
    expected = []
    for c in range(3):
        members = np.flatnonzero(idxs == c)
        expected += [members[i] for i in greedy_nms(raw[members], scores[members], 0.4)]
    expected.sort(key=lambda i: -scores[i])
    assert keep.tolist() == expected
    one_category = mininn.zeros(40, dtype=mininn.int64)
    same = ops.batched_nms(mininn.tensor(raw), mininn.tensor(scores), one_category, 0.4)
    assert same.numpy().tolist() == greedy_nms(raw, scores, 0.4)


def test_nms_of_no_boxes_is_empty_and_bad_shapes_raise_torchvisions_messages() -> None:
    empty = ops.nms(mininn.zeros((0, 4)), mininn.zeros(0), 0.5)
    assert empty.shape == (0,) and empty.dtype == mininn.int64
    assert ops.batched_nms(mininn.zeros((0, 4)), mininn.zeros(0), mininn.zeros(0), 0.5).shape == (0,)
    with pytest.raises(RuntimeError, match="boxes should be a 2d tensor, got 1D"):
        ops.nms(mininn.zeros(4), mininn.zeros(1), 0.5)
    with pytest.raises(RuntimeError, match="boxes should have 4 elements in dimension 1, got 5"):
        ops.nms(mininn.zeros((3, 5)), mininn.zeros(3), 0.5)
    with pytest.raises(RuntimeError, match="scores should be a 1d tensor, got 2D"):
        ops.nms(mininn.zeros((3, 4)), mininn.zeros((3, 2)), 0.5)
    with pytest.raises(RuntimeError, match="boxes and scores should have same number of elements in "
                                           "dimension 0, got 3 and 4"):
        ops.nms(mininn.zeros((3, 4)), mininn.zeros(4), 0.5)
