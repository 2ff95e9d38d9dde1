"""torchvision's training augmentations on mininn against real torchvision. Random draws differ (mininn's
generator is not torch's), so each transform is compared where its outcome is fixed (p=1, p=0, a crop
the size of the image, a full-area resized crop) or on the parameters it drew."""

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


def same(got: Any, expected: Any, **tol: float) -> None:
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.numpy().astype(np.float64), expected.numpy().astype(np.float64), **tol)


@pytest.mark.parametrize("name", ["RandomHorizontalFlip", "RandomVerticalFlip"])
def test_flips_with_p_one_and_zero_equal_torchvision(name: str) -> None:
    x = image((2, 3, 5, 7))
    same(getattr(T, name)(p=1.0)(mininn.tensor(x)), getattr(TT, name)(p=1.0)(torch.from_numpy(x)), rtol=0)
    same(getattr(T, name)(p=0.0)(mininn.tensor(x)), torch.from_numpy(x), rtol=0)
    assert repr(getattr(T, name)(0.3)) == repr(getattr(TT, name)(0.3))


def test_flips_of_pil_images_equal_torchvision() -> None:
    Image = pytest.importorskip("PIL.Image")
    pic = Image.fromarray(image((5, 7, 3), np.uint8))
    for ours, theirs in ((F.hflip, TF.hflip), (F.vflip, TF.vflip)):
        np.testing.assert_array_equal(np.asarray(ours(pic)), np.asarray(theirs(pic)))


@pytest.mark.parametrize("padding", [2, [1], (1, 3), [1, 2, 3, 4]])
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_equals_torchvision(padding: Any, mode: str) -> None:
    for x in (image((3, 6, 7)), image((2, 3, 6, 7), np.uint8)):
        got = T.Pad(padding, fill=5, padding_mode=mode)(mininn.tensor(x))
        expected = TT.Pad(padding, fill=5, padding_mode=mode)(torch.from_numpy(x))
        same(got, expected, rtol=0)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert repr(T.Pad(padding, 1, mode)) == repr(TT.Pad(padding, 1, mode))


def test_pad_refuses_what_torchvision_refuses_and_symmetric() -> None:
    x = mininn.zeros(3, 4, 4)
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4 element tuple, not a 3"):
        T.Pad((1, 2, 3))
    with pytest.raises(ValueError, match="Padding mode should be either constant, edge, reflect or"):
        T.Pad(1, padding_mode="wrap")
    with pytest.raises(TypeError, match="Got inappropriate padding arg"):
        T.Pad("1")
    with pytest.raises(ValueError, match="padding_mode='symmetric' is not available in mininn"):
        F.pad(x, 1, padding_mode="symmetric")


def is_window(crop: np.ndarray, whole: np.ndarray) -> bool:
    h, w = crop.shape[-2:]
    return any(np.array_equal(whole[..., i:i + h, j:j + w], crop)
               for i in range(whole.shape[-2] - h + 1) for j in range(whole.shape[-1] - w + 1))


def test_random_crop_draws_a_crop_of_the_padded_image_and_the_full_size_is_identity() -> None:
    x = image((3, 9, 8))
    mininn.manual_seed(0)
    crop = T.RandomCrop(6, padding=2)(mininn.tensor(x)).numpy()
    assert is_window(crop, TF.pad(torch.from_numpy(x), 2).numpy())
    same(T.RandomCrop((9, 8))(mininn.tensor(x)), torch.from_numpy(x), rtol=0)
    got = T.RandomCrop((11, 12), pad_if_needed=True, fill=1)(mininn.tensor(x)).numpy()
    padded = TF.pad(TF.pad(torch.from_numpy(x), [4, 0], fill=1), [0, 2], fill=1).numpy()  # as torchvision
    assert got.shape == (3, 11, 12) and is_window(got, padded)
    with pytest.raises(ValueError, match=r"Required crop size \(10, 10\) is larger than input image size"):
        T.RandomCrop(10)(mininn.tensor(x))
    assert repr(T.RandomCrop(6, padding=2)) == repr(TT.RandomCrop(6, padding=2))


def test_random_resized_crop_over_the_whole_image_equals_torchvisions_resize() -> None:
    x = image((3, 12, 12))
    ours = T.RandomResizedCrop(5, scale=(1.0, 1.0), ratio=(1.0, 1.0))
    theirs = TT.RandomResizedCrop(5, scale=(1.0, 1.0), ratio=(1.0, 1.0))
    same(ours(mininn.tensor(x)), theirs(torch.from_numpy(x)), rtol=1e-5, atol=1e-6)
    assert repr(T.RandomResizedCrop(224)) == repr(TT.RandomResizedCrop(224))


