"""torchvision.transforms on mininn against real torchvision: tensor path (Resize with and without
anti-aliasing, CenterCrop with padding, Normalize, ConvertImageDtype), ToTensor from arrays and PIL
images, Compose, Lambda, and torchvision's errors."""

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


def image(shape: tuple[int, ...], dtype: Any = np.float32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 256, shape).astype(np.uint8)
    return rng.uniform(0, 1, shape).astype(dtype)


def same(got: Any, expected: Any, **tol: float) -> None:
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.numpy().astype(np.float64), expected.numpy().astype(np.float64), **tol)


@pytest.mark.parametrize("size", [24, [24], (20, 31), (70, 50)])
@pytest.mark.parametrize("mode", ["BILINEAR", "BICUBIC", "NEAREST", "NEAREST_EXACT"])
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_of_float_tensors_equals_torchvision(size: Any, mode: str, antialias: bool) -> None:
    x = image((3, 45, 37))
    expected = TT.Resize(size, getattr(TT.InterpolationMode, mode), antialias=antialias)(torch.from_numpy(x))
    got = T.Resize(size, getattr(T.InterpolationMode, mode), antialias=antialias)(mininn.tensor(x))
    same(got, expected, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("mode", [2, 3, 0])
def test_resize_of_uint8_batches_rounds_back_as_torchvision(mode: int) -> None:
    x = image((2, 3, 40, 52), np.uint8)
    got = T.Resize(17, interpolation=mode)(mininn.tensor(x))
    expected = TT.Resize(17, interpolation=mode)(torch.from_numpy(x))
    assert got.dtype == mininn.uint8
    # a float32 rounding difference may land on the other side of .5
    assert np.abs(got.numpy().astype(int) - expected.numpy().astype(int)).max() <= 1
    assert np.mean(got.numpy() == expected.numpy()) > 0.99


def test_resize_with_max_size_and_its_errors_as_torchvision() -> None:
    x = image((3, 30, 90))
    expected = TT.Resize(20, max_size=40)(torch.from_numpy(x))
    same(T.Resize(20, max_size=40)(mininn.tensor(x)), expected, rtol=1e-4, atol=2e-5)
    with pytest.raises(ValueError, match="max_size = 20 must be strictly greater than the requested"):
        T.Resize(20, max_size=20)(mininn.tensor(x))
    with pytest.raises(ValueError, match="max_size should only be passed if size specifies the length"):
        F.resize(mininn.tensor(x), [10, 12], max_size=40)
    with pytest.raises(ValueError, match="If size is a sequence, it should have 1 or 2 values"):
        T.Resize((1, 2, 3))
    with pytest.raises(TypeError, match="Size should be int or sequence. Got <class 'float'>"):
        T.Resize(2.5)
    with pytest.raises(TypeError, match="Argument interpolation should be a InterpolationMode"):
        F.resize(mininn.tensor(x), 10, interpolation="bilinear")
    assert T.Resize(30)(mininn.tensor(x)).shape == (3, 30, 90)  # already that size: unchanged


@pytest.mark.parametrize("size", [16, (10, 21), (50, 20), (41, 33), [7]])
def test_center_crop_equals_torchvision_also_when_it_pads(size: Any) -> None:
    x = image((2, 3, 41, 30))
    same(T.CenterCrop(size)(mininn.tensor(x)), TT.CenterCrop(size)(torch.from_numpy(x)), rtol=0, atol=0)
    assert repr(T.CenterCrop(size)) == repr(TT.CenterCrop(size))


def test_crop_outside_the_image_pads_with_zeros_as_torchvision() -> None:
    x = image((3, 10, 12))
    expected = tv.transforms.functional.crop(torch.from_numpy(x), -2, 5, 8, 11)
    same(F.crop(mininn.tensor(x), -2, 5, 8, 11), expected, rtol=0, atol=0)


def test_normalize_equals_torchvision_and_keeps_its_input_unless_inplace() -> None:
    x = image((2, 3, 8, 8))
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    source = mininn.tensor(x)
    same(T.Normalize(mean, std)(source), TT.Normalize(mean, std)(torch.from_numpy(x)), rtol=1e-6)
    np.testing.assert_array_equal(source.numpy(), x)
    T.Normalize(mean, std, inplace=True)(source)
    assert not np.allclose(source.numpy(), x)
    assert repr(T.Normalize(mean, std)) == repr(TT.Normalize(mean, std))


def test_normalize_errors_are_torchvisions() -> None:
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got mininn.uint8."):
        F.normalize(mininn.zeros((3, 2, 2), dtype=mininn.uint8), [0.0], [1.0])
    with pytest.raises(ValueError, match=r"Expected tensor to be a tensor image of size \(..., C, H, W\)"):
        F.normalize(mininn.zeros((2, 2)), [0.0], [1.0])
    with pytest.raises(ValueError, match="std evaluated to zero after conversion to mininn.float32"):
        F.normalize(mininn.zeros((3, 2, 2)), [0.0, 0.0, 0.0], [1.0, 0.0, 1.0])
    with pytest.raises(TypeError, match="img should be Tensor Image. Got <class 'numpy.ndarray'>"):
        F.normalize(np.zeros((3, 2, 2)), [0.0], [1.0])


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float64, np.int16])
@pytest.mark.parametrize("shape", [(5, 7), (5, 7, 3), (5, 7, 1)])
def test_to_tensor_from_arrays_equals_torchvision(dtype: Any, shape: tuple[int, ...]) -> None:
    x = image(shape, dtype) if dtype != np.int16 else np.arange(35 * (shape[2] if len(shape) == 3 else 1),
                                                                dtype=np.int16).reshape(shape)
    same(T.ToTensor()(x), TT.ToTensor()(x), rtol=1e-7)


