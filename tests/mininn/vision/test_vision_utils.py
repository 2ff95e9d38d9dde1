"""torchvision.utils.make_grid and save_image on mininn against torchvision's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
from mininn.vision import utils

tv = import_torchvision()
torch = pytest.importorskip("torch")


def batch(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 2, shape).astype(np.float32)


@pytest.mark.parametrize("shape", [(5, 3, 4, 6), (9, 1, 3, 3), (1, 3, 4, 4), (3, 5, 5), (1, 5, 5), (5, 5)])
@pytest.mark.parametrize("kwargs", [
    {}, {"nrow": 2, "padding": 1, "pad_value": 0.5}, {"normalize": True},
    {"normalize": True, "value_range": (-0.5, 1.0)}, {"normalize": True, "scale_each": True, "nrow": 3},
])
def test_make_grid_equals_torchvision(shape: tuple[int, ...], kwargs: dict[str, Any]) -> None:
    x = batch(shape)
    got = utils.make_grid(mininn.tensor(x), **kwargs)
    expected = tv.utils.make_grid(torch.from_numpy(x.copy()), **kwargs)
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)


def test_make_grid_takes_a_list_and_leaves_its_input_alone() -> None:
    images = [batch((3, 4, 4), seed) for seed in range(3)]
    source = mininn.tensor(images[0])
    got = utils.make_grid([source, mininn.tensor(images[1]), mininn.tensor(images[2])], normalize=True)
    expected = tv.utils.make_grid([torch.from_numpy(i) for i in images], normalize=True)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(source.numpy(), images[0])
    with pytest.raises(TypeError, match="tensor or list of tensors expected, got <class 'numpy.ndarray'>"):
        utils.make_grid(images[0])
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(source, normalize=True, value_range=[0, 1])


def test_save_image_writes_torchvisions_pixels(tmp_path: Any) -> None:
    Image = pytest.importorskip("PIL.Image")
    x = batch((4, 3, 5, 6)) / 3 + 0.3
    utils.save_image(mininn.tensor(x), tmp_path / "ours.png", nrow=2)
    tv.utils.save_image(torch.from_numpy(x), tmp_path / "theirs.png", nrow=2)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "ours.png")),
                                  np.asarray(Image.open(tmp_path / "theirs.png")))
