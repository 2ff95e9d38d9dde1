"""torchvision.ops.roi_align / RoIAlign on mininn against torchvision's pure-Python ``_roi_align`` (its C++
kernel does not load beside the CPU torch wheel).

torchvision's Python version clamps samples that fall more than a pixel outside the feature map, where
its C++ kernel (what users run) counts them as 0; the comparison boxes stay inside, and a plain
per-sample loop written from the kernel's rules checks the outside case.
"""

from __future__ import annotations

import math
import sys

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
