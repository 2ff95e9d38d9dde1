"""3-D pooling, max pooling with indices, adaptive max, max unpooling, LP and fractional max pooling
against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import assert_parity, same_error, state_layout, to_numpy, tol

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]


def _x(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _grads(t_fn, m_fn, arrays, dtype, seed=1):
    """Run both functions on the same float arrays; compare outputs and the gradient of every array."""
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    m_in = [mininn.tensor(a, requires_grad=True) for a in arrays]
    ty, my = t_fn(*t_in), m_fn(*m_in)
    cot = _x(tuple(ty.shape), dtype, seed)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), **tol(dtype))
    for m, t in zip(m_in, t_in):
        np.testing.assert_allclose(to_numpy(m.grad), to_numpy(t.grad), **tol(dtype))


# ---- max and average pooling in 3-D ------------------------------------------------------------

# kernel, stride, padding, dilation, ceil_mode
MAX3D = [
    (2, None, 0, 1, False),
    (3, 2, 1, 1, True),
    ((3, 2, 2), (1, 2, 1), (1, 1, 0), (2, 1, 1), True),
    (2, 1, 0, 2, False),
]
# kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
AVG3D = [
    (2, None, 0, False, True, None),
    (3, 2, 1, True, True, None),
    ((3, 2, 2), (2, 1, 2), (1, 1, 0), True, False, None),
    (2, 1, 1, False, True, 3),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 2, 5, 6, 7), (3, 6, 5, 5)])
@pytest.mark.parametrize("cfg", MAX3D, ids=str)
def test_max_pool3d_matches_torch_values_and_gradients(cfg, shape, dtype):
    k, s, p, d, ceil = cfg
    kw = dict(stride=s, padding=p, dilation=d, ceil_mode=ceil)
    assert_parity(torch.nn.MaxPool3d(k, **kw), nn.MaxPool3d(k, **kw), _x(shape, dtype))


@pytest.mark.parametrize("cfg", MAX3D, ids=str)
def test_max_pool3d_under_no_grad_and_its_indices_match_torch(cfg):
    k, s, p, d, ceil = cfg
    x = _x((2, 2, 5, 6, 7), np.float32)
    x[0, 1, 2, 3, 4] = np.nan
    t_out, t_idx = TF.max_pool3d(torch.tensor(x), k, s, p, d, ceil, return_indices=True)
    m_out, m_idx = F.max_pool3d(mininn.tensor(x), k, s, p, d, ceil, return_indices=True)
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())
    np.testing.assert_array_equal(m_idx.numpy(), t_idx.numpy())
    with mininn.no_grad():
        np.testing.assert_array_equal(F.max_pool3d(mininn.tensor(x), k, s, p, d, ceil).numpy(), t_out.numpy())


@pytest.mark.parametrize("name,shape", [("max_pool1d_with_indices", (2, 3, 9)),
                                        ("max_pool2d_with_indices", (2, 3, 7, 8)),
                                        ("max_pool3d_with_indices", (3, 5, 6, 4))])
def test_max_pool_with_indices_always_returns_the_indices_like_torch(name, shape):
    x = _x(shape)
    t_out, t_idx = getattr(TF, name)(torch.tensor(x), 3, 2, 1)
    m_out, m_idx = getattr(F, name)(mininn.tensor(x), 3, 2, 1)
    assert m_idx.dtype == mininn.int64
    np.testing.assert_array_equal(m_idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 2, 5, 6, 7), (3, 6, 5, 5)])
@pytest.mark.parametrize("cfg", AVG3D, ids=str)
def test_avg_pool3d_matches_torch_values_and_gradients(cfg, shape, dtype):
    k, s, p, ceil, include, div = cfg
    kw = dict(stride=s, padding=p, ceil_mode=ceil, count_include_pad=include, divisor_override=div)
    assert_parity(torch.nn.AvgPool3d(k, **kw), nn.AvgPool3d(k, **kw), _x(shape, dtype))


# ---- adaptive pooling -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, (2, 3, 4), (None, 2, 5), (5, 6, 7), (3, 1, 2)], ids=str)
def test_adaptive_avg_pool3d_matches_torch_values_and_gradients(size, dtype):
    assert_parity(torch.nn.AdaptiveAvgPool3d(size), nn.AdaptiveAvgPool3d(size), _x((2, 3, 5, 6, 7), dtype))


ADAPTIVE_MAX = [
    ("AdaptiveMaxPool1d", (2, 3, 9), 4),
    ("AdaptiveMaxPool1d", (3, 7), 7),
    ("AdaptiveMaxPool2d", (2, 3, 7, 9), (3, 4)),
    ("AdaptiveMaxPool2d", (3, 7, 9), (None, 5)),
    ("AdaptiveMaxPool2d", (2, 3, 7, 9), 1),
    ("AdaptiveMaxPool3d", (2, 2, 5, 6, 7), (2, 4, 3)),
    ("AdaptiveMaxPool3d", (2, 5, 6, 7), (5, None, 1)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cls_name,shape,size", ADAPTIVE_MAX, ids=str)
def test_adaptive_max_pool_matches_torch_values_gradients_and_indices(cls_name, shape, size, dtype):
    x = _x(shape, dtype)
    assert_parity(getattr(torch.nn, cls_name)(size), getattr(nn, cls_name)(size), x)
    t_out, t_idx = getattr(torch.nn, cls_name)(size, return_indices=True)(torch.tensor(x))
    m_out, m_idx = getattr(nn, cls_name)(size, return_indices=True)(mininn.tensor(x))
    np.testing.assert_array_equal(m_idx.numpy(), t_idx.numpy())
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


def test_adaptive_max_pool_with_indices_functions_return_pairs_like_torch():
    for nd, shape in ((1, (2, 3, 8)), (2, (2, 3, 6, 8)), (3, (2, 2, 4, 6, 5))):
        x = _x(shape)
        t_out, t_idx = getattr(TF, f"adaptive_max_pool{nd}d_with_indices")(torch.tensor(x), 3)
        m_out, m_idx = getattr(F, f"adaptive_max_pool{nd}d_with_indices")(mininn.tensor(x), 3)
        np.testing.assert_array_equal(m_idx.numpy(), t_idx.numpy())
        np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())


def test_adaptive_max_pool_gives_tied_maxima_the_first_index_like_torch():
    x = np.zeros((1, 1, 5, 7))
    _grads(lambda t: TF.adaptive_max_pool2d(t, (3, 3)), lambda m: F.adaptive_max_pool2d(m, (3, 3)), [x],
           np.float64)
    t_idx = TF.adaptive_max_pool2d(torch.tensor(x), (3, 3), True)[1]
    m_idx = F.adaptive_max_pool2d(mininn.tensor(x), (3, 3), True)[1]
    np.testing.assert_array_equal(m_idx.numpy(), t_idx.numpy())


# ---- max unpooling ----------------------------------------------------------------------------

# nd, shape, kernel, stride, padding, output_size
UNPOOL = [
    (1, (2, 3, 9), 2, None, 0, None),
    (1, (2, 3, 10), 3, 2, 1, [10]),
    (1, (3, 9), 3, 3, 0, None),
    (2, (2, 3, 7, 8), 2, None, 0, [1, 3, 7, 8]),
    (2, (2, 3, 7, 8), (3, 2), (2, 1), (1, 0), None),
    (2, (3, 6, 6), 2, 2, 0, None),
    (3, (2, 2, 5, 6, 4), 2, None, 0, (5, 6, 4)),
    (3, (2, 4, 5, 6), (3, 2, 2), (2, 2, 1), (1, 0, 1), (4, 5, 6)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", UNPOOL, ids=str)
def test_max_unpool_inverts_max_pool_like_torch_with_gradients(cfg, dtype):
    nd, shape, k, s, p, output_size = cfg
    t_pool, t_idx = getattr(TF, f"max_pool{nd}d")(torch.tensor(_x(shape, dtype)), k, s, p,
                                                  return_indices=True)
    m_idx = mininn.tensor(t_idx.numpy())
    t_mod = getattr(torch.nn, f"MaxUnpool{nd}d")(k, s, p)
    m_mod = getattr(nn, f"MaxUnpool{nd}d")(k, s, p)
    assert repr(m_mod) == repr(t_mod)
    _grads(lambda t: t_mod(t, t_idx, output_size), lambda m: m_mod(m, m_idx, output_size),
           [t_pool.detach().numpy()], dtype)


# ---- LP pooling --------------------------------------------------------------------------------

LP = [
    ("LPPool1d", 2, 3, None, False, (2, 3, 10)),
    ("LPPool1d", 1.5, 2, 1, True, (3, 9)),
    ("LPPool2d", 2, 2, None, False, (2, 3, 6, 7)),
    ("LPPool2d", 3, (3, 2), (2, 1), True, (3, 7, 6)),
    ("LPPool3d", 2, 2, None, False, (2, 2, 4, 5, 6)),
    ("LPPool3d", 1.5, (2, 3, 2), 1, True, (2, 5, 4, 4)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cls_name,p,k,s,ceil,shape", LP, ids=str)
def test_lp_pool_matches_torch_values_and_gradients(cls_name, p, k, s, ceil, shape, dtype):
    x = np.abs(_x(shape, dtype)) + 0.1  # a fractional power of a negative number is NaN in both
    assert_parity(getattr(torch.nn, cls_name)(p, k, s, ceil), getattr(nn, cls_name)(p, k, s, ceil), x,
                  rtol=1e-4 if dtype == np.float32 else None)


# ---- fractional max pooling ------------------------------------------------------------------------

# nd, input shape, kernel, output_size, output_ratio
FRACTIONAL = [
    (2, (2, 3, 9, 11), 2, (4, 5), None),
    (2, (2, 3, 9, 11), (3, 2), None, (0.5, 0.7)),
    (2, (3, 10, 10), 3, 4, None),
    (2, (2, 3, 9, 11), 2, (8, 10), None),
    (3, (2, 2, 7, 9, 8), 2, (3, 4, 5), None),
    (3, (3, 7, 9, 8), (3, 2, 2), None, 0.6),
]


def _samples(nd, shape, dtype, seed=3):
    batch = shape[0] if len(shape) == nd + 2 else 1
    return np.random.default_rng(seed).random((batch, shape[-nd - 1], nd)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", FRACTIONAL, ids=str)
def test_fractional_max_pool_with_given_samples_matches_torch_exactly(cfg, dtype):
    nd, shape, k, size, ratio = cfg
    x, u = _x(shape, dtype), _samples(nd, shape, dtype)
    t_mod = getattr(torch.nn, f"FractionalMaxPool{nd}d")(k, size, ratio, True, torch.tensor(u))
    m_mod = getattr(nn, f"FractionalMaxPool{nd}d")(k, size, ratio, True, mininn.tensor(u))
    (t_out, t_idx), (m_out, m_idx) = t_mod(torch.tensor(x)), m_mod(mininn.tensor(x))
    np.testing.assert_array_equal(m_out.numpy(), t_out.numpy())
    np.testing.assert_array_equal(m_idx.numpy(), t_idx.numpy())
    fn = f"fractional_max_pool{nd}d"
    _grads(lambda t: getattr(TF, fn)(t, k, size, ratio, _random_samples=torch.tensor(u)),
           lambda m: getattr(F, fn)(m, k, size, ratio, _random_samples=mininn.tensor(u)), [x], dtype)


def test_fractional_max_pool_without_samples_draws_windows_that_pick_window_maxima():
    x = mininn.tensor(_x((2, 3, 12, 10)))
    mininn.manual_seed(0)
    out, idx = F.fractional_max_pool2d(x, 2, output_ratio=0.5, return_indices=True)
    assert tuple(out.shape) == (2, 3, 6, 5)
    planes = x.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(planes, idx.numpy().reshape(2, 3, -1), 2).ravel(),
                                  out.numpy().ravel())
    rows, cols = np.divmod(idx.numpy(), 10)
    assert (np.diff(rows, axis=2) > 0).all() and (np.diff(cols, axis=3) > 0).all()


def test_fractional_max_pool_keeps_given_samples_as_a_buffer_like_torch():
    u = _samples(2, (1, 3, 8, 8), np.float32)
    t_mod = torch.nn.FractionalMaxPool2d(2, output_size=3, _random_samples=torch.tensor(u))
    m_mod = nn.FractionalMaxPool2d(2, output_size=3, _random_samples=mininn.tensor(u))
    assert state_layout(m_mod) == state_layout(t_mod) == [("_random_samples", (1, 3, 2), "float32")]
    assert state_layout(nn.FractionalMaxPool2d(2, output_size=3)) == []


# ---- reprs, attributes, state --------------------------------------------------------------------

MODULES = [
    lambda m: m.MaxPool3d(3),
    lambda m: m.MaxPool3d((3, 2, 1), 2, 1, 2, True, True),
    lambda m: m.AvgPool3d(3),
    lambda m: m.AvgPool3d((3, 2, 2), (1, 2, 1), 1, True, False, 3),
    lambda m: m.AdaptiveAvgPool3d((2, None, 3)),
    lambda m: m.AdaptiveMaxPool1d(3),
    lambda m: m.AdaptiveMaxPool2d((2, None), True),
    lambda m: m.AdaptiveMaxPool3d(2),
    lambda m: m.MaxUnpool1d(2),
    lambda m: m.MaxUnpool2d((2, 3), 1, 1),
    lambda m: m.MaxUnpool3d(2),
    lambda m: m.LPPool1d(2, 3),
    lambda m: m.LPPool2d(1.5, (2, 3), 1, True),
    lambda m: m.LPPool3d(2, 2),
    lambda m: m.FractionalMaxPool2d(2, output_size=3),
    lambda m: m.FractionalMaxPool2d((2, 3), output_ratio=(0.5, 0.7), return_indices=True),
    lambda m: m.FractionalMaxPool3d(2, output_ratio=0.5),
]
ATTRIBUTES = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices",
              "count_include_pad", "divisor_override", "output_size", "output_ratio", "norm_type")


@pytest.mark.parametrize("make", MODULES)
def test_pooling_module_reprs_attributes_and_empty_state_dicts_match_torch(make):
    t, m = make(torch.nn), make(nn)
    assert repr(m) == repr(t)
    assert list(m.state_dict()) == list(t.state_dict()) == []
    for attr in ATTRIBUTES:
        assert getattr(m, attr, "absent") == getattr(t, attr, "absent"), attr


@pytest.mark.parametrize("make", [
    lambda m: m.MaxPool3d(3, 2, 1), lambda m: m.AvgPool3d(3, 2, 1, ceil_mode=True),
    lambda m: m.AdaptiveMaxPool3d((2, 3, 2)), lambda m: m.AdaptiveAvgPool3d(2), lambda m: m.LPPool3d(2, 2),
])
def test_3d_pooling_layers_behave_the_same_in_eval_mode(make):
    assert_parity(make(torch.nn), make(nn), np.abs(_x((2, 2, 5, 6, 7), np.float32)), training=False)


def test_new_pooling_keeps_float32_and_records_no_graph_under_no_grad():
    x = mininn.randn(1, 2, 6, 6, 6, requires_grad=True)
    with mininn.no_grad():
        outs = [F.max_pool3d(x, 2), F.avg_pool3d(x, 2), F.adaptive_avg_pool3d(x, 2),
                F.adaptive_max_pool3d(x, 2), F.lp_pool3d(x, 2, 2), F.fractional_max_pool3d(x, 2, 3)]
    assert all(o.dtype == mininn.float32 and o.grad_fn is None for o in outs)


# ---- errors -----------------------------------------------------------------------------------

X5 = (1, 3, 5, 5, 5)
I4 = (1, 3, 2, 2)


def _long(lib, *shape, scale=1):
    return lib.ones(*shape, dtype=lib.int64) * scale


@pytest.mark.parametrize("call", [
    lambda lib, f: f.max_pool3d(lib.ones(1, 3, 2, 5, 5), 3),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), 3, padding=2),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), 3, 1, 2, 2),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), (3, 3)),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), 2, stride=(1, 1)),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), 2, padding=(1, 1)),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), 2, dilation=(1, 1)),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), 3, stride=0),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), 0, 1),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), 2, -1),
    lambda lib, f: f.max_pool3d(lib.ones(*X5), 3, dilation=0),
    lambda lib, f: f.max_pool3d(lib.ones(3, 5, 5), 2),
    lambda lib, f: f.avg_pool3d(lib.ones(1, 3, 2, 5, 5), 3),
    lambda lib, f: f.avg_pool3d(lib.ones(*X5), 3, padding=2),
    lambda lib, f: f.avg_pool3d(lib.ones(*X5), (3, 3)),
    lambda lib, f: f.avg_pool3d(lib.ones(*X5), 2, stride=(1, 1)),
    lambda lib, f: f.avg_pool3d(lib.ones(*X5), 2, padding=(1, 1)),
    lambda lib, f: f.avg_pool3d(lib.ones(*X5), 3, divisor_override=0),
    lambda lib, f: f.avg_pool3d(lib.ones(*X5), 0, 1),
    lambda lib, f: f.avg_pool3d(lib.ones(1, 3, 1, 5, 5), 2, 1, 1),
    lambda lib, f: f.adaptive_avg_pool3d(lib.ones(*X5), (2, 2)),
    lambda lib, f: f.adaptive_avg_pool3d(lib.ones(*X5), -1),
    lambda lib, f: f.adaptive_avg_pool3d(lib.ones(1, 3, 0, 5, 5), 2),
    lambda lib, f: f.adaptive_avg_pool3d(lib.ones(*X5, dtype=lib.int64), 2),
    lambda lib, f: f.adaptive_max_pool3d(lib.ones(1, 5, 5), 2),
    lambda lib, f: f.adaptive_max_pool3d(lib.ones(*X5), (2, 2)),
    lambda lib, f: f.adaptive_max_pool2d(lib.ones(1, 5), 2),
    lambda lib, f: f.adaptive_max_pool2d(lib.ones(1, 3, 5, 5), (2, 2, 2)),
    lambda lib, f: f.adaptive_max_pool2d(lib.ones(1, 3, 5, 5), -1),
    lambda lib, f: f.adaptive_max_pool2d(lib.ones(1, 3, 0, 5), 2),
    lambda lib, f: f.adaptive_max_pool2d(lib.ones(1, 3, 5, 5, dtype=lib.int64), 2),
    lambda lib, f: f.adaptive_max_pool1d(lib.ones(5), 2),
    lambda lib, f: f.adaptive_max_pool1d(lib.ones(1, 3, 5), (2, 2)),
    lambda lib, f: f.adaptive_max_pool1d(lib.ones(1, 3, 5), -1),
    lambda lib, f: f.adaptive_max_pool1d(lib.ones(1, 3, 0), 2),
    lambda lib, f: f.max_unpool2d(lib.ones(*I4), _long(lib, *I4, scale=100), 2),
    lambda lib, f: f.max_unpool2d(lib.ones(*I4), _long(lib, *I4, scale=-1), 2),
    lambda lib, f: f.max_unpool2d(lib.ones(*I4), _long(lib, 1, 3, 2, 3), 2),
    lambda lib, f: f.max_unpool2d(lib.ones(*I4), _long(lib, *I4), 2, output_size=(9, 9)),
    lambda lib, f: f.max_unpool2d(lib.ones(*I4), _long(lib, *I4), 2, output_size=[5, 6]),
    lambda lib, f: f.max_unpool2d(lib.ones(*I4), _long(lib, *I4), 2, output_size=(1, 2, 9, 9, 9)),
    lambda lib, f: f.max_unpool2d(lib.ones(*I4), lib.ones(*I4, dtype=lib.int32), 2),
    lambda lib, f: f.max_unpool2d(lib.ones(*I4), lib.ones(*I4), 2),
    lambda lib, f: f.max_unpool2d(lib.ones(2, 2), _long(lib, 2, 2), 2),
    lambda lib, f: f.max_unpool1d(lib.ones(1, 3, 2), _long(lib, 1, 3, 2, scale=100), 2),
    lambda lib, f: f.max_unpool1d(lib.ones(1, 3, 2), _long(lib, 1, 3, 3), 2),
    lambda lib, f: f.max_unpool3d(lib.ones(1, 3, 2, 2, 2), _long(lib, 1, 3, 2, 2, 2, scale=100), 2),
    lambda lib, f: f.max_unpool3d(lib.ones(3, 2, 2), _long(lib, 3, 2, 2), 2),
    lambda lib, f: f.max_unpool3d(lib.ones(1, 3, 2, 2, 2), _long(lib, 1, 3, 2, 2, 1), 2),
    lambda lib, f: f.fractional_max_pool2d(lib.ones(1, 3, 5, 5), 2),
    lambda lib, f: f.fractional_max_pool2d(lib.ones(1, 3, 5, 5), 2, output_size=(4, 5)),
    lambda lib, f: f.fractional_max_pool2d(lib.ones(1, 3, 5, 5), 2, output_size=(5, 4)),
    lambda lib, f: f.fractional_max_pool2d(lib.ones(1, 3, 5, 5), (2, 2, 2), 3),
    lambda lib, f: f.fractional_max_pool2d(lib.ones(1, 3, 5, 5), 2, 4, _random_samples=lib.ones(1, 3, 3)),
    lambda lib, f: f.fractional_max_pool2d(lib.ones(1, 3, 5, 5), 2, 4, _random_samples=lib.ones(1, 2, 2)),
    lambda lib, f: f.fractional_max_pool2d(lib.ones(3, 5, 5), 2, 3, _random_samples=lib.ones(3, 2)),
    lambda lib, f: f.fractional_max_pool2d(lib.ones(2, 3, 5, 5), 2, 3, _random_samples=lib.ones(1, 3, 2)),
    lambda lib, f: f.fractional_max_pool2d(lib.ones(1, 3, 5, 5), 2, 3,
                                           _random_samples=lib.ones(1, 3, 2, dtype=lib.float64)),
    lambda lib, f: f.fractional_max_pool3d(lib.ones(*X5), 2),
    lambda lib, f: f.fractional_max_pool3d(lib.ones(*X5), 2, output_size=6),
    lambda lib, f: f.fractional_max_pool3d(lib.ones(*X5), 2, output_size=(3, 4, 5)),
    lambda lib, f: f.fractional_max_pool3d(lib.ones(*X5), 2, output_size=(3, 5, 4)),
    lambda lib, f: f.fractional_max_pool3d(lib.ones(*X5), 2, 3, _random_samples=lib.ones(1, 3, 2)),
], ids=lambda c: None)
def test_pooling_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))


@pytest.mark.parametrize("cls_name,kwargs", [
    ("FractionalMaxPool2d", {}),
    ("FractionalMaxPool3d", {}),
    ("FractionalMaxPool2d", dict(output_ratio=1.5)),
    ("FractionalMaxPool2d", dict(output_size=3, output_ratio=0.5)),
], ids=str)
def test_fractional_max_pool_constructor_errors_match_torch(cls_name, kwargs):
    same_error(lambda: getattr(torch.nn, cls_name)(2, **kwargs), lambda: getattr(nn, cls_name)(2, **kwargs))


# ---- signatures -------------------------------------------------------------------------------

NEW_FUNCTIONS = (
    "conv3d conv_transpose3d max_pool3d avg_pool3d max_pool1d_with_indices max_pool2d_with_indices "
    "max_pool3d_with_indices adaptive_avg_pool3d adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d "
    "adaptive_max_pool1d_with_indices adaptive_max_pool2d_with_indices adaptive_max_pool3d_with_indices "
    "max_unpool1d max_unpool2d max_unpool3d lp_pool1d lp_pool2d lp_pool3d fractional_max_pool2d "
    "fractional_max_pool3d fractional_max_pool2d_with_indices fractional_max_pool3d_with_indices"
).split()


def _torch_parameter_names(name):
    """From the signature, or for C builtins and dispatchers from the first line of the docstring."""
    import inspect

    try:
        names = list(inspect.signature(getattr(TF, name)).parameters)
    except (TypeError, ValueError):
        names = ["args", "kwargs"]
    if names != ["args", "kwargs"]:
        return names
    head = getattr(TF, name).__doc__.strip().split("\n")[0]
    inside = head[head.index("(") + 1 : head.index(")")]
    return [part.split("=")[0].strip() for part in inside.split(",")]


@pytest.mark.parametrize("name", NEW_FUNCTIONS)
def test_new_functions_take_torchs_parameter_names_in_torchs_order(name):
    import inspect

    assert name in F.__all__
    assert list(inspect.signature(getattr(F, name)).parameters) == _torch_parameter_names(name)
