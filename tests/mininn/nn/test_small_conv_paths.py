"""The inference shortcuts of convolution, eval batch norm and max pooling against torch 2.13.

Under ``no_grad`` a batched 2-D/3-D convolution skips the autograd wrapper (``conv._conv_inference``),
a batch whose columns are small goes in one gather and one GEMM (``conv._conv_small``, either way
round: ``_pixels_major``), eval ``batch_norm`` is one folded multiply-add (``_batch_norm_eval``) and
a max pool whose windows tile the input is strided maximums (``pooling._tiled_max``). Each is pinned
here on both sides of its switch, and on the inputs where it must step aside (errors, gradients,
padding, ceil mode, indices).
"""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from mininn.nn.functional import conv, normalization, pooling
from tests.mininn.nn._layer_parity import to_numpy, twin

torch = pytest.importorskip("torch")
TF = torch.nn.functional

TOL = {np.dtype(np.float32): dict(rtol=1e-4, atol=1e-5), np.dtype(np.float64): dict(rtol=1e-10, atol=1e-12)}


def _arr(shape, dtype, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _close(got, want, dtype):
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), **TOL[np.dtype(dtype)])


# ---- convolution -----------------------------------------------------------------------------

# input shape, weight shape, stride, padding, dilation
SMALL_CONVS = [
    ((1, 1, 28, 28), (16, 1, 3, 3), 1, 1, 1),  # the small CNN's first layer (O @ cols)
    ((1, 16, 14, 14), (32, 16, 3, 3), 1, 1, 1),  # its second (pixels-major GEMM)
    ((3, 16, 9, 11), (32, 16, 3, 3), 2, (1, 0), (1, 2)),  # a batch, pixels-major
    ((3, 4, 9, 11), (8, 4, 3, 2), 1, 0, 1),  # a batch, O @ cols
    ((2, 8, 10, 10), (48, 8, 3, 3), 1, "same", 1),  # many output channels: O @ cols
    ((1, 3, 8, 9), (5, 3, 4, 4), 1, "same", 1),  # even kernel: the odd padding element after
]


@pytest.mark.parametrize("small", [True, False], ids=["small-path", "blocked-path"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("cfg", SMALL_CONVS, ids=str)
def test_conv2d_under_no_grad_matches_torch_on_both_sides_of_the_small_switch(cfg, bias, dtype, small,
                                                                              monkeypatch):
    x_shape, w_shape, stride, padding, dilation = cfg
    monkeypatch.setattr(conv, "_SMALL_BYTES", 1 << 40 if small else 0)
    x, w = _arr(x_shape, dtype), _arr(w_shape, dtype, 1, 0.3)
    b = _arr(w_shape[:1], dtype, 2) if bias else None
    tb = None if b is None else torch.tensor(b)
    want = TF.conv2d(torch.tensor(x), torch.tensor(w), tb, stride, padding, dilation)
    taken = []
    real = conv._conv_small
    monkeypatch.setattr(conv, "_conv_small", lambda *a: taken.append(1) or real(*a))
    with mininn.no_grad():
        got = F.conv2d(mininn.tensor(x), mininn.tensor(w), None if b is None else mininn.tensor(b), stride,
                       padding, dilation)
    assert bool(taken) == small
    assert got.dtype.name == np.dtype(dtype).name and got.is_contiguous()
    assert not got.requires_grad and got.grad_fn is None
    _close(got, want, dtype)


@pytest.mark.parametrize("pixels_major", [True, False])
@pytest.mark.parametrize("batch", [1, 3])
def test_small_conv_gives_the_same_either_way_round(pixels_major, batch, monkeypatch):
    monkeypatch.setattr(conv, "_pixels_major", lambda o, k: pixels_major)
    x, w, b = _arr((batch, 6, 7, 8), np.float64), _arr((5, 6, 3, 3), np.float64, 1), _arr((5,), np.float64, 2)
    want = TF.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), 1, 1)
    with mininn.no_grad():
        got = F.conv2d(mininn.tensor(x), mininn.tensor(w), mininn.tensor(b), 1, 1)
    _close(got, want, np.float64)


