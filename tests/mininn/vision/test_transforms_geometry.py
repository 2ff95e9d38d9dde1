"""torchvision's rotate/affine and RandomRotation/RandomAffine on mininn against real torchvision."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
from mininn.vision import transforms as T
from mininn.vision.transforms import functional as F

tv = import_torchvision()
torch = pytest.importorskip("torch")
TT = tv.transforms
TF = tv.transforms.functional


def image(shape: tuple[int, ...], dtype: Any = np.float32) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape).astype(np.uint8)
    return rng.uniform(0, 1, shape).astype(dtype)


def close(got: Any, expected: Any, exact: bool) -> None:
    assert tuple(got.shape) == tuple(expected.shape)
    if exact:
        np.testing.assert_array_equal(got.numpy(), expected.numpy())
    else:
        np.testing.assert_allclose(got.numpy().astype(float), expected.numpy().astype(float), rtol=1e-5,
                                   atol=3e-6)


@pytest.mark.parametrize("angle", [0, 30, 90, -47.5])
@pytest.mark.parametrize("mode", ["NEAREST", "BILINEAR"])
@pytest.mark.parametrize("expand", [False, True])
@pytest.mark.parametrize("fill", [None, [0.5, 0.2, 0.1]])
def test_rotate_equals_torchvision(angle: float, mode: str, expand: bool, fill: Any) -> None:
    x = image((2, 3, 11, 14))
    ours, theirs = getattr(T.InterpolationMode, mode), getattr(TT.InterpolationMode, mode)
    got = F.rotate(mininn.tensor(x), angle, ours, expand=expand, fill=fill)
    expected = TF.rotate(torch.from_numpy(x), angle, theirs, expand=expand, fill=fill)
    close(got, expected, exact=mode == "NEAREST")


@pytest.mark.parametrize(("angle", "translate", "scale", "shear", "center"), [
    (12.0, [2, -1], 1.2, [5.0, 3.0], None), (0, [0, 0], 0.7, 10.0, [3, 4]), (-90, (1, 1), 1.0, [0.0], None),
])
def test_affine_equals_torchvision(angle: float, translate: Any, scale: float, shear: Any,
                                   center: Any) -> None:
    kwargs = {"fill": [7.0] * 3, "center": center}
    for x in (image((3, 12, 10)), image((3, 12, 10), np.uint8)):
        got = F.affine(mininn.tensor(x), angle, translate, scale, shear, **kwargs)
        expected = TF.affine(torch.from_numpy(x), angle, translate, scale, shear, **kwargs)
        close(got, expected, exact=True)


def test_random_rotation_and_affine_check_and_repr_as_torchvision() -> None:
    for ours, theirs in ((T.RandomRotation(10), TT.RandomRotation(10)),
                         (T.RandomRotation((-5, 20), expand=True, fill=1),
                          TT.RandomRotation((-5, 20), expand=True, fill=1)),
                         (T.RandomAffine(15, translate=(0.1, 0.2), scale=(0.9, 1.1), shear=5),
                          TT.RandomAffine(15, translate=(0.1, 0.2), scale=(0.9, 1.1), shear=5))):
        assert repr(ours) == repr(theirs)
    with pytest.raises(ValueError, match="If degrees is a single number, it must be positive."):
        T.RandomRotation(-3)
    with pytest.raises(ValueError, match="translation values should be between 0 and 1"):
        T.RandomAffine(0, translate=(0.1, 1.5))
    with pytest.raises(ValueError, match="shear should be a sequence of length 2 or 4."):
        T.RandomAffine(0, shear=(1, 2, 3))
    with pytest.raises(ValueError, match="Argument scale should be positive"):
        F.affine(mininn.zeros(3, 4, 4), 0, [0, 0], 0.0, 0.0)


def test_random_rotation_with_a_fixed_angle_equals_torchvisions_rotate() -> None:
    x = image((3, 9, 9))
    got = T.RandomRotation((30, 30), fill=0.5)(mininn.tensor(x))
    expected = TF.rotate(torch.from_numpy(x), 30.0, fill=[0.5] * 3)
    close(got, expected, exact=True)
    mininn.manual_seed(0)
    moved = T.RandomAffine(0, translate=(0.3, 0.3))(mininn.tensor(x))
    assert moved.shape == (3, 9, 9)
