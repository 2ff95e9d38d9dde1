"""torchvision.ops.roi_align / RoIAlign on mininn against torchvision's pure-Python ``_roi_align`` (its C++
kernel does not load beside the CPU torch wheel), and FrozenBatchNorm2d against torchvision's.

torchvision's Python version clamps samples that fall more than a pixel outside the feature map, where
its C++ kernel (what users run) counts them as 0; the comparison boxes stay inside, and a plain
per-sample loop written from the kernel's rules checks the outside case.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
from mininn.vision import ops

tv = import_torchvision()
torch = pytest.importorskip("torch")
python_roi_align = sys.modules["torchvision.ops.roi_align"]._roi_align.__wrapped__  # without torch.compile


def inside_boxes(rng: np.random.Generator, k: int, batch: int) -> np.ndarray:
    corner = rng.uniform(-0.4, 4, (k, 2))
    size = rng.uniform(0.2, 5.5, (k, 2))
    return np.concatenate([rng.integers(0, batch, (k, 1)), corner, corner + size], 1).astype(np.float32)


@pytest.mark.parametrize("sampling_ratio", [-1, 0, 2])
@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("spatial_scale", [1.0, 0.5])
def test_roi_align_equals_torchvision(sampling_ratio: int, aligned: bool, spatial_scale: float) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 12, 10)).astype(np.float32)
    rois = inside_boxes(rng, 6, 2)
    expected = python_roi_align(torch.from_numpy(x), torch.from_numpy(rois), spatial_scale, 3, 4,
                                sampling_ratio, aligned).numpy()
    got = ops.roi_align(mininn.tensor(x), mininn.tensor(rois), (3, 4), spatial_scale, sampling_ratio, aligned)
    assert got.shape == (6, 3, 3, 4)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=2e-6)


def test_roi_align_takes_a_list_of_boxes_per_image_and_an_int_size() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 9, 9)).astype(np.float32)
    rois = inside_boxes(rng, 5, 1)[:, 1:]
    per_image = [mininn.tensor(rois[:2]), mininn.tensor(rois[2:])]
    got = ops.roi_align(mininn.tensor(x), per_image, 2, 1.0, 2)
    stacked = np.concatenate([np.array([[0], [0], [1], [1], [1]], np.float32), rois], 1)
    expected = python_roi_align(torch.from_numpy(x), torch.from_numpy(stacked), 1.0, 2, 2, 2, False).numpy()
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=2e-6)


def kernel_reference(x: np.ndarray, roi: np.ndarray, size: int, ratio: int) -> np.ndarray:
    """One box, aligned=False, scale 1, each sample as torchvision's kernel takes it (a plain loop)."""
    _, channels, height, width = x.shape
    x1, y1, x2, y2 = roi[1:]
    roi_w, roi_h = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
    out = np.zeros((channels, size, size))
    for ph in range(size):
        for pw in range(size):
            total = np.zeros(channels)
            for iy in range(ratio):
                for ix in range(ratio):
                    y = y1 + ph * roi_h / size + (iy + 0.5) * roi_h / size / ratio
                    xx = x1 + pw * roi_w / size + (ix + 0.5) * roi_w / size / ratio
                    if y < -1 or y > height or xx < -1 or xx > width:
                        continue
                    y, xx = min(max(y, 0), height - 1), min(max(xx, 0), width - 1)
                    y0, x0 = math.floor(y), math.floor(xx)
                    y1_, x1_ = min(y0 + 1, height - 1), min(x0 + 1, width - 1)
                    ly, lx = y - y0, xx - x0
                    feature = x[int(roi[0])]
                    total += ((1 - ly) * (1 - lx) * feature[:, y0, x0] + (1 - ly) * lx * feature[:, y0, x1_]
                              + ly * (1 - lx) * feature[:, y1_, x0] + ly * lx * feature[:, y1_, x1_])
            out[:, ph, pw] = total / (ratio * ratio)
    return out


def test_samples_beyond_the_feature_map_count_as_zero_as_in_torchvisions_kernel() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 6, 5)).astype(np.float32)
    roi = np.array([[0, -4.0, 3.0, 9.0, 11.0]], np.float32)  # past every edge
    got = ops.roi_align(mininn.tensor(x), mininn.tensor(roi), 3, 1.0, 2).numpy()[0]
    np.testing.assert_allclose(got, kernel_reference(x, roi[0], 3, 2), rtol=1e-5, atol=1e-6)
    assert np.any(got == 0)  # whole bins outside