def test_the_default_orientation_rule():
    assert conv._pixels_major(32, 144) and conv._pixels_major(16, 64)
    assert not conv._pixels_major(16, 9) and not conv._pixels_major(64, 576)


def test_channels_last_and_strided_inputs_take_the_small_path_correctly():
    x = _arr((2, 12, 10, 6), np.float32)  # (N, H, W, C) in memory
    w, b = _arr((8, 6, 3, 3), np.float32, 1, 0.3), _arr((8,), np.float32, 2)
    tx = torch.tensor(x).permute(0, 3, 1, 2)
    mx = mininn.tensor(x).permute(0, 3, 1, 2)
    want = TF.conv2d(tx, torch.tensor(w), torch.tensor(b), padding=1)
    with mininn.no_grad():
        got = F.conv2d(mx, mininn.tensor(w), mininn.tensor(b), padding=1)  # padded copy
        got_valid = F.conv2d(mx[:, :, ::2], mininn.tensor(w), mininn.tensor(b))  # windows of a strided view
    _close(got, want, np.float32)
    _close(got_valid, TF.conv2d(tx[:, :, ::2], torch.tensor(w), torch.tensor(b)), np.float32)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "circular"])
@pytest.mark.parametrize("groups", [1, 2, 6])
def test_conv_modules_in_eval_under_no_grad_match_torch(groups, mode):
    tm = torch.nn.Conv2d(6, 12, 3, padding=1, groups=groups, padding_mode=mode)
    mm = twin(tm, nn.Conv2d(6, 12, 3, padding=1, groups=groups, padding_mode=mode))
    x = _arr((2, 6, 9, 7), np.float32)
    with torch.no_grad(), mininn.no_grad():
        _close(mm.eval()(mininn.tensor(x)), tm.eval()(torch.tensor(x)), np.float32)


def test_conv3d_and_conv1d_under_no_grad_match_torch():
    x3, w3 = _arr((1, 3, 5, 6, 7), np.float64), _arr((4, 3, 3, 3, 3), np.float64, 1)
    x1, w1 = _arr((2, 3, 11), np.float64), _arr((4, 3, 3), np.float64, 1)
    with mininn.no_grad():
        got3 = F.conv3d(mininn.tensor(x3), mininn.tensor(w3), None, 1, 1)
        got1 = F.conv1d(mininn.tensor(x1), mininn.tensor(w1), None, 2, 1)
    _close(got3, TF.conv3d(torch.tensor(x3), torch.tensor(w3), None, 1, 1), np.float64)
    _close(got1, TF.conv1d(torch.tensor(x1), torch.tensor(w1), None, 2, 1), np.float64)


def test_unbatched_input_under_no_grad_matches_torch():
    x, w = _arr((3, 8, 8), np.float64), _arr((4, 3, 3, 3), np.float64, 1)
    with mininn.no_grad():
        got = F.conv2d(mininn.tensor(x), mininn.tensor(w), None, 1, 1)
    assert tuple(got.shape) == (4, 8, 8)
    _close(got, TF.conv2d(torch.tensor(x), torch.tensor(w), None, 1, 1), np.float64)


def test_gradients_still_flow_when_grad_is_enabled():
    x, w = _arr((1, 16, 14, 14), np.float64), _arr((32, 16, 3, 3), np.float64, 1)
    b = _arr((32,), np.float64, 2)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    mx, mw, mb = (mininn.tensor(a, requires_grad=True) for a in (x, w, b))
    TF.conv2d(tx, tw, tb, padding=1).square().sum().backward()
    out = F.conv2d(mx, mw, mb, padding=1)
    assert out.grad_fn is not None
    (out * out).sum().backward()
    for m, t in ((mx, tx), (mw, tw), (mb, tb)):
        _close(m.grad, t.grad, np.float64)


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("case", ["channels", "bias_dtype", "weight_dtype", "bias_size", "kernel_too_big",
                                  "float_stride", "stride_length", "same_strided", "bad_rank"])
