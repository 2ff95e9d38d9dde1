"""Conv1d, Conv2d, ConvTranspose1d/2d and their functional forms against torch 2.13."""

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
CONV2D = [
    (3, 6, 3, 1, 0, 1, 1, True, "zeros"),
    (4, 6, (3, 2), (2, 1), (1, 2), (1, 2), 2, True, "zeros"),
    (3, 8, 3, 1, "same", 2, 1, False, "zeros"),
    (4, 4, 4, 1, "same", 1, 4, True, "zeros"),
    (2, 4, 3, 1, "valid", 1, 1, True, "zeros"),
    (4, 8, (3, 5), 1, 1, 2, 2, False, "reflect"),
    (3, 4, 3, 2, 1, 1, 1, True, "replicate"),
    (3, 4, 3, 1, 2, 1, 1, True, "circular"),
    (3, 4, (2, 4), 1, "same", 1, 1, True, "reflect"),
    (6, 6, 1, 1, 0, 1, 1, True, "zeros"),
    (3, 5, 2, 3, 1, 1, 1, True, "zeros"),
    (4, 4, 3, 1, 1, 1, 4, True, "zeros"),  # depthwise
    (6, 6, (3, 2), (2, 1), (1, 0), (2, 1), 6, False, "zeros"),  # depthwise, strided and dilated
    (3, 3, 3, 1, "same", 1, 3, True, "reflect"),  # depthwise
    (3, 6, 3, 1, 1, 1, 3, True, "zeros"),  # depth multiplier 2: the grouped GEMM path
]
CONV1D = [
    (3, 6, 3, 1, 0, 1, 1, True, "zeros"),
    (4, 6, 4, 2, 1, 2, 2, True, "zeros"),
    (3, 4, 4, 1, "same", 3, 1, False, "zeros"),
    (2, 2, 3, 1, "valid", 1, 2, True, "zeros"),
    (3, 4, 3, 1, 2, 1, 1, True, "reflect"),
    (3, 4, 5, 2, 2, 1, 1, True, "replicate"),
    (3, 4, 3, 1, 1, 1, 1, False, "circular"),
    (4, 4, 3, 2, 1, 2, 4, True, "zeros"),  # depthwise
]
# in, out, kernel, stride, padding, output_padding, groups, bias, dilation
CONV_T2D = [
    (3, 4, 3, 1, 0, 0, 1, True, 1),
    (4, 6, (3, 2), (2, 3), (1, 0), (1, 2), 2, True, (1, 2)),
    (2, 3, 4, 2, 1, 0, 1, False, 1),
    (3, 3, 3, 2, 1, 1, 3, True, 2),
]
CONV_T1D = [
    (3, 4, 3, 1, 0, 0, 1, True, 1),
    (4, 6, 3, 2, 1, 1, 2, True, 1),
    (2, 2, 2, 3, 0, 2, 1, False, 2),
]


def _tdtype(dtype):
    return getattr(torch, np.dtype(dtype).name)


def _conv_pair(cls_name, cfg, dtype):
    cin, cout, k, s, p, d, g, b, mode = cfg
    kw = dict(stride=s, padding=p, dilation=d, groups=g, bias=b, padding_mode=mode)
    tm = getattr(torch.nn, cls_name)(cin, cout, k, **kw).to(_tdtype(dtype))
    mm = getattr(nn, cls_name)(cin, cout, k, dtype=np.dtype(dtype).name, **kw)
    return tm, twin(tm, mm)


def _conv_t_pair(cls_name, cfg, dtype):
    cin, cout, k, s, p, op, g, b, d = cfg
    kw = dict(stride=s, padding=p, output_padding=op, groups=g, bias=b, dilation=d)
    tm = getattr(torch.nn, cls_name)(cin, cout, k, **kw).to(_tdtype(dtype))
    mm = getattr(nn, cls_name)(cin, cout, k, dtype=np.dtype(dtype).name, **kw)
    return tm, twin(tm, mm)