def test_roi_align_carries_gradients_to_the_input_like_torchvision() -> None:
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal((1, 2, 8, 8))
    rois = inside_boxes(rng, 3, 1).astype(np.float64)
    x = mininn.tensor(x_np, requires_grad=True)
    tx = torch.tensor(x_np, requires_grad=True)
    weights = rng.standard_normal((3, 2, 2, 2))
    (ops.roi_align(x, mininn.tensor(rois), 2, 1.0, -1, True) * mininn.tensor(weights)).sum().backward()
    (python_roi_align(tx, torch.tensor(rois), 1.0, 2, 2, -1, True) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_roi_align_module_and_bad_boxes() -> None:
    layer = ops.RoIAlign((2, 2), spatial_scale=0.25, sampling_ratio=2, aligned=True)
    assert repr(layer) == repr(tv.ops.RoIAlign((2, 2), spatial_scale=0.25, sampling_ratio=2, aligned=True))
    x = mininn.randn(1, 3, 8, 8)
    assert layer(x, mininn.tensor([[0, 1.0, 1.0, 20.0, 20.0]])).shape == (1, 3, 2, 2)
    assert layer(x, mininn.zeros((0, 5))).shape == (0, 3, 2, 2)
    with pytest.raises(AssertionError, match=r"The boxes tensor shape is not correct as Tensor\[K, 5\]"):
        layer(x, mininn.zeros((2, 4)))
    with pytest.raises(AssertionError, match=r"List\[Tensor\[L, 4\]\]"):
        layer(x, [mininn.zeros((2, 5))])


def _frozen_pair(rng: np.random.Generator, c: int) -> tuple[Any, Any]:
    reference = tv.ops.FrozenBatchNorm2d(c, eps=1e-3)
    for name in ("weight", "bias", "running_mean"):
        getattr(reference, name).copy_(torch.from_numpy(rng.standard_normal(c).astype(np.float32)))
    reference.running_var.copy_(torch.from_numpy(rng.uniform(0.5, 2, c).astype(np.float32)))
    return ops.FrozenBatchNorm2d(c, eps=1e-3), reference


def test_frozen_batch_norm_equals_torchvision_and_loads_a_batch_norm_checkpoint() -> None:
    rng = np.random.default_rng(4)
    model, reference = _frozen_pair(rng, 5)
    assert list(model.state_dict()) == list(reference.state_dict())
    assert list(model.parameters()) == []
    assert repr(model) == repr(reference) == "FrozenBatchNorm2d(5, eps=0.001)"
    model.load_state_dict({k: mininn.tensor(v.numpy()) for k, v in reference.state_dict().items()})
    x = rng.standard_normal((2, 5, 3, 3)).astype(np.float32)
    np.testing.assert_allclose(model(mininn.tensor(x)).numpy(), reference(torch.from_numpy(x)).numpy(),
                               rtol=1e-5, atol=1e-6)
    batch_norm = torch.nn.BatchNorm2d(5).state_dict()  # has num_batches_tracked: dropped, as torchvision
    missing, unexpected = model.load_state_dict({k: mininn.tensor(v.numpy()) for k, v in batch_norm.items()})
    assert missing == [] and unexpected == []
    np.testing.assert_array_equal(model.running_var.numpy(), np.ones(5, np.float32))


def roi_pool_reference(x: np.ndarray, rois: np.ndarray, size: int,
                       scale: float) -> tuple[np.ndarray, np.ndarray]:
    """torchvision's roi_pool kernel as a plain loop: output and the flat argmax of each element."""
    _, channels, height, width = x.shape
    out = np.zeros((len(rois), channels, size, size), np.float32)
    arg = np.full(out.shape, -1)
    for k, roi in enumerate(rois):
        start_w, start_h, end_w, end_h = (int(math.copysign(math.floor(abs(v * scale) + 0.5), v))
                                          for v in roi[1:])
        bin_h = np.float32(max(end_h - start_h + 1, 1)) / np.float32(size)
        bin_w = np.float32(max(end_w - start_w + 1, 1)) / np.float32(size)
        for c in range(channels):
            for ph in range(size):
                for pw in range(size):
                    hs = min(max(math.floor(ph * bin_h) + start_h, 0), height)
                    he = min(max(math.ceil((ph + 1) * bin_h) + start_h, 0), height)
                    ws = min(max(math.floor(pw * bin_w) + start_w, 0), width)
                    we = min(max(math.ceil((pw + 1) * bin_w) + start_w, 0), width)
                    best = -np.inf
                    for h in range(hs, he):
                        for w in range(ws, we):
                            if x[int(roi[0]), c, h, w] > best:
                                best, arg[k, c, ph, pw] = x[int(roi[0]), c, h, w], h * width + w
                    out[k, c, ph, pw] = 0 if he <= hs or we <= ws else best
    return out, arg


@pytest.mark.parametrize("scale", [1.0, 0.5, 0.25])
def test_roi_pool_and_its_gradient_follow_torchvisions_kernel(scale: float) -> None:
    rng = np.random.default_rng(5)
    x_np = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    rois = np.concatenate([rng.integers(0, 2, (6, 1)), rng.uniform(-3, 14, (6, 4))], 1).astype(np.float32)
    rois[:, 3:] = np.maximum(rois[:, 3:], rois[:, 1:3])  # x2 >= x1, y2 >= y1
    rois[0, 1:] = [30.0, 30.0, 40.0, 40.0]  # past the map: empty bins
    expected, arg = roi_pool_reference(x_np, rois, 3, scale)
    x = mininn.tensor(x_np, requires_grad=True)
    got = ops.roi_pool(x, mininn.tensor(rois), 3, scale)
    np.testing.assert_array_equal(got.detach().numpy(), expected)
    got.sum().backward()
    grad = np.zeros((2, 3, 9 * 11), np.float32)
    for k, c, ph, pw in np.argwhere(arg >= 0):
        grad[int(rois[k, 0]), c, arg[k, c, ph, pw]] += 1
    np.testing.assert_array_equal(x.grad.numpy().reshape(2, 3, -1), grad)


def test_roi_pool_module_matches_torchvisions_repr_and_takes_box_lists() -> None:
    layer = ops.RoIPool((2, 3), spatial_scale=0.5)
    assert repr(layer) == repr(tv.ops.RoIPool((2, 3), spatial_scale=0.5))
    x = mininn.randn(2, 4, 8, 8)
    out = layer(x, [mininn.tensor([[0.0, 0.0, 6.0, 6.0]]), mininn.tensor([[2.0, 2.0, 14.0, 9.0]])])
    assert out.shape == (2, 4, 2, 3)
    assert layer(x, mininn.zeros((0, 5))).shape == (0, 4, 2, 3)
    with pytest.raises(AssertionError, match=r"Tensor\[K, 5\]"):
        layer(x, mininn.zeros((1, 4)))