def test_random_resized_crop_parameters_stay_in_their_ranges() -> None:
    x = mininn.zeros(3, 40, 60)
    mininn.manual_seed(1)
    for _ in range(50):
        i, j, h, w = T.RandomResizedCrop.get_params(x, (0.2, 0.6), (0.5, 2.0))
        assert 0 <= i <= 40 - h and 0 <= j <= 60 - w
        assert 0.2 * 2400 - 80 <= h * w <= 0.6 * 2400 + 80  # rounding of each side
        assert 0.5 / 1.2 <= w / h <= 2.0 * 1.2
    assert T.RandomResizedCrop(7)(x).shape == (3, 7, 7)
    with pytest.raises(TypeError, match="Scale should be a sequence"):
        T.RandomResizedCrop(7, scale=0.5)


@pytest.mark.parametrize("channels", [1, 3])
def test_grayscale_equals_torchvision(channels: int) -> None:
    for x in (image((2, 3, 4, 5)), image((3, 4, 5), np.uint8)):
        same(T.Grayscale(channels)(mininn.tensor(x)), TT.Grayscale(channels)(torch.from_numpy(x)), rtol=1e-6)
    with pytest.raises(ValueError, match="num_output_channels should be either 1 or 3"):
        F.rgb_to_grayscale(mininn.zeros(3, 2, 2), 2)
    assert repr(T.Grayscale(channels)) == repr(TT.Grayscale(channels))


def test_random_containers_apply_as_torchvisions() -> None:
    x = mininn.tensor(image((1, 4, 4)))
    double, negate = T.Lambda(lambda t: t * 2), T.Lambda(lambda t: -t)
    np.testing.assert_array_equal(T.RandomApply([double, negate], p=1.0)(x).numpy(), -2 * x.numpy())
    np.testing.assert_array_equal(T.RandomApply([double], p=0.0)(x).numpy(), x.numpy())
    assert T.RandomChoice([double], p=[1.0])(x).numpy().tolist() == (2 * x.numpy()).tolist()
    np.testing.assert_array_equal(T.RandomOrder([double, negate])(x).numpy(), -2 * x.numpy())
    assert repr(T.RandomApply([T.Grayscale()], p=0.3)) == repr(TT.RandomApply([TT.Grayscale()], p=0.3))
    with pytest.raises(TypeError, match="Argument p should be a sequence"):
        T.RandomChoice([double], p=0.5)


def test_a_training_pipeline_builds_at_import_as_model_files_write_it() -> None:
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    train = T.Compose([T.RandomResizedCrop(16), T.RandomHorizontalFlip(), T.Normalize(mean, std)])
    assert train(mininn.tensor(image((3, 30, 24)))).shape == (3, 16, 16)


@pytest.mark.parametrize("name", ["adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue"])
@pytest.mark.parametrize("factor", [0.0, 0.3, 1.0, 1.7, -0.2])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_colour_adjustments_equal_torchvision(name: str, factor: float, dtype: Any) -> None:
    if name == "adjust_hue" and abs(factor) > 0.5:
        factor = factor / 4
    if name != "adjust_hue" and factor < 0:
        with pytest.raises(ValueError, match=r"\(-0.2\) is not non-negative"):
            getattr(F, name)(mininn.zeros(3, 2, 2), factor)
        return
    x = image((2, 3, 6, 5), dtype)
    got = getattr(F, name)(mininn.tensor(x), factor)
    expected = getattr(TF, name)(torch.from_numpy(x), factor)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    if dtype == np.uint8:  # a float32 rounding may land on the other side of an integer
        assert np.abs(got.numpy().astype(int) - expected.numpy().astype(int)).max() <= 1
    else:
        same(got, expected, rtol=1e-5, atol=1e-6)


def test_hue_of_gray_pixels_and_one_channel_images_is_unchanged_as_torchvision() -> None:
    gray = np.repeat(image((1, 4, 4)), 3, axis=0)
    same(F.adjust_hue(mininn.tensor(gray), 0.3), TF.adjust_hue(torch.from_numpy(gray), 0.3), rtol=1e-6)
    one = mininn.tensor(image((1, 4, 4)))
    assert F.adjust_hue(one, 0.2) is one and F.adjust_saturation(one, 0.2) is one
    with pytest.raises(ValueError, match=r"hue_factor \(0.7\) is not in \[-0.5, 0.5\]."):
        F.adjust_hue(one, 0.7)


