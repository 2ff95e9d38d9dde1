"""Max, average and adaptive average pooling (1-D and 2-D) against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import assert_parity, same_error, to_numpy

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]

# kernel, stride, padding, dilation, ceil_mode
MAX2D = [
    (2, None, 0, 1, False),
    (3, 2, 1, 1, True),
    ((3, 2), (1, 2), (1, 1), (2, 1), True),
    (3, 3, 1, 1, True),
    (2, 1, 0, 2, False),
    (3, 2, 0, 1, True),
]
MAX1D = [(2, None, 0, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False), (4, 3, 2, 1, True)]
# kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
AVG2D = [
    (2, None, 0, False, True, None),
    (3, 2, 1, True, True, None),
    (3, 2, 1, True, False, None),
    ((3, 2), (2, 3), (1, 1), True, False, None),
    (3, 1, 1, False, True, 4),
    (2, 3, 1, True, False, None),
]
AVG1D = [(2, None, 0, False, True), (3, 2, 1, True, False), (3, 2, 1, True, True), (4, 1, 2, False, False)]
ADAPTIVE2D = [(1, 1), (3, 5), (None, 2), 4, (9, 10), (7, 1)]
ADAPTIVE1D = [1, 3, 7, 10]


def _x(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (3, 8, 9)])
@pytest.mark.parametrize("cfg", MAX2D, ids=str)
def test_max_pool2d_matches_torch_values_and_gradients(cfg, shape, dtype):
    k, s, p, d, ceil = cfg
    kw = dict(stride=s, padding=p, dilation=d, ceil_mode=ceil)
    assert_parity(torch.nn.MaxPool2d(k, **kw), nn.MaxPool2d(k, **kw), _x(shape, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", MAX1D, ids=str)
def test_max_pool1d_matches_torch_values_and_gradients(cfg, dtype):
    k, s, p, d, ceil = cfg
    kw = dict(stride=s, padding=p, dilation=d, ceil_mode=ceil)
    assert_parity(torch.nn.MaxPool1d(k, **kw), nn.MaxPool1d(k, **kw), _x((2, 3, 11), dtype))


@pytest.mark.parametrize("cfg", MAX2D, ids=str)
def test_max_pool2d_return_indices_match_torch(cfg):
    k, s, p, d, ceil = cfg
    x = _x((2, 3, 7, 8), np.float64)
    t_out, t_idx = TF.max_pool2d(torch.tensor(x), k, s, p, d, ceil, return_indices=True)
    m_out, m_idx = F.max_pool2d(mininn.tensor(x), k, s, p, d, ceil, return_indices=True)
    assert m_idx.dtype == mininn.int64
    np.testing.assert_array_equal(m_idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


def test_max_pool1d_module_with_return_indices_returns_a_pair_like_torch():
    x = _x((2, 3, 9), np.float64)
    t_out, t_idx = torch.nn.MaxPool1d(3, 2, 1, return_indices=True)(torch.tensor(x))
    m_out, m_idx = nn.MaxPool1d(3, 2, 1, return_indices=True)(mininn.tensor(x))
    np.testing.assert_array_equal(m_idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


def test_max_pool_gradient_goes_to_the_first_of_tied_maxima_like_torch():
    x = np.ones((1, 1, 4, 4))
    x[0, 0, 3, 3] = np.nan
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    TF.max_pool2d(tx, 3, 1).sum().backward()
    out = F.max_pool2d(mx, 3, 1)
    out.sum().backward()
    np.testing.assert_array_equal(np.isnan(to_numpy(out)), [[[[False, False], [False, True]]]])
    np.testing.assert_array_equal(mx.grad.numpy(), tx.grad.numpy())


def test_max_pool2d_of_an_integer_tensor_matches_torch():
    x = np.random.default_rng(0).integers(-50, 50, (2, 3, 6, 7))
    np.testing.assert_array_equal(F.max_pool2d(mininn.tensor(x), 3, 2, 1).numpy(),
                                  TF.max_pool2d(torch.tensor(x), 3, 2, 1).numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (3, 8, 9)])
@pytest.mark.parametrize("cfg", AVG2D, ids=str)
def test_avg_pool2d_matches_torch_values_and_gradients(cfg, shape, dtype):
    k, s, p, ceil, include, div = cfg
    kw = dict(stride=s, padding=p, ceil_mode=ceil, count_include_pad=include, divisor_override=div)
    assert_parity(torch.nn.AvgPool2d(k, **kw), nn.AvgPool2d(k, **kw), _x(shape, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", AVG1D, ids=str)
def test_avg_pool1d_matches_torch_values_and_gradients(cfg, dtype):
    k, s, p, ceil, include = cfg
    kw = dict(stride=s, padding=p, ceil_mode=ceil, count_include_pad=include)
    assert_parity(torch.nn.AvgPool1d(k, **kw), nn.AvgPool1d(k, **kw), _x((2, 3, 11), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", ADAPTIVE2D, ids=str)
def test_adaptive_avg_pool2d_matches_torch_values_and_gradients(size, dtype):
    assert_parity(torch.nn.AdaptiveAvgPool2d(size), nn.AdaptiveAvgPool2d(size), _x((2, 3, 7, 8), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", ADAPTIVE1D, ids=str)
def test_adaptive_avg_pool1d_matches_torch_values_and_gradients(size, dtype):
    assert_parity(torch.nn.AdaptiveAvgPool1d(size), nn.AdaptiveAvgPool1d(size), _x((2, 3, 7), dtype))


def test_adaptive_avg_pool2d_of_an_unbatched_input_matches_torch():
    assert_parity(torch.nn.AdaptiveAvgPool2d(2), nn.AdaptiveAvgPool2d(2), _x((3, 5, 5), np.float64))


def test_pooling_keeps_float32_and_records_no_graph_under_no_grad():
    x = mininn.randn(1, 2, 6, 6, requires_grad=True)
    with mininn.no_grad():
        outs = [F.max_pool2d(x, 2), F.avg_pool2d(x, 2), F.adaptive_avg_pool2d(x, 1)]
    assert all(o.dtype == mininn.float32 and o.grad_fn is None for o in outs)


@pytest.mark.parametrize("make", [
    lambda m: m.MaxPool2d(2),
    lambda m: m.MaxPool2d((2, 3), stride=1, padding=1, dilation=2, ceil_mode=True, return_indices=True),
    lambda m: m.MaxPool1d(3),
    lambda m: m.AvgPool2d(2),
    lambda m: m.AvgPool2d(3, 1, 1, ceil_mode=True, count_include_pad=False, divisor_override=2),
    lambda m: m.AvgPool1d(3),
    lambda m: m.AdaptiveAvgPool2d((1, 1)),
    lambda m: m.AdaptiveAvgPool2d(1),
    lambda m: m.AdaptiveAvgPool2d((None, 3)),
    lambda m: m.AdaptiveAvgPool1d(4),
])
def test_pooling_reprs_and_empty_state_dicts_match_torch(make):
    t, m = make(torch.nn), make(nn)
    assert repr(m) == repr(t)
    assert list(m.state_dict()) == list(t.state_dict()) == []


X4 = (1, 3, 5, 5)


@pytest.mark.parametrize("call", [
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 3, padding=2),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 3, padding=2, dilation=2),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 0),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 0, stride=1),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 2, stride=-1),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 2, padding=-1),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 2, dilation=0),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), (3, 1), padding=(0, 1)),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), (2, 2, 2)),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 2, stride=(1, 2, 3)),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 2, padding=(1, 2, 3)),
    lambda lib, f: f.max_pool2d(lib.ones(*X4), 2, dilation=(1, 2, 3)),
    lambda lib, f: f.max_pool2d(lib.ones(1, 3, 2, 2), 3),
    lambda lib, f: f.max_pool2d(lib.ones(3, 5), 2),
    lambda lib, f: f.max_pool1d(lib.ones(3), 2),
    lambda lib, f: f.max_pool1d(lib.ones(1, 3, 2), 3),
    lambda lib, f: f.max_pool1d(lib.ones(1, 3, 5), 3, padding=2),
    lambda lib, f: f.max_pool1d(lib.ones(1, 3, 5), 0),
    lambda lib, f: f.max_pool1d(lib.ones(1, 3, 5), 2, stride=0),
    lambda lib, f: f.max_pool1d(lib.ones(1, 3, 5), 2, dilation=0),
    lambda lib, f: f.max_pool1d(lib.ones(1, 3, 5), (2, 2)),
    lambda lib, f: f.avg_pool2d(lib.ones(*X4), 3, padding=2),
    lambda lib, f: f.avg_pool2d(lib.ones(1, 3, 2, 2), 3),
    lambda lib, f: f.avg_pool2d(lib.ones(*X4), 0),
    lambda lib, f: f.avg_pool2d(lib.ones(*X4), 0, stride=1),
    lambda lib, f: f.avg_pool2d(lib.ones(*X4), 2, padding=-1),
    lambda lib, f: f.avg_pool2d(lib.ones(*X4), 2, divisor_override=0),
    lambda lib, f: f.avg_pool2d(lib.ones(*X4), (2, 2, 2)),
    lambda lib, f: f.avg_pool1d(lib.ones(1, 3, 5), 3, padding=2),
    lambda lib, f: f.avg_pool1d(lib.ones(3), 3),
    lambda lib, f: f.avg_pool1d(lib.ones(1, 3, 5), (2, 2)),
    lambda lib, f: f.adaptive_avg_pool2d(lib.ones(3, 4), 2),
    lambda lib, f: f.adaptive_avg_pool2d(lib.ones(*X4), (2, 3, 4)),
    lambda lib, f: f.adaptive_avg_pool2d(lib.ones(*X4), -1),
    lambda lib, f: f.adaptive_avg_pool2d(lib.ones(*X4, dtype=lib.int64), 2),
    lambda lib, f: f.adaptive_avg_pool1d(lib.ones(3), 2),
])
def test_pooling_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))


def test_max_pool_inference_path_propagates_nan_and_matches_torch():
    x = _x((2, 3, 7, 8), np.float32)
    x[0, 1, 2, 3] = np.nan
    with mininn.no_grad():
        ours = F.max_pool2d(mininn.tensor(x), 3, 2, 1, ceil_mode=True)
    theirs = TF.max_pool2d(torch.tensor(x), 3, 2, 1, ceil_mode=True)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.grad_fn is None


INFERENCE_MAX2D = MAX2D + [(1, 1, 0, 1, False), (3, 1, 1, 3, False), ((1, 4), (1, 3), (0, 2), 1, True)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (3, 8, 9)])
@pytest.mark.parametrize("cfg", INFERENCE_MAX2D, ids=str)
def test_max_pool2d_under_no_grad_matches_torch_exactly_nan_included(cfg, shape, dtype):
    k, s, p, d, ceil = cfg
    x = _x(shape, dtype)
    x[..., 1, 2] = np.nan
    with mininn.no_grad():
        ours = F.max_pool2d(mininn.tensor(x), k, s, p, d, ceil)
    theirs = TF.max_pool2d(torch.tensor(x), k, s, p, d, ceil)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.dtype.name == np.dtype(dtype).name


@pytest.mark.parametrize("cfg", MAX1D, ids=str)
def test_max_pool1d_under_no_grad_matches_torch_exactly(cfg):
    k, s, p, d, ceil = cfg
    x = _x((2, 3, 11), np.float32)
    with mininn.no_grad():
        ours = F.max_pool1d(mininn.tensor(x), k, s, p, d, ceil)
    np.testing.assert_array_equal(ours.numpy(), TF.max_pool1d(torch.tensor(x), k, s, p, d, ceil).numpy())


def test_identity_max_pool_under_no_grad_returns_a_copy_not_the_input():
    x = mininn.tensor(_x((1, 2, 3, 4), np.float32))
    with mininn.no_grad():
        out = F.max_pool2d(x, 1)
    x.zero_()
    assert out.abs().sum().item() > 0


@pytest.mark.parametrize("make", [
    lambda m: m.MaxPool2d(3, 2, 1, ceil_mode=True), lambda m: m.AvgPool2d(3, 2, 1, ceil_mode=True),
    lambda m: m.AdaptiveAvgPool2d((3, 5)), lambda m: m.MaxPool1d(3, 2), lambda m: m.AvgPool1d(3, 2),
])
def test_pooling_layers_behave_the_same_in_eval_mode(make):
    shape = (2, 3, 7, 8) if "2d" in type(make(nn)).__name__ else (2, 3, 11)
    assert_parity(make(torch.nn), make(nn), _x(shape, np.float32), training=False)