def _input(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---- forward and backward ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", CONV2D, ids=str)
def test_conv2d_matches_torch_output_and_all_gradients(cfg, dtype):
    tm, mm = _conv_pair("Conv2d", cfg, dtype)
    assert_parity(tm, mm, _input((2, cfg[0], 9, 10), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", CONV1D, ids=str)
def test_conv1d_matches_torch_output_and_all_gradients(cfg, dtype):
    tm, mm = _conv_pair("Conv1d", cfg, dtype)
    assert_parity(tm, mm, _input((2, cfg[0], 11), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", CONV_T2D, ids=str)
def test_conv_transpose2d_matches_torch_output_and_all_gradients(cfg, dtype):
    tm, mm = _conv_t_pair("ConvTranspose2d", cfg, dtype)
    assert_parity(tm, mm, _input((2, cfg[0], 5, 6), dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", CONV_T1D, ids=str)
def test_conv_transpose1d_matches_torch_output_and_all_gradients(cfg, dtype):
    tm, mm = _conv_t_pair("ConvTranspose1d", cfg, dtype)
    assert_parity(tm, mm, _input((2, cfg[0], 7), dtype))


@pytest.mark.parametrize("cls_name,shape", [("Conv2d", (3, 8, 8)), ("Conv1d", (3, 8))])
def test_unbatched_input_gives_unbatched_output_like_torch(cls_name, shape):
    tm, mm = _conv_pair(cls_name, (3, 4, 3, 1, 1, 1, 1, True, "zeros"), np.float64)
    assert_parity(tm, mm, _input(shape, np.float64))


def test_conv_transpose2d_output_size_argument_picks_output_padding_like_torch():
    tm, mm = _conv_t_pair("ConvTranspose2d", (3, 2, 3, 2, 1, 0, 1, True, 1), np.float64)
    x = _input((1, 3, 4, 5), np.float64)
    ty = tm(torch.tensor(x), output_size=[8, 10])
    my = mm(mininn.tensor(x), output_size=[1, 2, 8, 10])
    assert tuple(my.shape) == tuple(ty.shape) == (1, 2, 8, 10)
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-10, atol=1e-12)
    same_error(lambda: tm(torch.tensor(x), output_size=[12, 10]),
               lambda: mm(mininn.tensor(x), output_size=[12, 10]))
    same_error(lambda: tm(torch.tensor(x), output_size=[8]), lambda: mm(mininn.tensor(x), output_size=[8]))


def test_functional_conv2d_with_scalar_lists_and_no_bias_matches_torch():
    x, w = _input((2, 4, 7, 7), np.float64), _input((6, 2, 3, 3), np.float64, 1)
    ty = TF.conv2d(torch.tensor(x), torch.tensor(w), None, [2], [1], [1], 2)
    my = F.conv2d(mininn.tensor(x), mininn.tensor(w), None, [2], [1], [1], 2)
    np.testing.assert_allclose(my.numpy(), ty.numpy(), rtol=1e-10, atol=1e-12)


def test_conv_keeps_float32_and_records_no_graph_under_no_grad():
    m = nn.Conv2d(3, 4, 3)
    x = mininn.randn(1, 3, 6, 6, requires_grad=True)
    with mininn.no_grad():
        y = m(x)
    assert y.dtype == mininn.float32 and y.grad_fn is None and not y.requires_grad


def test_frozen_conv_backpropagates_only_to_its_input():
    m = nn.Conv2d(2, 3, 3, padding=1).requires_grad_(False)
    x = mininn.randn(1, 2, 5, 5, requires_grad=True)
    m(x).sum().backward()
    assert m.weight.grad is None and m.bias.grad is None and x.grad is not None


def test_first_layer_input_without_grad_still_gives_weight_gradients():
    tm, mm = _conv_pair("Conv2d", (2, 3, 3, 1, 1, 1, 1, True, "zeros"), np.float64)
    x = _input((2, 2, 5, 5), np.float64)
    tm(torch.tensor(x)).square().sum().backward()
    out = mm(mininn.tensor(x))
    (out * out).sum().backward()
    np.testing.assert_allclose(mm.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(mm.bias.grad.numpy(), tm.bias.grad.numpy(), rtol=1e-10)


# ---- inference (no weight gradient): columns built in blocks ------------------------------------

# weight shape, stride, padding, dilation
STREAMED = [
    ((6, 3, 3, 3), 1, 1, 1),
    ((5, 3, 3, 2), 2, (1, 0), (1, 2)),
    ((4, 3, 4, 4), 1, "same", 1),  # even kernel: the odd padding element on the far side
    ((4, 3, 1, 1), 1, 0, 1),  # the input is the column matrix
    ((4, 3, 1, 1), 2, 0, 1),
    ((4, 3, 1, 1), 1, 1, 1),
    ((7, 3, 5, 5), 3, 2, 1),
]


def _blocking(mode, w_shape, out_hw, itemsize):
    """``(_BLOCK_COLS, _BLOCK_BYTES)`` giving one block, or blocks of two images (5 images: 2 + 2 + 1)."""
    cols, k = out_hw[0] * out_hw[1], int(np.prod(w_shape[1:]))
    return {"one_block": (1 << 30, 1 << 40), "side_by_side_in_twos": (cols + 1, 0),
            "batched_in_twos": (1, 2 * k * cols * itemsize)}[mode]


@pytest.mark.parametrize("mode", ["one_block", "side_by_side_in_twos", "batched_in_twos"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", STREAMED, ids=str)
def test_conv2d_under_no_grad_matches_torch_however_the_columns_are_blocked(cfg, dtype, mode, monkeypatch):
    from mininn.nn.functional import conv

    w_shape, stride, padding, dilation = cfg
    x, w, b = _input((5, 3, 9, 10), dtype), _input(w_shape, dtype, 1), _input(w_shape[:1], dtype, 2)
    want = TF.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, padding, dilation)
    block_cols, block_bytes = _blocking(mode, w_shape, tuple(want.shape[2:]), x.itemsize)
    monkeypatch.setattr(conv, "_BLOCK_COLS", block_cols)
    monkeypatch.setattr(conv, "_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(conv, "_SMALL_BYTES", 0)  # these inputs are small: test_small_conv_paths has them
    with mininn.no_grad():
        got = F.conv2d(mininn.tensor(x), mininn.tensor(w), mininn.tensor(b), stride, padding, dilation)
    assert got.dtype.name == np.dtype(dtype).name
    np.testing.assert_allclose(got.numpy(), want.numpy(), **tol(dtype))


def test_frozen_conv_input_gradient_matches_torch():
    tm, mm = _conv_pair("Conv2d", (3, 4, 3, 2, 1, 1, 1, True, "zeros"), np.float64)
    tm.requires_grad_(False)
    mm.requires_grad_(False)
    x = _input((3, 3, 8, 7), np.float64)
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    tm(tx).square().sum().backward()
    out = mm(mx)
    (out * out).sum().backward()
    np.testing.assert_allclose(mx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


# ---- state, init, repr ------------------------------------------------------------------------


CONSTRUCTIONS = [
    ("Conv1d", (3, 6, 5), {}),
    ("Conv2d", (3, 8, 3), dict(stride=2, padding=1)),
    ("Conv2d", (4, 8, (3, 5)), dict(groups=2, bias=False, dilation=2, padding=1, padding_mode="reflect")),
    ("Conv2d", (3, 8, 3), dict(padding="same")),
    ("Conv2d", (3, 8, 3), dict(padding="valid")),
    ("Conv1d", (4, 4, 3), dict(groups=4, padding_mode="circular", padding=1)),
    ("ConvTranspose2d", (3, 2, 3), dict(stride=2, output_padding=1)),
    ("ConvTranspose2d", (4, 6, 3), dict(groups=2, dilation=2, bias=False)),
    ("ConvTranspose1d", (3, 2, 4), dict(stride=3, padding=1)),
]


@pytest.mark.parametrize("cls_name,args,kwargs", CONSTRUCTIONS, ids=str)
def test_conv_repr_state_dict_and_slots_match_torch(cls_name, args, kwargs):
    tm = getattr(torch.nn, cls_name)(*args, **kwargs)
    mm = getattr(nn, cls_name)(*args, **kwargs)
    assert repr(mm) == repr(tm)
    assert state_layout(mm) == state_layout(tm)
    assert slot_layout(mm) == slot_layout(tm)
    for attr in ("kernel_size", "stride", "padding", "dilation", "output_padding", "groups", "padding_mode"):
        assert getattr(mm, attr) == getattr(tm, attr), attr


@pytest.mark.parametrize("cls_name,args,fan_in", [("Conv2d", (16, 32, 3), 16 * 9),
                                                   ("Conv1d", (8, 64, 5), 40),
                                                   ("ConvTranspose2d", (16, 24, 3), 24 * 9)])
def test_conv_default_init_is_uniform_within_one_over_sqrt_fan_in(cls_name, args, fan_in):
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
    ((4, 6, 3), dict(groups=4)),
    ((4, 6, 3), dict(groups=0)),
    ((4, 6, 3), dict(padding="foo")),
    ((4, 6, 3), dict(padding="same", stride=2)),
], ids=str)
def test_conv2d_constructor_errors_match_torch(args, kwargs):
    same_error(lambda: torch.nn.Conv2d(*args, **kwargs), lambda: nn.Conv2d(*args, **kwargs))


def test_conv_bad_padding_mode_names_the_valid_modes_like_torch():
    same_error(lambda: torch.nn.Conv2d(4, 6, 3, padding_mode="foo"),
               lambda: nn.Conv2d(4, 6, 3, padding_mode="foo"))


def test_conv_transpose_rejects_non_zero_padding_modes_like_torch():
    same_error(lambda: torch.nn.ConvTranspose2d(3, 2, 3, padding_mode="reflect"),
               lambda: nn.ConvTranspose2d(3, 2, 3, padding_mode="reflect"))


@pytest.mark.parametrize("make_input", [
    lambda lib: lib.ones(1, 4, 5, 5),
    lambda lib: lib.ones(1, 3, 2, 2),
    lambda lib: lib.ones(3, 4),
    lambda lib: lib.ones(1, 3, 5, 5, dtype=lib.float64),
], ids=["channels", "too-small", "rank", "dtype"])
def test_conv2d_forward_errors_match_torch(make_input):
    tm = torch.nn.Conv2d(3, 8, 3)
    mm = nn.Conv2d(3, 8, 3)
    same_error(lambda: tm(make_input(torch)), lambda: mm(make_input(mininn)))


@pytest.mark.parametrize("call", [
    lambda lib, f: f.conv2d(lib.ones(1, 3, 5, 5), lib.ones(6, 3, 3, 3), stride=0),
    lambda lib, f: f.conv2d(lib.ones(1, 3, 5, 5), lib.ones(6, 3, 3, 3), padding=-1),
    lambda lib, f: f.conv2d(lib.ones(1, 3, 5, 5), lib.ones(6, 3, 3, 3), dilation=0),
    lambda lib, f: f.conv2d(lib.ones(1, 3, 5, 5), lib.ones(6, 3, 3, 3), padding=(1, 2, 3)),
    lambda lib, f: f.conv2d(lib.ones(1, 4, 5, 5), lib.ones(6, 2, 3, 3), groups=3),
    lambda lib, f: f.conv2d(lib.ones(1, 4, 5, 5), lib.ones(6, 2, 3, 3), lib.ones(5), groups=2),
    lambda lib, f: f.conv2d(lib.ones(1, 3, 5, 5), lib.ones(6, 3, 3, 3), stride=2, padding="same"),
    lambda lib, f: f.conv2d(lib.ones(1, 3, 5, 5), lib.ones(6, 3, 3, 3), lib.ones(6, dtype=lib.float64)),
    lambda lib, f: f.conv1d(lib.ones(1, 3, 2), lib.ones(6, 3, 3)),
    lambda lib, f: f.conv1d(lib.ones(1, 3, 5, 5), lib.ones(6, 3, 3)),
    lambda lib, f: f.conv1d(lib.ones(1, 3, 5), lib.ones(6, 3, 3, dtype=lib.float64)),
    lambda lib, f: f.conv_transpose2d(lib.ones(1, 3, 5, 5), lib.ones(3, 2, 3, 3), stride=2, output_padding=2),
    lambda lib, f: f.conv_transpose2d(lib.ones(1, 4, 5, 5), lib.ones(3, 2, 3, 3)),
    lambda lib, f: f.conv_transpose1d(lib.ones(1, 3, 5), lib.ones(3, 2, 3), stride=2, output_padding=3),
], ids=["stride", "padding", "dilation", "padding-len", "groups", "bias", "same-strided", "bias-dtype",
        "1d-small", "1d-rank", "1d-dtype", "t-output-padding", "t-channels", "t1d-output-padding"])
def test_functional_conv_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))


def test_depthwise_convolution_takes_the_per_tap_kernel_and_grouped_ones_the_gemm():
    x = mininn.randn(1, 4, 6, 6, requires_grad=True)
    depthwise = nn.Conv2d(4, 4, 3, groups=4)(x)
    grouped = nn.Conv2d(4, 8, 3, groups=4)(x)
    assert depthwise.grad_fn.name() == "_DepthwiseConv2dBackward0"
    assert grouped.grad_fn.name() == "_Conv2dBackward0"


@pytest.mark.parametrize("cls_name,cfg,shape", [
    ("Conv2d", CONV2D[1], (2, 4, 9, 10)), ("Conv1d", CONV1D[1], (2, 4, 11)),
    ("ConvTranspose2d", CONV_T2D[1], (2, 4, 5, 6)),
], ids=str)
def test_conv_layers_behave_the_same_in_eval_mode(cls_name, cfg, shape):
    pair = _conv_t_pair if "Transpose" in cls_name else _conv_pair
    tm, mm = pair(cls_name, cfg, np.float32)
    assert_parity(tm, mm, _input(shape, np.float32), training=False)