def test_bad_calls_under_no_grad_raise_what_they_raise_with_grad(case):
    x32 = mininn.tensor(_arr((1, 3, 6, 6), np.float32))
    w32 = mininn.tensor(_arr((4, 3, 3, 3), np.float32, 1))
    calls = {
        "channels": lambda: F.conv2d(mininn.tensor(_arr((1, 5, 6, 6), np.float32)), w32),
        "bias_dtype": lambda: F.conv2d(x32, w32, mininn.tensor(_arr((4,), np.float64))),
        "weight_dtype": lambda: F.conv2d(x32, mininn.tensor(_arr((4, 3, 3, 3), np.float64))),
        "bias_size": lambda: F.conv2d(x32, w32, mininn.tensor(_arr((5,), np.float32))),
        "kernel_too_big": lambda: F.conv2d(x32, mininn.tensor(_arr((4, 3, 7, 7), np.float32))),
        "float_stride": lambda: F.conv2d(x32, w32, None, 1.0),
        "stride_length": lambda: F.conv2d(x32, w32, None, (1, 1, 1)),
        "same_strided": lambda: F.conv2d(x32, w32, None, 2, "same"),
        "bad_rank": lambda: F.conv2d(mininn.tensor(_arr((1, 1, 3, 6, 6), np.float32)), w32),
    }
    F.conv2d(x32, w32, None, 1)  # an int stride cached first must not let a float one through
    with mininn.no_grad():
        fast = _message(calls[case])
    x32.requires_grad_(True)
    assert _message(calls[case]) == fast


# ---- batch norm in eval ------------------------------------------------------------------------


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind,shape", [("BatchNorm1d", (4, 6)), ("BatchNorm1d", (2, 6, 5)),
                                        ("BatchNorm2d", (1, 6, 7, 7)), ("BatchNorm3d", (2, 6, 3, 4, 5))])
def test_eval_batch_norm_under_no_grad_matches_torch_and_the_recorded_path(kind, shape, dtype, affine):
    tm = getattr(torch.nn, kind)(6, affine=affine).to(torch.float64 if dtype == np.float64 else torch.float32)
    with torch.no_grad():
        tm.running_mean.copy_(torch.tensor(_arr((6,), dtype, 3)))
        tm.running_var.copy_(torch.tensor(np.abs(_arr((6,), dtype, 4)) + 0.5))
        if affine:
            tm.weight.copy_(torch.tensor(_arr((6,), dtype, 5)))
            tm.bias.copy_(torch.tensor(_arr((6,), dtype, 6)))
    mm = twin(tm, getattr(nn, kind)(6, affine=affine, dtype=mininn.float64 if dtype == np.float64 else None))
    tm.eval()
    mm.eval()
    x = _arr(shape, dtype)
    with mininn.no_grad():
        fast = mm(mininn.tensor(x))
    recorded = mm(mininn.tensor(x, requires_grad=True))  # the autograd function's eval forward
    assert recorded.grad_fn is not None and fast.grad_fn is None
    np.testing.assert_array_equal(fast.numpy(), recorded.detach().numpy())
    with torch.no_grad():
        _close(fast, tm(torch.tensor(x)), dtype)


def test_eval_batch_norm_shortcut_steps_aside_for_odd_statistics(monkeypatch):
    taken = []
    real = normalization._scale_shift
    monkeypatch.setattr(normalization, "_scale_shift", lambda *a: taken.append(1) or real(*a))
    x = mininn.tensor(_arr((2, 3, 4), np.float32))
    rm, rv = mininn.zeros(3), mininn.ones(3)
    with mininn.no_grad():
        F.batch_norm(x, rm, rv)
        assert taken == [1]
        # statistics of another dtype: torch's error, from the checked path
        with pytest.raises(RuntimeError, match="mixed dtype"):
            F.batch_norm(x, rm.double(), rv.double())
        with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
            F.batch_norm(x, mininn.zeros(4), rv)
        with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
            F.batch_norm(x, None, rv)
        # training still uses (and updates) batch statistics
        out = F.batch_norm(x, rm, rv, training=True)
    assert not np.allclose(rm.numpy(), 0)
    np.testing.assert_allclose(out.numpy().mean(axis=(0, 2)), 0, atol=1e-5)