def test_to_tensor_and_pil_to_tensor_from_pil_images_equal_torchvision() -> None:
    Image = pytest.importorskip("PIL.Image")
    rgb = Image.fromarray(image((6, 9, 3), np.uint8))
    for pic in (rgb, rgb.convert("L"), rgb.convert("1"), rgb.convert("F"), rgb.convert("RGBA")):
        same(F.to_tensor(pic), tv.transforms.functional.to_tensor(pic), rtol=1e-7)
    same(F.pil_to_tensor(rgb), tv.transforms.functional.pil_to_tensor(rgb), rtol=0)


def test_a_pil_pipeline_resizes_and_crops_through_pillow_as_torchvision() -> None:
    Image = pytest.importorskip("PIL.Image")
    pic = Image.fromarray(image((40, 56, 3), np.uint8))
    mean, std = [0.5, 0.4, 0.3], [0.2, 0.25, 0.3]
    ours = T.Compose([T.Resize(24), T.CenterCrop(20), T.ToTensor(), T.Normalize(mean, std)])
    theirs = TT.Compose([TT.Resize(24), TT.CenterCrop(20), TT.ToTensor(), TT.Normalize(mean, std)])
    same(ours(pic), theirs(pic), rtol=1e-6, atol=1e-6)
    padded = T.CenterCrop(50)(pic)  # larger than the image: zero border, as torchvision's
    same(F.to_tensor(padded), TT.functional.to_tensor(TT.CenterCrop(50)(pic)), rtol=0)


def test_to_tensor_refuses_what_torchvision_refuses() -> None:
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray. Got <class 'list'>"):
        F.to_tensor([[1, 2]])
    with pytest.raises(ValueError, match="pic should be 2/3 dimensional. Got 4 dimensions."):
        F.to_tensor(np.zeros((1, 2, 3, 4), np.uint8))
    with pytest.raises(TypeError, match="pic should be PIL Image. Got <class 'numpy.ndarray'>"):
        F.pil_to_tensor(np.zeros((2, 2), np.uint8))


