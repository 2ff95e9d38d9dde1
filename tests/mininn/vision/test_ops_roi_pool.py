"""torchvision.ops.roi_pool / RoIPool on mininn. torchvision has no Python version of this operator and its
C++ kernel does not load beside the CPU torch wheel, so a per-element loop of the kernel's rules (rounding
half away from zero, ``end - start + 1`` pixels, floor/ceil bins clipped to the map, empty bins 0, the
first maximum) is the reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
from mininn.vision import ops

tv = import_torchvision()


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