# ---- max pooling whose windows tile the input ----------------------------------------------------

# input shape, kernel, stride, padding, ceil_mode
POOLS = [
    ((1, 16, 28, 28), 2, None, 0, False),  # tiles
    ((2, 3, 9, 11), 2, None, 0, False),  # odd sizes: the last row and column are dropped
    ((2, 3, 9, 11), 2, None, 0, True),  # ceil mode, odd sizes: a partial window, no shortcut
    ((2, 3, 8, 10), 2, None, 0, True),  # ceil mode on even sizes still tiles
    ((2, 3, 9, 12), 3, None, 0, False),
    ((2, 3, 9, 12), (2, 3), None, 0, False),
    ((2, 3, 9, 12), (1, 3), None, 0, False),
    ((2, 3, 9, 11), 2, None, 1, False),  # padding: no shortcut
    ((2, 3, 9, 11), 3, 2, 0, False),  # overlapping windows: no shortcut
    ((3, 9, 11), 2, None, 0, False),  # unbatched
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cfg", POOLS, ids=str)
def test_max_pool2d_under_no_grad_matches_torch_with_or_without_the_shortcut(cfg, dtype):
    shape, kernel, stride, padding, ceil_mode = cfg
    x = _arr(shape, dtype)
    x.reshape(-1)[::7] = np.nan  # NaN wins, as in torch
    want = TF.max_pool2d(torch.tensor(x), kernel, stride, padding, ceil_mode=ceil_mode)
    with mininn.no_grad():
        got = F.max_pool2d(mininn.tensor(x), kernel, stride, padding, ceil_mode=ceil_mode)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_tiled_max_takes_only_tiling_windows(monkeypatch):
    calls = []
    real = pooling._tiled_max
    monkeypatch.setattr(pooling, "_tiled_max", lambda *a: calls.append(1) or real(*a))
    x = mininn.tensor(_arr((1, 2, 9, 9), np.float32))
    with mininn.no_grad():
        F.max_pool2d(x, 2)
        assert len(calls) == 1
        for kwargs in (dict(padding=1), dict(stride=1), dict(dilation=2), dict(return_indices=True)):
            F.max_pool2d(x, 2, **kwargs)
        assert len(calls) == 1
        assert pooling._tiled_max(x.numpy(), (2, 2), (5, 5)) is None  # a ceil-mode window past the edge


@pytest.mark.parametrize("nd", [1, 3])
def test_tiled_max_pool_in_1d_and_3d_matches_torch(nd):
    shape = (2, 3, 13) if nd == 1 else (1, 2, 6, 7, 8)
    x = _arr(shape, np.float32)
    with mininn.no_grad():
        got = getattr(F, f"max_pool{nd}d")(mininn.tensor(x), 2)
    want = getattr(TF, f"max_pool{nd}d")(torch.tensor(x), 2)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_channels_last_input_and_gradients_of_a_tiled_max_pool():
    x = _arr((2, 8, 8, 3), np.float64)
    tx = torch.tensor(x).permute(0, 3, 1, 2).requires_grad_(True)
    mx = mininn.tensor(x).permute(0, 3, 1, 2).requires_grad_(True)
    with mininn.no_grad():
        np.testing.assert_array_equal(F.max_pool2d(mx, 2).numpy(), TF.max_pool2d(tx, 2).detach().numpy())
    out = F.max_pool2d(mx, 2)
    assert out.grad_fn is not None
    (out * out).sum().backward()
    TF.max_pool2d(tx, 2).square().sum().backward()
    _close(mx.grad, tx.grad, np.float64)
