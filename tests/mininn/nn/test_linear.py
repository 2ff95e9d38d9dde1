"""Linear, Identity and Bilinear against torch 2.13: outputs, gradients, state dicts, init, reprs, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import assert_parity, same_error, state_layout, twin

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,), (0, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch_output_and_gradients(dtype, shape, bias):
    tm = torch.nn.Linear(4, 3, bias=bias).to(getattr(torch, np.dtype(dtype).name))
    mm = twin(tm, nn.Linear(4, 3, bias=bias, dtype=np.dtype(dtype).name))
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    assert_parity(tm, mm, x)


def test_functional_linear_matches_torch_with_a_broadcast_bias_and_no_weight_grad():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((6, 5)), rng.standard_normal((2, 5)), rng.standard_normal(2)
    tx = torch.tensor(x, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    mx = mininn.tensor(x, requires_grad=True)
    mb = mininn.tensor(b, requires_grad=True)
    ty = torch.nn.functional.linear(tx, torch.tensor(w), tb)
    my = F.linear(mx, mininn.tensor(w), mb)
    ty.sum().backward()
    my.sum().backward()
    np.testing.assert_allclose(my.numpy(force=True), ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(mx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(mb.grad.numpy(), tb.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_state_dict_keys_shapes_and_none_slots_match_torch(bias):
    tm, mm = torch.nn.Linear(4, 3, bias=bias), nn.Linear(4, 3, bias=bias)
    assert state_layout(mm) == state_layout(tm)
    assert list(mm._parameters) == list(tm._parameters)
    assert (mm.bias is None) == (tm.bias is None)


@pytest.mark.parametrize("args", [(4, 3), (4, 3, False)])
def test_linear_repr_matches_torch(args):
    assert repr(nn.Linear(*args)) == repr(torch.nn.Linear(*args))


def test_identity_returns_its_input_and_ignores_arguments():
    x = mininn.randn(2, 3)
    m = nn.Identity(54, unused="argument")
    assert m(x) is x
    assert repr(m) == repr(torch.nn.Identity(54, unused="argument")) == "Identity()"
    assert list(m.state_dict()) == []


def test_linear_default_init_is_uniform_within_one_over_sqrt_fan_in():
    mininn.manual_seed(0)
    m = nn.Linear(400, 300)
    w, b = m.weight.numpy(force=True), m.bias.numpy(force=True)
    bound = 1 / math.sqrt(400)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # U(-k, k): mean 0, variance k^2 / 3 (120000 samples: 1% tolerance is > 5 sigma)
    assert abs(w.mean()) < 0.01 * bound
    assert w.var() == pytest.approx(bound**2 / 3, rel=0.01)
    assert abs(b.mean()) < 0.2 * bound and np.abs(b).max() > 0.9 * bound


def test_linear_init_is_reproducible_under_manual_seed_and_reset_keeps_parameter_identity():
    mininn.manual_seed(7)
    a = nn.Linear(5, 4)
    mininn.manual_seed(7)
    b = nn.Linear(5, 4)
    np.testing.assert_array_equal(a.weight.numpy(force=True), b.weight.numpy(force=True))
    weight = a.weight
    before = weight.numpy(force=True).copy()
    a.reset_parameters()
    assert a.weight is weight and a.weight.requires_grad
    assert not np.array_equal(before, weight.numpy(force=True))


def test_linear_dtype_argument_sets_parameter_dtype():
    m = nn.Linear(3, 2, dtype=mininn.float64)
    assert m.weight.dtype == mininn.float64 and m.bias.dtype == mininn.float64
    y = m(mininn.ones(1, 3, dtype=mininn.float64))
    assert y.dtype == mininn.float64


def test_linear_keeps_float32_compute_for_float32_input():
    y = nn.Linear(3, 2)(mininn.ones(4, 3))
    assert y.dtype == mininn.float32


@pytest.mark.parametrize("shape", [(1, 4), (2, 5, 4), (4,)])
def test_linear_shape_mismatch_raises_torch_message(shape):
    same_error(lambda: torch.nn.Linear(2, 3)(torch.ones(shape)), lambda: nn.Linear(2, 3)(mininn.ones(shape)))


def test_linear_dtype_mismatch_raises_torch_message():
    same_error(
        lambda: torch.nn.Linear(3, 4)(torch.ones(2, 3, dtype=torch.float64)),
        lambda: nn.Linear(3, 4)(mininn.ones(2, 3, dtype=mininn.float64)),
    )


def test_functional_linear_bias_of_wrong_size_raises_torch_message():
    same_error(
        lambda: torch.nn.functional.linear(torch.ones(2, 4), torch.ones(3, 4), torch.ones(4)),
        lambda: F.linear(mininn.ones(2, 4), mininn.ones(3, 4), mininn.ones(4)),
    )


def test_linear_under_no_grad_records_no_graph():
    m = nn.Linear(3, 2)
    with mininn.no_grad():
        y = m(mininn.randn(4, 3, requires_grad=True))
    assert y.grad_fn is None and not y.requires_grad


def test_linear_gradient_accumulates_over_two_backward_calls():
    m = nn.Linear(3, 2)
    x = mininn.randn(4, 3)
    m(x).sum().backward()
    first = m.weight.grad.numpy().copy()
    m(x).sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), 2 * first, rtol=1e-6)


def test_linear_only_input_grad_is_computed_when_parameters_are_frozen():
    m = nn.Linear(3, 2).requires_grad_(False)
    x = mininn.randn(4, 3, requires_grad=True)
    m(x).sum().backward()
    assert m.weight.grad is None and m.bias.grad is None
    np.testing.assert_allclose(x.grad.numpy(), np.tile(m.weight.numpy().sum(0), (4, 1)), rtol=1e-6)


@pytest.mark.parametrize("x_dtype,w_dtype,b_dtype", [
    ("float64", "float32", None), ("float64", "float32", "float32"), ("float64", "float32", "float64"),
    ("float32", "float32", "float64"),
])
def test_functional_linear_dtype_mismatches_raise_torch_messages(x_dtype, w_dtype, b_dtype):
    def call(lib, fn):
        bias = None if b_dtype is None else lib.ones(4, dtype=getattr(lib, b_dtype))
        x = lib.ones(2, 3, dtype=getattr(lib, x_dtype))
        return fn(x, lib.ones(4, 3, dtype=getattr(lib, w_dtype)), bias)

    same_error(lambda: call(torch, torch.nn.functional.linear), lambda: call(mininn, F.linear))


def test_linear_behaves_the_same_in_eval_mode():
    tm = torch.nn.Linear(4, 3)
    mm = twin(tm, nn.Linear(4, 3))
    assert_parity(tm, mm, np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32), training=False)


# ---- Bilinear -----------------------------------------------------------------------------------


def _bilinear_both(tm, mm, x1, x2, seed=0):
    """Outputs, input grads and parameter grads of a torch Bilinear and its twin on the same data."""
    out = []
    for lib, m in ((torch, tm), (mininn, mm)):
        a, b = lib.tensor(x1, requires_grad=True), lib.tensor(x2, requires_grad=True)
        y = m(a, b)
        cot = np.random.default_rng(seed).standard_normal(tuple(y.shape)).astype(x1.dtype)
        y.backward(lib.tensor(cot))
        grads = [a.grad, b.grad] + [p.grad for p in m.parameters()]
        out.append([np.array(y.detach().numpy())] + [np.array(g.numpy()) for g in grads])
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [(5,), (2, 3), (), (0,)], ids=str)
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch_output_and_gradients(dtype, batch, bias):
    tm = torch.nn.Bilinear(4, 3, 2, bias=bias).to(getattr(torch, np.dtype(dtype).name))
    mm = twin(tm, nn.Bilinear(4, 3, 2, bias=bias, dtype=np.dtype(dtype).name))
    rng = np.random.default_rng(1)
    x1, x2 = rng.standard_normal(batch + (4,)).astype(dtype), rng.standard_normal(batch + (3,)).astype(dtype)
    theirs, ours = _bilinear_both(tm, mm, x1, x2)
    t = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for k, (o, e) in enumerate(zip(ours, theirs)):
        assert o.shape == e.shape and o.dtype == e.dtype
        np.testing.assert_allclose(o, e, **t, err_msg=str(k))


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_state_dict_and_repr_match_torch(bias):
    tm, mm = torch.nn.Bilinear(5, 3, 2, bias=bias), nn.Bilinear(5, 3, 2, bias=bias)
    assert state_layout(mm) == state_layout(tm)
    assert repr(mm) == repr(tm)


def test_bilinear_default_init_is_uniform_within_one_over_sqrt_in1_features():
    mininn.manual_seed(0)
    m = nn.Bilinear(25, 40, 30)
    bound = 1 / math.sqrt(25)
    for p in (m.weight, m.bias):
        values = p.numpy(force=True).ravel()
        assert np.abs(values).max() <= bound
    w = m.weight.numpy(force=True).ravel()
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound and abs(w.mean()) < 0.01 * bound


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.bilinear(lib.ones(5, 2), lib.ones(4, 3), lib.ones(4, 2, 3)),
    lambda lib: lib.nn.functional.bilinear(lib.ones(5, 3), lib.ones(5, 3), lib.ones(4, 2, 3)),
    lambda lib: lib.nn.functional.bilinear(lib.ones(5, 2), lib.ones(5, 2), lib.ones(4, 2, 3)),
    lambda lib: lib.nn.functional.bilinear(lib.ones(5, 2), lib.ones(5, 3), lib.ones(4, 2)),
    lambda lib: lib.nn.functional.bilinear(lib.ones(5, 2), lib.ones(5, 3), lib.ones(4, 2, 3), lib.ones(3)),
    lambda lib: lib.nn.functional.bilinear(lib.ones(5, 2), lib.ones(3), lib.ones(4, 2, 3)),
    lambda lib: lib.nn.functional.bilinear(lib.ones(()), lib.ones(()), lib.ones(4, 2, 3)),
    lambda lib: lib.nn.functional.bilinear(lib.ones(5, 2), lib.ones(4, 3, dtype=lib.float64),
                                           lib.ones(4, 2, 3)),
    lambda lib: lib.nn.functional.bilinear(lib.ones(5, 2), lib.ones(5, 3), lib.ones(4, 2, 3),
                                           lib.ones(4, dtype=lib.float64)),
    lambda lib: lib.nn.Bilinear(2, 3, 4)(lib.ones(5, 2), lib.ones(5, 4)),
])
def test_bilinear_errors_match_torch(call):
    same_error(lambda: call(torch), lambda: call(mininn))