@pytest.mark.parametrize(("src", "dst"), [
    ("uint8", "float32"), ("float32", "uint8"), ("uint8", "int16"), ("int16", "uint8"),
    ("float64", "float32"), ("int32", "float64"), ("uint8", "uint8"), ("float64", "int32"),
])
def test_convert_image_dtype_equals_torchvision(src: str, dst: str) -> None:
    x = image((3, 4, 5), np.uint8).astype(src) if "int" in src else image((3, 4, 5), getattr(np, src))
    if src == "int16":
        x = (x.astype(np.int32) * 100).astype(np.int16)
    got = T.ConvertImageDtype(getattr(mininn, dst))(mininn.tensor(x))
    expected = TT.ConvertImageDtype(getattr(torch, dst))(torch.from_numpy(x))
    same(got, expected, rtol=1e-7)


def test_convert_image_dtype_refuses_unsafe_float_casts_as_torchvision() -> None:
    with pytest.raises(RuntimeError, match="The cast from mininn.float32 to mininn.int32 cannot be"):
        F.convert_image_dtype(mininn.zeros(3, 2, 2), mininn.int32)
    with pytest.raises(TypeError, match="Input img should be Tensor Image"):
        F.convert_image_dtype(np.zeros((3, 2, 2)), mininn.float32)


def test_compose_and_lambda_call_in_order_with_torchvisions_reprs() -> None:
    ours = T.Compose([T.Lambda(lambda x: x * 2), T.Normalize([1.0], [2.0]), T.Resize(4), T.CenterCrop(3)])
    theirs = TT.Compose([TT.Lambda(lambda x: x * 2), TT.Normalize([1.0], [2.0]), TT.Resize(4),
                         TT.CenterCrop(3)])
    x = image((1, 6, 6))
    same(ours(mininn.tensor(x)), theirs(torch.from_numpy(x)), rtol=1e-5, atol=1e-6)
    assert repr(ours) == repr(theirs)
    with pytest.raises(TypeError, match="Argument lambd should be callable, got 'int'"):
        T.Lambda(3)
    with pytest.raises(ValueError, match=r"Please provide only two dimensions \(h, w\) for size."):
        T.CenterCrop((1, 2, 3))


def test_module_transforms_are_modules_as_in_torchvision() -> None:
    modules = (T.Normalize([0.0], [1.0]), T.Resize(3), T.CenterCrop(2), T.ConvertImageDtype(mininn.float32))
    for transform in modules:
        assert isinstance(transform, mininn.nn.Module)
        assert transform.state_dict() == {}


@pytest.mark.parametrize(("shape", "dtype", "mode"), [
    ((3, 5, 4), np.float32, None), ((1, 5, 4), np.float32, None), ((1, 5, 4), np.float32, "F"),
    ((4, 5, 4), np.uint8, None), ((3, 5, 4), np.uint8, "HSV"), ((2, 5, 4), np.uint8, None),
    ((5, 4), np.int32, None), ((5, 4), np.int16, None),
])
def test_to_pil_image_equals_torchvision(shape: tuple[int, ...], dtype: Any, mode: Any) -> None:
    pytest.importorskip("PIL.Image")
    x = image(shape, dtype) if dtype in (np.float32, np.uint8) else np.arange(20, dtype=dtype).reshape(shape)
    ours = T.ToPILImage(mode)(mininn.tensor(x))
    theirs = TT.ToPILImage(mode)(torch.from_numpy(x))
    assert (ours.mode, ours.size) == (theirs.mode, theirs.size)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    assert repr(T.ToPILImage(mode)) == repr(TT.ToPILImage(mode))


def test_to_pil_image_refuses_what_torchvision_refuses() -> None:
    with pytest.raises(TypeError, match="pic should be Tensor or ndarray. Got <class 'list'>."):
        F.to_pil_image([[0]])
    with pytest.raises(ValueError, match="pic should not have > 4 channels. Got 5 channels."):
        F.to_pil_image(np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(ValueError, match=r"Only modes \['RGB', 'YCbCr', 'HSV'\] are supported for 3D inputs"):
        F.to_pil_image(np.zeros((2, 2, 3), np.uint8), mode="RGBA")
