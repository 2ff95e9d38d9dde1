"""F.interpolate (every mode), the deprecated F.upsample* and the Upsample layers against torch 2.13."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import assert_parity, same_error, to_numpy

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]
S1, S2, S3 = (2, 3, 7), (2, 3, 7, 5), (1, 2, 4, 5, 3)

# mode, input shape, Upsample keyword arguments
CASES = [
    ("nearest", S1, dict(scale_factor=2)),
    ("nearest", S1, dict(scale_factor=1.7)),
    ("nearest", S2, dict(scale_factor=(2, 3))),
    ("nearest", S2, dict(size=(4, 9))),
    ("nearest", S2, dict(scale_factor=0.6, recompute_scale_factor=True)),
    ("nearest", S3, dict(scale_factor=1.3)),
    ("nearest-exact", S1, dict(size=12)),
    ("nearest-exact", S2, dict(scale_factor=(0.7, 2.5))),
    ("nearest-exact", S3, dict(size=(3, 7, 6))),
    ("linear", S1, dict(scale_factor=2.5)),
    ("linear", S1, dict(size=4, align_corners=True)),
    ("bilinear", S2, dict(scale_factor=2)),
    ("bilinear", S2, dict(scale_factor=(0.6, 1.7))),
    ("bilinear", S2, dict(scale_factor=1.3, recompute_scale_factor=True)),
    ("bilinear", S2, dict(size=(9, 3), align_corners=True)),
    ("bilinear", S2, dict(size=1, align_corners=True)),
    ("bicubic", S2, dict(scale_factor=2)),
    ("bicubic", S2, dict(size=(4, 11), align_corners=True)),
    ("bicubic", S2, dict(scale_factor=0.5)),
    ("trilinear", S3, dict(scale_factor=2)),
    ("trilinear", S3, dict(size=(3, 7, 6), align_corners=True)),
    ("area", S1, dict(size=3)),
    ("area", S2, dict(scale_factor=(0.5, 1.5))),
    ("area", S3, dict(size=(2, 3, 5))),
]


def _x(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,shape,kw", CASES, ids=str)
def test_upsample_matches_torch_values_and_gradients(mode, shape, kw, dtype):
    assert_parity(torch.nn.Upsample(mode=mode, **kw), nn.Upsample(mode=mode, **kw), _x(shape, dtype))


@pytest.mark.parametrize("mode,shape,kw", [
    ("bilinear", (1, 2, 3, 4), dict(scale_factor=(1.3, 2))),  # H keeps its size: passed through
    ("trilinear", (1, 2, 4, 5, 3), dict(scale_factor=1.3)),
    ("linear", (1, 2, 3), dict(scale_factor=1.3)),
    ("nearest", (1, 2, 3), dict(scale_factor=1.3)),  # forward maps 3 -> 3, backward passes through
    ("nearest", (1, 2, 3, 3, 4), dict(scale_factor=(1.3, 1.3, 2))),
    ("nearest", (1, 2, 3, 4), dict(scale_factor=(1.3, 2))),
    ("nearest-exact", (1, 2, 3, 4), dict(scale_factor=(1.3, 2))),
    ("bicubic", (1, 2, 3, 4), dict(scale_factor=1.3)),  # unchanged size: backward passes through
    ("bicubic", (1, 2, 3, 4), dict(scale_factor=(1.3, 2))),
])
def test_interpolate_matches_torch_where_an_axis_keeps_its_size(mode, shape, kw):
    assert_parity(torch.nn.Upsample(mode=mode, **kw), nn.Upsample(mode=mode, **kw), _x(shape))


@pytest.mark.parametrize("size,n_in", [(485, 255), (29, 30), (61, 32), (13, 7)])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_source_index_from_a_size_is_exact_like_torch(mode, size, n_in):
    x = np.arange(n_in, dtype=np.float64).reshape(1, 1, n_in)
    ours = F.interpolate(mininn.tensor(x), size=size, mode=mode)
    np.testing.assert_array_equal(ours.numpy(), TF.interpolate(torch.tensor(x), size=size, mode=mode).numpy())


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_copies_uint8_and_infinities_exactly_like_torch(mode):
    x = np.random.default_rng(0).integers(0, 255, (2, 3, 5, 4)).astype(np.uint8)
    ours = F.interpolate(mininn.tensor(x), scale_factor=(1.5, 2.5), mode=mode)
    np.testing.assert_array_equal(ours.numpy(), TF.interpolate(torch.tensor(x), scale_factor=(1.5, 2.5),
                                                               mode=mode).numpy())
    assert ours.dtype == mininn.uint8
    y = _x((1, 2, 4, 3))
    y[0, 0, 1, 1], y[0, 1, 2, 0] = np.inf, np.nan
    ours = F.interpolate(mininn.tensor(y), size=(7, 5), mode=mode)
    theirs = TF.interpolate(torch.tensor(y), size=(7, 5), mode=mode)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_upsampling_bilinear2d_aligns_corners_like_torch():
    x = _x((2, 3, 4, 5), np.float32)
    assert_parity(torch.nn.UpsamplingBilinear2d(scale_factor=2), nn.UpsamplingBilinear2d(scale_factor=2), x)
    assert_parity(torch.nn.UpsamplingNearest2d(size=(5, 7)), nn.UpsamplingNearest2d(size=(5, 7)), x)


def test_interpolate_keeps_float32_and_records_no_graph_under_no_grad():
    x = mininn.randn(1, 2, 4, 4, requires_grad=True)
    with mininn.no_grad():
        outs = [F.interpolate(x, scale_factor=2, mode=m) for m in ("nearest", "bilinear", "bicubic", "area")]
    assert all(o.dtype == mininn.float32 and o.grad_fn is None for o in outs)


@pytest.mark.parametrize("make", [
    lambda m: m.Upsample(scale_factor=2),
    lambda m: m.Upsample(size=3, mode="bilinear"),
    lambda m: m.Upsample(size=(3, 4), mode="bilinear", align_corners=True, recompute_scale_factor=True),
    lambda m: m.Upsample(scale_factor=(2, 3.5), mode="bicubic"),
    lambda m: m.Upsample(scale_factor=0),
    lambda m: m.UpsamplingNearest2d(scale_factor=2),
    lambda m: m.UpsamplingBilinear2d(size=3),
])
def test_upsampling_reprs_attributes_and_empty_state_dicts_match_torch(make):
    t, m = make(torch.nn), make(nn)
    assert repr(m) == repr(t)
    for name in ("name", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"):
        assert getattr(m, name) == getattr(t, name), name
    assert type(m.scale_factor) is type(t.scale_factor)
    assert list(m.state_dict()) == list(t.state_dict()) == []


@pytest.mark.parametrize("name,call", [
    ("upsample", lambda f, x: f.upsample(x, scale_factor=2, mode="bilinear")),
    ("upsample_nearest", lambda f, x: f.upsample_nearest(x, size=(3, 7))),
    ("upsample_bilinear", lambda f, x: f.upsample_bilinear(x, scale_factor=2)),
])
def test_deprecated_upsample_functions_warn_and_match_torch(name, call):
    x = _x((1, 2, 4, 5))
    with pytest.warns(UserWarning) as ours:
        out = call(F, mininn.tensor(x))
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        expected = call(TF, torch.tensor(x))
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    assert ours[0].filename == __file__
    np.testing.assert_allclose(to_numpy(out), to_numpy(expected), rtol=1e-12, atol=1e-12)


def _interpolate_both(x, **kw):
    """Output and input gradient of F.interpolate in torch and mininn under the same cotangent."""
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    ty, my = TF.interpolate(tx, **kw), F.interpolate(mx, **kw)
    cot = _x(tuple(ty.shape), x.dtype, seed=1)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    return (to_numpy(ty), to_numpy(tx.grad)), (to_numpy(my), to_numpy(mx.grad))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 17, 9), dict(size=(5, 13))),
    ((2, 3, 20, 9), dict(scale_factor=0.3)),
    ((1, 2, 40, 7), dict(scale_factor=(0.45, 2.2), recompute_scale_factor=True)),
    ((1, 2, 3, 8), dict(scale_factor=(1.3, 0.5))),  # H keeps its size: passed through forward only
], ids=str)
@pytest.mark.parametrize("mode,align_corners", [("bilinear", False), ("bilinear", True), ("bicubic", False),
                                                ("bicubic", True), ("lanczos", None)])
def test_antialiased_interpolate_matches_torch_values_and_gradients(mode, align_corners, shape, kw, dtype):
    theirs, ours = _interpolate_both(_x(shape, dtype), mode=mode, align_corners=align_corners, antialias=True,
                                     **kw)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours[0], theirs[0], **tol, err_msg="output")
    np.testing.assert_allclose(ours[1], theirs[1], **tol, err_msg="input grad")


def test_antialiased_interpolate_of_a_width_of_one_is_torchs_result_for_a_wider_copy():
    # torch's CPU kernel repeats the first output row when the width is 1; mininn does not
    x = np.arange(20.0).reshape(1, 1, 20, 1)
    ours = F.interpolate(mininn.tensor(x), size=(6, 1), mode="bilinear", antialias=True)
    wide = TF.interpolate(torch.tensor(np.repeat(x, 2, axis=3)), size=(6, 2), mode="bilinear", antialias=True)
    np.testing.assert_allclose(ours.numpy(), wide.numpy()[..., :1], rtol=1e-12)


def test_bilinear_of_uint8_is_refused_with_a_clear_error():
    with pytest.raises(NotImplementedError, match="uint8"):
        F.interpolate(mininn.ones(1, 1, 4, 4, dtype=mininn.uint8), size=3, mode="bilinear")


X3, X4, X5 = (1, 2, 5), (1, 2, 5, 6), (1, 2, 3, 4, 5)


@pytest.mark.parametrize("call", [
    lambda lib, f: f.interpolate(lib.ones(*X4), scale_factor=2, align_corners=True),
    lambda lib, f: f.interpolate(lib.ones(*X4), scale_factor=2, mode="area", align_corners=False),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=3, scale_factor=2),
    lambda lib, f: f.interpolate(lib.ones(*X4)),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=(3, 4, 5)),
    lambda lib, f: f.interpolate(lib.ones(*X4), scale_factor=(3, 4, 5)),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=(3, 4), recompute_scale_factor=True),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=(2.5, 3)),
    lambda lib, f: f.interpolate(lib.ones(*X3), size=3, mode="bilinear"),
    lambda lib, f: f.interpolate(lib.ones(*X3), size=3, mode="bicubic"),
    lambda lib, f: f.interpolate(lib.ones(*X3), size=3, mode="trilinear"),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=3, mode="linear"),
    lambda lib, f: f.interpolate(lib.ones(*X5), size=3, mode="bilinear"),
    lambda lib, f: f.interpolate(lib.ones(*X5), size=3, mode="bicubic"),
    lambda lib, f: f.interpolate(lib.ones(2, 5), size=3),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=3, mode="foo"),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=3, mode="lanczos"),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=3, mode="lanczos", align_corners=True),
    lambda lib, f: f.interpolate(lib.ones(*X3), size=3, mode="lanczos"),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=0, mode="bicubic", antialias=True),
    lambda lib, f: f.interpolate(lib.ones(*X4, dtype=lib.int64), size=3, mode="lanczos", antialias=True),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=3, mode="nearest", antialias=True),
    lambda lib, f: f.interpolate(lib.ones(*X3), size=3, mode="linear", antialias=True),
    lambda lib, f: f.interpolate(lib.ones(*X3), size=0),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=(0, 3), mode="bilinear"),
    lambda lib, f: f.interpolate(lib.ones(*X5), scale_factor=0.1, mode="trilinear"),
    lambda lib, f: f.interpolate(lib.ones(1, 0, 5, 6), scale_factor=2.0),
    lambda lib, f: f.interpolate(lib.ones(1, 0, 5), size=3, mode="linear"),
    lambda lib, f: f.interpolate(lib.ones(*X3, dtype=lib.int64), size=3),
    lambda lib, f: f.interpolate(lib.ones(*X4, dtype=lib.int64), size=3),
    lambda lib, f: f.interpolate(lib.ones(*X4, dtype=lib.int32), size=3, mode="bilinear"),
    lambda lib, f: f.interpolate(lib.ones(*X4, dtype=lib.int64), size=3, mode="bicubic"),
    lambda lib, f: f.interpolate(lib.ones(*X5, dtype=lib.int64), size=3, mode="trilinear"),
    lambda lib, f: f.interpolate(lib.ones(*X4, dtype=lib.uint8), size=3, mode="area"),
    lambda lib, f: f.interpolate(lib.ones(*X3), size=-2, mode="area"),
    lambda lib, f: f.interpolate(lib.ones(*X4), size=(-1, 3), mode="area"),
    lambda lib, f: f.interpolate(lib.ones(*X5), size=(-1, 2, 2), mode="area"),
    lambda lib, f: f.interpolate(lib.ones(*X5, dtype=lib.int64), size=3, mode="area"),
    lambda lib, f: f.interpolate(lib.ones(*X5, dtype=lib.bool), size=3, mode="nearest-exact"),
])
def test_interpolate_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))


def test_interpolate_of_an_empty_batch_and_to_an_empty_area_match_torch():
    assert tuple(F.interpolate(mininn.ones(0, 2, 5, 6), scale_factor=2.0).shape) == (0, 2, 10, 12)
    out = F.interpolate(mininn.ones(1, 2, 5, 6), size=(0, 3), mode="area")
    assert tuple(out.shape) == tuple(TF.interpolate(torch.ones(1, 2, 5, 6), size=(0, 3), mode="area").shape)


@pytest.mark.parametrize("dtype", ["float32", "float64", "uint8"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_nearest_from_a_size_steps_in_float32_where_torchs_kernel_does(dtype, rank):
    # 52 -> 22: output 11 reads input 25 in float32 (11 * float32(52 / 22) < 26), 26 in exact arithmetic
    for n_in, n_out in [(52, 22), (26, 22), (14, 46), (39, 33), (40, 17), (485, 255)]:
        x = np.arange(n_in).astype(dtype).reshape((1, 1) + (1,) * (rank - 1) + (n_in,))
        size = (3,) * (rank - 1) + (n_out,)
        ours = F.interpolate(mininn.tensor(x), size=size, mode="nearest")
        np.testing.assert_array_equal(ours.numpy(), TF.interpolate(torch.tensor(x), size=size).numpy())
