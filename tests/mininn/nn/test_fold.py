"""Fold, Unfold, F.fold and F.unfold against torch 2.13."""

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
# kernel_size, dilation, padding, stride
CONFIGS = [
    (2, 1, 0, 1),
    ((2, 3), (1, 2), 1, 2),
    (3, 2, (1, 2), (2, 1)),
    (1, 1, 0, 1),
    (3, 1, 1, 3),
]


def _x(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _kwargs(cfg):
    k, d, p, s = cfg
    return dict(kernel_size=k, dilation=d, padding=p, stride=s)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (3, 6, 5)], ids=str)
@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_unfold_matches_torch_values_and_gradients(cfg, shape, dtype):
    assert_parity(torch.nn.Unfold(**_kwargs(cfg)), nn.Unfold(**_kwargs(cfg)), _x(shape, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_fold_matches_torch_values_and_gradients(cfg, batched, dtype):
    out_size = (7, 8)
    cols = TF.unfold(torch.zeros(1, 3, *out_size), **_kwargs(cfg)).shape[1:]
    shape = ((2,) if batched else ()) + tuple(cols)
    kw = _kwargs(cfg)
    assert_parity(torch.nn.Fold(out_size, **kw), nn.Fold(out_size, **kw), _x(shape, dtype))


def test_fold_of_unfold_counts_how_many_blocks_cover_each_pixel_like_torch():
    ones = np.ones((1, 2, 5, 6))
    ours = F.fold(F.unfold(mininn.tensor(ones), 3, padding=1, stride=2), (5, 6), 3, padding=1, stride=2)
    theirs = TF.fold(TF.unfold(torch.tensor(ones), 3, padding=1, stride=2), (5, 6), 3, padding=1, stride=2)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_unfold_and_fold_of_an_empty_batch_match_torch_shapes():
    expected = tuple(TF.unfold(torch.ones(0, 2, 5, 6), 2).shape)
    assert tuple(F.unfold(mininn.ones(0, 2, 5, 6), 2).shape) == expected
    assert tuple(F.fold(mininn.ones(0, 8, 20), (5, 6), 2).shape) == (0, 2, 5, 6)


@pytest.mark.parametrize("make", [
    lambda m: m.Fold(3, 2),
    lambda m: m.Fold((4, 5), (2, 3), dilation=(1, 2), padding=1, stride=2),
    lambda m: m.Unfold((2, 3), padding=1),
    lambda m: m.Unfold(3, 2, 1, 2),
])
def test_fold_reprs_attributes_and_empty_state_dicts_match_torch(make):
    t, m = make(torch.nn), make(nn)
    assert repr(m) == repr(t)
    for name in ("kernel_size", "dilation", "padding", "stride"):
        assert getattr(m, name) == getattr(t, name)
    assert list(m.state_dict()) == list(t.state_dict()) == []


X4 = (1, 2, 5, 6)


@pytest.mark.parametrize("call", [
    lambda lib, f: f.unfold(lib.ones(1, 2, 3, 4, 5), 2),
    lambda lib, f: f.unfold(lib.ones(*X4), 7),
    lambda lib, f: f.unfold(lib.ones(*X4), 0),
    lambda lib, f: f.unfold(lib.ones(*X4), 2, stride=0),
    lambda lib, f: f.unfold(lib.ones(*X4), 2, dilation=0),
    lambda lib, f: f.unfold(lib.ones(*X4), 2, padding=-1),
    lambda lib, f: f.unfold(lib.ones(*X4), (2, 2, 2)),
    lambda lib, f: f.unfold(lib.ones(1, 0, 5, 6), 2),
    lambda lib, f: f.unfold(lib.ones(*X4, dtype=lib.int64), 2),
    lambda lib, f: f.fold(lib.ones(1, 1, 8, 20), (5, 6), 2),
    lambda lib, f: f.fold(lib.ones(1, 7, 20), (5, 6), 2),
    lambda lib, f: f.fold(lib.ones(1, 8, 19), (5, 6), 2),
    lambda lib, f: f.fold(lib.ones(1, 8, 20), (1, 1), 2),
    lambda lib, f: f.fold(lib.ones(1, 8, 20), (0, 6), 2),
    lambda lib, f: f.fold(lib.ones(1, 8, 20), (5, 6), 0),
    lambda lib, f: f.fold(lib.ones(1, 8, 20), (5, 6), 2, stride=0),
    lambda lib, f: f.fold(lib.ones(1, 8, 20), (5, 6), 2, dilation=0),
    lambda lib, f: f.fold(lib.ones(1, 8, 20), (5, 6), 2, padding=-1),
    lambda lib, f: f.fold(lib.ones(1, 8, 20), (5, 6, 7), 2),
    lambda lib, f: f.fold(lib.ones(1, 0, 20), (5, 6), 2),
    lambda lib, f: f.fold(lib.ones(1, 8, 20, dtype=lib.int64), (5, 6), 2),
])
def test_fold_and_unfold_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))
