"""PixelShuffle, PixelUnshuffle, ChannelShuffle and their functional forms against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import assert_parity, same_error

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]


def _x(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,r", [((2, 8, 2, 3), 2), ((9, 2, 2), 3), ((2, 3, 4, 2, 3), 2),
                                     ((1, 3, 2, 2), 1)], ids=str)
def test_pixel_shuffle_matches_torch_values_and_gradients(shape, r, dtype):
    assert_parity(torch.nn.PixelShuffle(r), nn.PixelShuffle(r), _x(shape, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,r", [((2, 2, 4, 6), 2), ((1, 6, 9), 3), ((2, 3, 1, 4, 6), 2),
                                     ((1, 3, 2, 2), 1)], ids=str)
def test_pixel_unshuffle_matches_torch_values_and_gradients(shape, r, dtype):
    assert_parity(torch.nn.PixelUnshuffle(r), nn.PixelUnshuffle(r), _x(shape, dtype))


def test_pixel_unshuffle_inverts_pixel_shuffle_on_integers_exactly_like_torch():
    x = np.arange(2 * 18 * 2 * 3).reshape(2, 18, 2, 3)
    ours = F.pixel_shuffle(mininn.tensor(x), 3)
    np.testing.assert_array_equal(ours.numpy(), TF.pixel_shuffle(torch.tensor(x), 3).numpy())
    np.testing.assert_array_equal(F.pixel_unshuffle(ours, 3).numpy(), x)
    assert ours.dtype == mininn.int64


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((2, 6, 3, 4), 2), ((1, 8, 2, 2, 2), 4),
                                          ((2, 4, 3), 1)], ids=str)
def test_channel_shuffle_matches_torch_values_and_gradients(shape, groups, dtype):
    assert_parity(torch.nn.ChannelShuffle(groups), nn.ChannelShuffle(groups), _x(shape, dtype))


def test_native_channel_shuffle_matches_torch_and_has_a_gradient():
    x = _x((2, 6, 3, 2))
    mx = mininn.tensor(x, requires_grad=True)
    out = F.native_channel_shuffle(mx, 3)
    np.testing.assert_array_equal(out.detach().numpy(), TF.native_channel_shuffle(torch.tensor(x), 3).numpy())
    out.sum().backward()
    np.testing.assert_array_equal(mx.grad.numpy(), np.ones_like(x))


@pytest.mark.parametrize("make", [
    lambda m: m.PixelShuffle(3),
    lambda m: m.PixelUnshuffle(2),
    lambda m: m.ChannelShuffle(4),
])
def test_shuffle_reprs_attributes_and_empty_state_dicts_match_torch(make):
    t, m = make(torch.nn), make(nn)
    assert repr(m) == repr(t)
    public = {k: v for k, v in vars(t).items() if not k.startswith("_") and k != "training"}
    assert public.items() <= vars(m).items()
    assert list(m.state_dict()) == list(t.state_dict()) == []


@pytest.mark.parametrize("call", [
    lambda lib, f: f.pixel_shuffle(lib.ones(8, 2), 2),
    lambda lib, f: f.pixel_shuffle(lib.ones(2, 3), 0),
    lambda lib, f: f.pixel_shuffle(lib.ones(1, 7, 2, 3), 2),
    lambda lib, f: f.pixel_shuffle(lib.ones(1, 8, 2, 3), 0),
    lambda lib, f: f.pixel_shuffle(lib.ones(1, 8, 2, 3), -2),
    lambda lib, f: f.pixel_shuffle(lib.ones(1, 8, 2, 3), 2.0),
    lambda lib, f: f.pixel_unshuffle(lib.ones(4, 6), 2),
    lambda lib, f: f.pixel_unshuffle(lib.ones(1, 2, 5, 6), 2),
    lambda lib, f: f.pixel_unshuffle(lib.ones(1, 2, 4, 5), 2),
    lambda lib, f: f.pixel_unshuffle(lib.ones(1, 2, 4, 6), 0),
    lambda lib, f: f.pixel_unshuffle(lib.ones(2, 3, 3), 2.0),
    lambda lib, f: f.channel_shuffle(lib.ones(2, 6), 2),
    lambda lib, f: f.channel_shuffle(lib.ones(6), 2),
    lambda lib, f: f.channel_shuffle(lib.ones(2, 6, 3), 4),
    lambda lib, f: f.channel_shuffle(lib.ones(2, 6, 3), 0),
    lambda lib, f: f.channel_shuffle(lib.ones(2, 6, 3), -2),
    lambda lib, f: f.channel_shuffle(lib.ones(2, 3), 0),
    lambda lib, f: f.channel_shuffle(lib.ones(2, 3, 4), 2.0),
    lambda lib, f: f.native_channel_shuffle(lib.ones(2, 6, 3), 4),
])
def test_shuffle_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))