def test_color_jitter_checks_and_reprs_as_torchvision_and_applies_drawn_factors() -> None:
    for kwargs in ({"brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.1},
                   {"brightness": (0.5, 1.5)}, {}):
        assert repr(T.ColorJitter(**kwargs)) == repr(TT.ColorJitter(**kwargs))
    with pytest.raises(ValueError, match="If brightness is a single number, it must be non negative."):
        T.ColorJitter(brightness=-1)
    with pytest.raises(ValueError, match=r"hue values should be between \(-0.5, 0.5\), but got \[-0.6"):
        T.ColorJitter(hue=0.6)
    with pytest.raises(TypeError, match="contrast should be a single number or a list/tuple with length 2."):
        T.ColorJitter(contrast=[1, 2, 3])
    x = mininn.tensor(image((3, 5, 5)))
    np.testing.assert_array_equal(T.ColorJitter()(x).numpy(), x.numpy())  # nothing on
    brighter = T.ColorJitter(brightness=(2.0, 2.0))(x)  # one fixed factor
    same(brighter, TF.adjust_brightness(torch.from_numpy(x.numpy()), 2.0), rtol=1e-6)


@pytest.mark.parametrize("kernel_size", [3, (5, 3), (3, 7)])
@pytest.mark.parametrize("sigma", [None, 0.8, (1.5, 0.6)])
def test_gaussian_blur_equals_torchvision(kernel_size: Any, sigma: Any) -> None:
    for x in (image((2, 3, 9, 8)), image((3, 9, 8), np.uint8)):
        got = F.gaussian_blur(mininn.tensor(x), kernel_size, sigma)
        expected = TF.gaussian_blur(torch.from_numpy(x), kernel_size, sigma)
        if x.dtype == np.uint8:
            assert got.dtype == mininn.uint8
            assert np.abs(got.numpy().astype(int) - expected.numpy().astype(int)).max() <= 1
        else:
            same(got, expected, rtol=1e-5, atol=1e-6)
    ours = T.GaussianBlur(kernel_size, sigma=(0.5, 0.5))
    theirs = TT.GaussianBlur(kernel_size, sigma=(0.5, 0.5))
    x = image((3, 9, 8))
    same(ours(mininn.tensor(x)), theirs(torch.from_numpy(x)), rtol=1e-5, atol=1e-6)
    assert repr(ours) == repr(theirs)


def test_gaussian_blur_refuses_what_torchvision_refuses() -> None:
    x = mininn.zeros(3, 5, 5)
    with pytest.raises(ValueError, match=r"kernel_size should have odd and positive integers. Got \[4, 4\]"):
        F.gaussian_blur(x, [4, 4])
    with pytest.raises(ValueError, match=r"sigma should have positive values. Got \[0.0, 1.0\]"):
        F.gaussian_blur(x, 3, [0.0, 1.0])
    with pytest.raises(ValueError, match="Kernel size value should be an odd and positive number."):
        T.GaussianBlur(2)
    with pytest.raises(ValueError, match=r"sigma values should be positive and of the form \(min, max\)."):
        T.GaussianBlur(3, sigma=(2.0, 1.0))


def test_random_erasing_sets_one_rectangle_and_checks_as_torchvision() -> None:
    x = image((3, 20, 24))
    mininn.manual_seed(3)
    got = T.RandomErasing(p=1.0, scale=(0.1, 0.2), value=(0.1, 0.2, 0.3))(mininn.tensor(x)).numpy()
    changed = np.argwhere(np.any(got != x, axis=0))
    (top, left), (bottom, right) = changed.min(0), changed.max(0) + 1
    assert 0.1 * 480 - 25 <= (bottom - top) * (right - left) <= 0.2 * 480 + 25
    np.testing.assert_allclose(got[:, top:bottom, left:right],
                               np.broadcast_to(np.array([0.1, 0.2, 0.3], np.float32)[:, None, None],
                                               (3, bottom - top, right - left)))
    np.testing.assert_array_equal(T.RandomErasing(p=0.0)(mininn.tensor(x)).numpy(), x)
    assert repr(T.RandomErasing(value="random")) == repr(TT.RandomErasing(value="random"))
    with pytest.raises(ValueError, match="If value is str, it should be 'random'"):
        T.RandomErasing(value="noise")
    with pytest.raises(ValueError, match="Random erasing probability should be between 0 and 1"):
        T.RandomErasing(p=2)
    with pytest.raises(ValueError, match="If value is a sequence, it should have either a single value or 3"):
        T.RandomErasing(p=1.0, value=(1, 2))(mininn.tensor(x))


def test_random_grayscale_and_pil_to_tensor_as_torchvision() -> None:
    x = image((3, 4, 5))
    expected = TT.RandomGrayscale(p=1.0)(torch.from_numpy(x))
    same(T.RandomGrayscale(p=1.0)(mininn.tensor(x)), expected, rtol=1e-6)
    np.testing.assert_array_equal(T.RandomGrayscale(p=0.0)(mininn.tensor(x)).numpy(), x)
    Image = pytest.importorskip("PIL.Image")
    pic = Image.fromarray(image((4, 5, 3), np.uint8))
    same(T.PILToTensor()(pic), TT.PILToTensor()(pic), rtol=0)
