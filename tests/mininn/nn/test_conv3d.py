"""Conv3d, ConvTranspose3d, their functional forms and conv_tbc against torch 2.13."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import (
    assert_parity,
    same_error,
    slot_layout,
    state_layout,
    to_numpy,
    tol,
    twin,
)

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]

# in, out, kernel, stride, padding, dilation, groups, bias, padding_mode
CONV3D = [
    (2, 3, 3, 1, 0, 1, 1, True, "zeros"),
    (4, 6, (3, 2, 2), (2, 1, 2), (1, 0, 1), (1, 2, 1), 2, True, "zeros"),
    (2, 4, 3, 1, "same", 2, 1, False, "zeros"),
    (3, 2, (2, 3, 2), 1, "same", 1, 1, True, "reflect"),
    (2, 3, 2, 1, "valid", 1, 1, True, "zeros"),
    (2, 3, 3, 2, 1, 1, 1, True, "replicate"),
    (2, 3, 3, 1, (1, 2, 1), 1, 1, False, "circular"),
    (3, 3, 3, 1, 1, 1, 3, True, "zeros"),  # depthwise
    (3, 6, (2, 3, 3), (1, 2, 1), 0, (2, 1, 1), 3, True, "zeros"),  # depth multiplier 2: grouped GEMM
    (4, 5, 1, 1, 0, 1, 1, True, "zeros"),
]
# in, out, kernel, stride, padding, output_padding, groups, bias, dilation
CONV_T3D = [
    (2, 3, 3, 1, 0, 0, 1, True, 1),
    (4, 6, (3, 2, 2), (2, 3, 1), (1, 0, 1), (1, 2, 0), 2, True, (1, 2, 1)),
    (2, 2, 2, 2, 1, 0, 1, False, 1),
    (3, 3, 3, 2, 1, 1, 3, True, 2),
]


def _tol(dtype):
    """float32 sums of up to a few hundred products (padding folded back in) drift past 1e-5."""
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else {}


def _tdtype(dtype):
    return getattr(torch, np.dtype(dtype).name)


def _input(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _pair(cls_name, args, kwargs, dtype):
    tm = getattr(torch.nn, cls_name)(*args, **kwargs).to(_tdtype(dtype))
    mm = getattr(nn, cls_name)(*args, dtype=np.dtype(dtype).name, **kwargs)
    return tm, twin(tm, mm)


def _conv3d(cfg, dtype):
    cin, cout, k, s, p, d, g, b, mode = cfg
    return _pair("Conv3d", (cin, cout, k), dict(stride=s, padding=p, dilation=d, groups=g, bias=b,
                                                padding_mode=mode), dtype)


def _conv_t3d(cfg, dtype):
    cin, cout, k, s, p, op, g, b, d = cfg
    return _pair("ConvTranspose3d", (cin, cout, k), dict(stride=s, padding=p, output_padding=op, groups=g,
                                                         bias=b, dilation=d), dtype)


# ---- forward and backward ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", CONV3D, ids=str)
def test_conv3d_matches_torch_output_and_all_gradients(cfg, dtype):
    tm, mm = _conv3d(cfg, dtype)
    assert_parity(tm, mm, _input((2, cfg[0], 4, 5, 4), dtype), **_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", CONV_T3D, ids=str)
def test_conv_transpose3d_matches_torch_output_and_all_gradients(cfg, dtype):
    tm, mm = _conv_t3d(cfg, dtype)
    assert_parity(tm, mm, _input((2, cfg[0], 3, 4, 3), dtype), **_tol(dtype))


@pytest.mark.parametrize("make", [lambda dt: _conv3d(CONV3D[1], dt), lambda dt: _conv_t3d(CONV_T3D[1], dt)],
                         ids=["conv", "transposed"])
def test_conv3d_layers_take_unbatched_input_like_torch(make):
    tm, mm = make(np.float64)
    assert_parity(tm, mm, _input((4, 4, 5, 4), np.float64))


def test_conv3d_layers_behave_the_same_in_eval_mode():
    tm, mm = _conv3d(CONV3D[1], np.float32)
    assert_parity(tm, mm, _input((2, 4, 5, 6, 7), np.float32), training=False, **_tol(np.float32))


def test_conv_transpose3d_output_size_argument_picks_output_padding_like_torch():
    tm, mm = _conv_t3d((3, 2, 3, 2, 1, 0, 1, True, 1), np.float64)
    x = _input((1, 3, 3, 4, 2), np.float64)
    ty = tm(torch.tensor(x), output_size=[6, 8, 4])
    my = mm(mininn.tensor(x), output_size=[1, 2, 6, 8, 4])
    assert tuple(my.shape) == tuple(ty.shape) == (1, 2, 6, 8, 4)
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-10, atol=1e-12)
    same_error(lambda: tm(torch.tensor(x), output_size=[12, 8, 4]),
               lambda: mm(mininn.tensor(x), output_size=[12, 8, 4]))
    same_error(lambda: tm(torch.tensor(x), output_size=[8]), lambda: mm(mininn.tensor(x), output_size=[8]))


def test_functional_conv3d_with_scalar_lists_and_no_bias_matches_torch():
    x, w = _input((2, 4, 5, 5, 6), np.float64), _input((6, 2, 3, 2, 3), np.float64, 1)
    ty = TF.conv3d(torch.tensor(x), torch.tensor(w), None, [2], [1], [1], 2)
    my = F.conv3d(mininn.tensor(x), mininn.tensor(w), None, [2], [1], [1], 2)
    np.testing.assert_allclose(my.numpy(), ty.numpy(), rtol=1e-10, atol=1e-12)


def test_depthwise_conv3d_takes_the_per_tap_kernel():
    x = mininn.randn(1, 4, 4, 5, 5, requires_grad=True)
    assert nn.Conv3d(4, 4, 3, groups=4)(x).grad_fn.name() == "_DepthwiseConv3dBackward0"
    assert nn.Conv3d(4, 8, 3)(x).grad_fn.name() == "_Conv3dBackward0"


# ---- columns gathered in slabs of one image's output rows ----------------------------------------

LAYOUTS = ["channels_first", "channels_last"]


def _slabs(monkeypatch, block_bytes, layout):
    """Force slabs of ``block_bytes`` columns in the given layout."""
    from mininn.nn.functional import _conv_slabs, conv

    monkeypatch.setattr(conv, "_BLOCK_COLS", 1)
    monkeypatch.setattr(conv, "_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(_conv_slabs, "_channels_last", lambda c, o, kw: layout == "channels_last")


# input shape, weight shape, stride, padding, dilation
SLABS = [
    ((3, 3, 6, 7, 5), (4, 3, 3, 3, 3), 1, 1, 1),
    ((2, 3, 7, 6, 6), (5, 3, 2, 3, 2), (2, 1, 2), (1, 0, 1), (1, 2, 1)),
    ((3, 3, 9, 10), (4, 3, 3, 3), 2, 1, 1),
    ((2, 3, 9, 10), (4, 3, 3, 2), 1, "same", (2, 1)),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("block_bytes", [1, 3 * 27 * 2 * 7 * 4], ids=["one-row", "a-few-rows"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", SLABS, ids=str)
def test_conv_under_no_grad_in_slabs_of_rows_matches_torch(cfg, dtype, block_bytes, layout, monkeypatch):
    x_shape, w_shape, stride, padding, dilation = cfg
    x, w, b = _input(x_shape, dtype), _input(w_shape, dtype, 1), _input(w_shape[:1], dtype, 2)
    fn = "conv3d" if len(x_shape) == 5 else "conv2d"
    want = getattr(TF, fn)(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, padding, dilation)
    _slabs(monkeypatch, block_bytes, layout)
    with mininn.no_grad():
        got = getattr(F, fn)(mininn.tensor(x), mininn.tensor(w), mininn.tensor(b), stride, padding, dilation)
    np.testing.assert_allclose(got.numpy(), want.numpy(), **tol(dtype))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("frozen", ["nothing", "weights", "input"])
@pytest.mark.parametrize("cfg", [CONV3D[0], CONV3D[1], CONV3D[3], CONV3D[6]], ids=str)
def test_conv3d_gradients_in_slabs_of_rows_match_torch(cfg, frozen, layout, monkeypatch):
    _slabs(monkeypatch, 300 * 8, layout)  # a row or two per slab
    tm, mm = _conv3d(cfg, np.float64)
    x = _input((2, cfg[0], 4, 5, 4), np.float64)
    if frozen == "input":
        tm(torch.tensor(x)).square().sum().backward()
        (mm(mininn.tensor(x)) ** 2).sum().backward()
        for name, p in tm.named_parameters():
            np.testing.assert_allclose(mm.get_parameter(name).grad.numpy(), p.grad.numpy(), rtol=1e-10)
        return
    if frozen == "weights":
        tm.requires_grad_(False)
        mm.requires_grad_(False)
        tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
        tm(tx).square().sum().backward()
        (mm(mx) ** 2).sum().backward()
        np.testing.assert_allclose(mx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
        return
    assert_parity(tm, mm, x)
    assert mm(mininn.tensor(x, requires_grad=True)).grad_fn.name() == "_Conv3dBackward0"


@pytest.mark.parametrize("cfg", [(3, 4, 3, 2, 1, 1, 1, True, "zeros"),
                                 (2, 3, (3, 2), 1, "same", (2, 1), 1, True, "reflect")], ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_conv2d_gradients_in_slabs_of_rows_match_torch(cfg, layout, monkeypatch):
    _slabs(monkeypatch, 200 * 8, layout)
    cin, cout, k, s, p, d, g, b, mode = cfg
    kw = dict(stride=s, padding=p, dilation=d, groups=g, bias=b, padding_mode=mode)
    tm, mm = _pair("Conv2d", (cin, cout, k), kw, np.float64)
    assert_parity(tm, mm, _input((2, cin, 7, 6), np.float64))


def test_conv3d_under_no_grad_matches_torch_with_default_blocking():
    x, w = _input((3, 2, 4, 5, 6), np.float32), _input((3, 2, 2, 2, 2), np.float32, 1)
    want = TF.conv3d(torch.tensor(x), torch.tensor(w), None, 1, 1)
    with mininn.no_grad():
        got = F.conv3d(mininn.tensor(x), mininn.tensor(w), None, 1, 1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), **tol(np.float32))


# ---- conv_tbc -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc_matches_torch_output_and_gradients(pad, dtype):
    arrays = [_input((6, 2, 3), dtype), _input((3, 3, 4), dtype, 1), _input((4,), dtype, 2)]
    t_args = [torch.tensor(a, requires_grad=True) for a in arrays]
    m_args = [mininn.tensor(a, requires_grad=True) for a in arrays]
    ty, my = TF.conv_tbc(*t_args, pad), F.conv_tbc(*m_args, pad)
    cot = _input(tuple(ty.shape), dtype, 3)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), **tol(dtype))
    for m, t in zip(m_args, t_args):
        np.testing.assert_allclose(to_numpy(m.grad), to_numpy(t.grad), **tol(dtype))


@pytest.mark.parametrize("shapes", [
    ((5, 2, 3), (3, 4, 4), (4,)),
    ((5, 2, 3, 1), (3, 3, 4), (4,)),
    ((5, 2, 3), (3, 3, 4), (5,)),
    ((5, 2, 3), (3, 3, 4, 1), (4,)),
    ((5, 2, 3), (3, 3, 4), (4, 1)),
], ids=["channels", "input-rank", "bias-size", "weight-rank", "bias-rank"])
def test_conv_tbc_errors_match_torch(shapes):
    same_error(lambda: TF.conv_tbc(*[torch.ones(s) for s in shapes], 1),
               lambda: F.conv_tbc(*[mininn.ones(s) for s in shapes], 1))


# ---- state, init, repr ------------------------------------------------------------------------

CONSTRUCTIONS = [
    ("Conv3d", (3, 6, 3), {}),
    ("Conv3d", (4, 8, (3, 1, 2)), dict(stride=2, padding=(1, 0, 1), dilation=2, groups=2, bias=False)),
    ("Conv3d", (3, 8, 3), dict(padding="same", padding_mode="reflect")),
    ("Conv3d", (3, 8, 3), dict(padding="valid")),
    ("ConvTranspose3d", (3, 2, 3), dict(stride=2, output_padding=1)),
    ("ConvTranspose3d", (4, 6, (3, 2, 1)), dict(groups=2, dilation=2, bias=False, padding=1)),
]


@pytest.mark.parametrize("cls_name,args,kwargs", CONSTRUCTIONS, ids=str)
def test_conv3d_repr_state_dict_and_slots_match_torch(cls_name, args, kwargs):
    tm = getattr(torch.nn, cls_name)(*args, **kwargs)
    mm = getattr(nn, cls_name)(*args, **kwargs)
    assert repr(mm) == repr(tm)
    assert state_layout(mm) == state_layout(tm)
    assert slot_layout(mm) == slot_layout(tm)
    for attr in ("kernel_size", "stride", "padding", "dilation", "output_padding", "groups", "padding_mode",
                 "_reversed_padding_repeated_twice"):
        assert getattr(mm, attr) == getattr(tm, attr), attr


@pytest.mark.parametrize("cls_name,args,fan_in", [("Conv3d", (8, 32, 3), 8 * 27),
                                                   ("ConvTranspose3d", (8, 16, 3), 16 * 27)])
def test_conv3d_default_init_is_uniform_within_one_over_sqrt_fan_in(cls_name, args, fan_in):
    mininn.manual_seed(0)
    m = getattr(nn, cls_name)(*args)
    w, b = m.weight.numpy(force=True), m.bias.numpy(force=True)
    bound = 1 / math.sqrt(fan_in)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert w.var() == pytest.approx(bound**2 / 3, rel=0.05)
    assert abs(w.mean()) < 0.05 * bound


# ---- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("args,kwargs", [
    ((3, 6, 3), dict(groups=2)),
    ((4, 6, 3), dict(padding="same", stride=2)),
    ((4, 6, 3), dict(padding_mode="foo")),
], ids=str)
def test_conv3d_constructor_errors_match_torch(args, kwargs):
    same_error(lambda: torch.nn.Conv3d(*args, **kwargs), lambda: nn.Conv3d(*args, **kwargs))
    same_error(lambda: torch.nn.ConvTranspose3d(3, 2, 3, padding_mode="reflect"),
               lambda: nn.ConvTranspose3d(3, 2, 3, padding_mode="reflect"))


@pytest.mark.parametrize("call", [
    lambda lib, f: f.conv3d(lib.ones(1, 3, 5, 5), lib.ones(6, 3, 3, 3, 3)),
    lambda lib, f: f.conv3d(lib.ones(1, 3, 2, 5, 5), lib.ones(6, 3, 3, 3, 3)),
    lambda lib, f: f.conv3d(lib.ones(1, 4, 5, 5, 5), lib.ones(6, 3, 3, 3, 3)),
    lambda lib, f: f.conv3d(lib.ones(1, 3, 5, 5, 5), lib.ones(6, 3, 3, 3, 3), padding=(1, 2)),
    lambda lib, f: f.conv3d(lib.ones(3, 5, 5), lib.ones(6, 3, 3, 3, 3)),
    lambda lib, f: f.conv3d(lib.ones(1, 3, 5, 5, 5), lib.ones(6, 3, 3, 3, 3), stride=2, padding="same"),
    lambda lib, f: f.conv3d(lib.ones(1, 3, 5, 5, 5), lib.ones(6, 3, 3, 3, 3, dtype=lib.float64)),
    lambda lib, f: f.conv_transpose3d(lib.ones(1, 3, 5, 5, 5), lib.ones(3, 2, 3, 3, 3), stride=2,
                                      output_padding=2),
    lambda lib, f: f.conv_transpose3d(lib.ones(1, 3, 5, 5, 5), lib.ones(3, 2, 3, 3, 3), stride=(2, 2, 1),
                                      output_padding=1),
    lambda lib, f: f.conv_transpose3d(lib.ones(1, 4, 5, 5, 5), lib.ones(3, 2, 3, 3, 3)),
], ids=["rank", "too-small", "channels", "padding-len", "unbatched-channels", "same-strided", "dtype",
        "t-output-padding", "t-output-padding-one-dim", "t-channels"])
def test_functional_conv3d_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))
