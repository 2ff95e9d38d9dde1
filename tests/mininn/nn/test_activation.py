"""Activation layers and functions against torch 2.13, plus the erf kernels behind GELU and ``mininn.erf``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from mininn._functions.unary import erf_array as erf
from mininn._functions.unary import gelu_array
from mininn._functions.unary import normal_cdf_array as normal_cdf
from tests.mininn.nn._layer_parity import assert_parity, same_error, state_layout, to_numpy, twin

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]

MODULES = [
    ("ReLU", (), {}),
    ("ReLU6", (), {}),
    ("Hardtanh", (), {}),
    ("Hardtanh", (-2.0, 0.5), {}),
    ("LeakyReLU", (), {}),
    ("LeakyReLU", (0.2,), {}),
    ("PReLU", (), {}),
    ("PReLU", (3,), dict(init=0.1)),
    ("ELU", (), {}),
    ("ELU", (0.5,), {}),
    ("GELU", (), {}),
    ("GELU", ("tanh",), {}),
    ("SiLU", (), {}),
    ("Sigmoid", (), {}),
    ("Tanh", (), {}),
    ("Softplus", (), {}),
    ("Softplus", (2.0, 5.0), {}),
    ("LogSigmoid", (), {}),
    ("Softmax", (1,), {}),
    ("Softmax", (-1,), {}),
    ("LogSoftmax", (1,), {}),
    ("LogSoftmax", (0,), {}),
]


def _x(dtype, shape=(4, 3, 5)):
    x = np.random.default_rng(0).standard_normal(shape) * 3
    flat = x.reshape(-1)
    specials = [0.0, -0.0, 1e-8, -1e-8, 1.0, -1.0, 6.0, 12.0, -12.0, 25.0, -25.0, 0.5, 4.9, 5.1]
    flat[: len(specials)] = specials
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=str)
def test_activation_module_matches_torch_values_and_gradients(name, args, kwargs, dtype):
    tm = getattr(torch.nn, name)(*args, **kwargs).to(getattr(torch, np.dtype(dtype).name))
    mm = twin(tm, getattr(nn, name)(*args, **kwargs))
    if dtype == np.float64:
        mm.double()
    assert_parity(tm, mm, _x(dtype))


@pytest.mark.parametrize("name,args,kwargs", MODULES + [
    ("ReLU", (True,), {}), ("ReLU6", (True,), {}), ("Hardtanh", (-2, 2, True), {}),
    ("LeakyReLU", (0.2, True), {}), ("ELU", (0.5, True), {}), ("SiLU", (True,), {}), ("Softmax", (), {}),
], ids=str)
def test_activation_repr_and_state_dict_match_torch(name, args, kwargs):
    tm, mm = getattr(torch.nn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)
    assert repr(mm) == repr(tm)
    assert state_layout(mm) == state_layout(tm)


def test_prelu_default_weight_is_a_quarter_per_parameter():
    m = nn.PReLU(4, init=0.3)
    np.testing.assert_allclose(m.weight.numpy(force=True), np.full(4, 0.3, np.float32))
    assert m.weight.requires_grad


@pytest.mark.parametrize("fn", ["relu", "relu6", "sigmoid", "tanh", "silu", "gelu", "elu", "softplus",
                                "logsigmoid", "leaky_relu", "hardtanh"])
def test_functional_activation_matches_torch_for_float32(fn):
    x = _x(np.float32, (7, 9))
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    ty, my = getattr(TF, fn)(tx), getattr(F, fn)(mx)
    assert my.dtype == mininn.float32
    ty.sum().backward()
    my.sum().backward()
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_functions_match_torch_including_extreme_logits(fn, dim):
    x = _x(np.float64, (4, 6))
    x[0, 0], x[1, 1] = 800.0, -800.0  # no overflow: shifted by the max
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    ty, my = getattr(TF, fn)(tx, dim), getattr(F, fn)(mx, dim)
    cot = np.random.default_rng(1).standard_normal(x.shape)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("ndim,expected_dim", [(1, 0), (2, 1), (3, 0), (4, 1)])
def test_softmax_without_dim_warns_and_picks_torchs_legacy_dim(ndim, expected_dim):
    x = mininn.randn(*([3] * ndim))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        y = nn.Softmax()(x)
    np.testing.assert_allclose(y.numpy().sum(axis=expected_dim), 1.0, rtol=1e-5)


def test_softmax_dtype_argument_casts_first_like_torch():
    x = _x(np.float32, (3, 5))
    ty = TF.softmax(torch.tensor(x), 1, dtype=torch.float64)
    my = F.softmax(mininn.tensor(x), 1, dtype=mininn.float64)
    assert my.dtype == mininn.float64
    np.testing.assert_allclose(my.numpy(), ty.numpy(), rtol=1e-12)


def test_inplace_activation_without_grad_overwrites_and_returns_its_input():
    x = mininn.tensor([[-1.0, 2.0], [3.0, -4.0]])
    with mininn.no_grad():
        y = nn.ReLU(inplace=True)(x)
    assert y is x
    np.testing.assert_array_equal(x.numpy(), [[0.0, 2.0], [3.0, 0.0]])
    z = mininn.tensor([-1.0, 0.5])
    assert F.leaky_relu(z, 0.5, inplace=True) is z
    np.testing.assert_array_equal(z.numpy(), [-0.5, 0.5])


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("op", [
    lambda f, x: f.relu(x, inplace=True), lambda f, x: f.relu6(x, inplace=True),
    lambda f, x: f.hardtanh(x, -0.5, 2.0, inplace=True),
])
def test_inplace_clamping_activations_without_grad_write_through_views_like_torch(op, dtype):
    base = (np.random.default_rng(0).standard_normal((4, 5)) * 8).astype(dtype)
    results = []
    for lib, f in ((torch, TF), (mininn, F)):
        whole = lib.tensor(base.copy())
        with lib.no_grad():
            part = whole[1:3]
            assert op(f, part) is part
        results.append(to_numpy(whole))
    np.testing.assert_array_equal(results[1], results[0])
    assert results[1].dtype == base.dtype


def test_inplace_activation_while_recording_rebases_its_input_like_torch():
    x = np.array([-1.0, 2.0, 3.0])
    results = []
    for lib, relu in ((torch, torch.nn.ReLU(inplace=True)), (mininn, nn.ReLU(inplace=True))):
        leaf = lib.tensor(x, requires_grad=True)
        h = leaf * 2
        y = relu(h)
        assert y is h
        y.sum().backward()
        results.append((to_numpy(h), to_numpy(leaf.grad)))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_inplace_activation_on_a_leaf_that_requires_grad_raises_torch_message():
    same_error(lambda: torch.nn.ReLU(inplace=True)(torch.ones(2, requires_grad=True)),
               lambda: nn.ReLU(inplace=True)(mininn.ones(2, requires_grad=True)))


def test_activation_under_no_grad_records_no_graph():
    x = mininn.randn(3, requires_grad=True)
    with mininn.no_grad():
        outs = [F.gelu(x), F.silu(x), F.softmax(x, 0), F.sigmoid(x), F.prelu(x, mininn.ones(1))]
    assert all(o.grad_fn is None and not o.requires_grad for o in outs)


@pytest.mark.parametrize("call", [
    lambda lib, f: f.gelu(lib.ones(3), approximate="foo"),
    lambda lib, f: f.hardtanh(lib.ones(3), 2.0, 1.0),
    lambda lib, f: f.leaky_relu(lib.ones(3), "a"),
    lambda lib, f: f.prelu(lib.ones(2, 3), lib.ones(2)),
    lambda lib, f: f.prelu(lib.ones(3), lib.ones(3)),
    lambda lib, f: f.softmax(lib.ones(2, 3), 2),
    lambda lib, f: f.log_softmax(lib.ones(2, 3), -3),
    lambda lib, f: lib.nn.GELU("foo")(lib.ones(3)),
    lambda lib, f: lib.nn.Hardtanh(1.0, 1.0),
    lambda lib, f: lib.nn.PReLU(3)(lib.ones(2, 4)),
    lambda lib, f: f.gelu(lib.ones(3, dtype=lib.int64)),
    lambda lib, f: f.gelu(lib.ones(3, dtype=lib.int64), approximate="tanh"),
])
def test_activation_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))


# ---- erf, the normal CDF and GELU's x * Phi(x) (mininn._functions.unary) -------------------------


def _reference_erf(x):
    return np.array([math.erf(v) for v in x.astype(np.float64).ravel()]).reshape(x.shape)


def test_erf_float64_has_near_machine_relative_accuracy():
    x = np.concatenate([np.linspace(-7, 7, 20001), np.geomspace(1e-300, 1, 300),
                        -np.geomspace(1e-20, 6, 300)])
    ref = _reference_erf(x)
    rel = np.abs(erf(x) - ref) / np.maximum(np.abs(ref), 1e-300)
    assert rel.max() < 5e-15


def test_erf_float32_stays_float32_within_a_few_ulps():
    x = np.linspace(-6, 6, 4001, dtype=np.float32)
    out = erf(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _reference_erf(x), rtol=3e-7, atol=1e-7)


def test_erf_handles_infinities_and_nan_without_warnings():
    with np.errstate(all="raise"):
        out = erf(np.array([np.inf, -np.inf, np.nan, 0.0]))
    np.testing.assert_array_equal(out[[0, 1, 3]], [1.0, -1.0, 0.0])
    assert np.isnan(out[2])


def test_normal_cdf_float64_matches_erfc_to_machine_precision():
    x = np.linspace(-12, 12, 48001)
    ref = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x])
    np.testing.assert_allclose(normal_cdf(x), ref, atol=1e-15, rtol=0)


def test_normal_cdf_float32_is_accurate_absolutely_and_relatively_in_the_lower_tail():
    x = np.linspace(-12, 12, 48001).astype(np.float32)
    ref = np.array([0.5 * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    out = normal_cdf(x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, ref, atol=2.5e-7, rtol=0)
    np.testing.assert_allclose(out[x < 0], ref[x < 0], rtol=5e-6, atol=0)


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=str)
def test_activation_modules_behave_the_same_in_eval_mode(name, args, kwargs):
    tm = getattr(torch.nn, name)(*args, **kwargs)
    mm = twin(tm, getattr(nn, name)(*args, **kwargs))
    assert_parity(tm, mm, _x(np.float32), training=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_erf_is_as_accurate_across_cache_blocks_and_for_strided_input(dtype):
    x = (np.random.default_rng(0).standard_normal((301, 1001)) * 3).astype(dtype)  # blocks + a partial one
    out = erf(x.T)
    assert out.shape == (1001, 301) and out.dtype == dtype
    ref = _reference_erf(x.T)
    assert (np.abs(out - ref) / np.abs(ref)).max() < (1e-14 if dtype == np.float64 else 1e-6)


def test_erf_float32_relative_error_stays_below_1e_6_down_to_tiny_arguments():
    x = np.geomspace(1e-30, 4, 4000).astype(np.float32)
    x = np.concatenate([x, -x])
    ref = _reference_erf(x)
    assert (np.abs(erf(x) - ref) / np.abs(ref)).max() < 1e-6


@pytest.mark.parametrize("fn", [erf, normal_cdf, gelu_array], ids=["erf", "normal_cdf", "gelu"])
def test_erf_kernels_keep_empty_and_zero_dim_shapes(fn):
    assert fn(np.zeros((0, 3))).shape == (0, 3)
    scalar = fn(np.array(0.5, dtype=np.float32))
    assert scalar.shape == () and scalar.dtype == np.float32


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["erf", "gelu"])
def test_half_precision_erf_and_gelu_match_torch_and_keep_their_dtype(name, dtype):
    x = np.linspace(-5, 5, 201, dtype=np.float32)
    ours = getattr(mininn.tensor(x).to(getattr(mininn, dtype)), name)() if name == "erf" else \
        F.gelu(mininn.tensor(x).to(getattr(mininn, dtype)))
    tx = torch.tensor(x).to(getattr(torch, dtype))
    theirs = tx.erf() if name == "erf" else TF.gelu(tx)
    assert ours.dtype.name == dtype
    ulp = 2.0 ** (-10 if dtype == "float16" else -7)  # one unit in the last place at 1
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=ulp, atol=ulp / 16)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_gelu_matches_torch_across_cache_blocks_infinities_and_nan_included(dtype):
    x = np.random.default_rng(1).standard_normal(200_001) * 4
    x[:5] = [np.inf, -np.inf, np.nan, -50.0, 50.0]
    x = x.astype(dtype)
    with mininn.no_grad():
        ours = F.gelu(mininn.tensor(x)).numpy()
    theirs = TF.gelu(torch.tensor(x)).numpy()
    assert ours.dtype == dtype
    t = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours, theirs, **t)


# ---- the rest of torch.nn's activations --------------------------------------------------------

MORE_MODULES = [
    ("Hardswish", (), {}),
    ("Hardsigmoid", (), {}),
    ("Mish", (), {}),
    ("SELU", (), {}),
    ("CELU", (), {}),
    ("CELU", (0.5,), {}),
    ("GLU", (), {}),
    ("GLU", (1,), {}),
    ("Softsign", (), {}),
    ("Softmin", (1,), {}),
    ("Softmin", (-1,), {}),
    ("Softmax2d", (), {}),
    ("Threshold", (0.5, -2.0), {}),
    ("Hardshrink", (), {}),
    ("Hardshrink", (1.0,), {}),
    ("Softshrink", (), {}),
    ("Softshrink", (1.0,), {}),
    ("Tanhshrink", (), {}),
    ("RReLU", (), {}),
    ("RReLU", (0.2, 0.4), {}),
]


def _x_more(dtype, shape=(3, 4, 2, 6)):
    """Standard normal times 3 with the kinks of the new activations (0, +-0.5, +-1, +-3) included."""
    x = _x(dtype, shape)
    x.reshape(-1)[-8:] = [-3.0, 3.0, -0.5, 0.5, -1.0, 1.0, 2.9, -2.9]
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,args,kwargs,training", [  # RReLU's random training slopes: tested below
    (*case, training) for case in MORE_MODULES for training in (True, False)
    if case[0] != "RReLU" or not training
], ids=str)
def test_more_activation_modules_match_torch_values_and_gradients(name, args, kwargs, training, dtype):
    tm = getattr(torch.nn, name)(*args, **kwargs).to(getattr(torch, np.dtype(dtype).name))
    mm = twin(tm, getattr(nn, name)(*args, **kwargs))
    assert_parity(tm, mm, _x_more(dtype), training=training)


@pytest.mark.parametrize("name,args,kwargs", MORE_MODULES + [
    ("Hardswish", (True,), {}), ("Hardsigmoid", (True,), {}), ("Mish", (True,), {}), ("SELU", (True,), {}),
    ("CELU", (2.0, True), {}), ("Threshold", (0.1, 20, True), {}), ("RReLU", (0.1, 0.3, True), {}),
    ("Softmin", (), {}), ("Softshrink", (1,), {}),
], ids=str)
def test_more_activation_reprs_and_state_dicts_match_torch(name, args, kwargs):
    tm, mm = getattr(torch.nn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)
    assert repr(mm) == repr(tm)
    assert state_layout(mm) == state_layout(tm)


FUNCTIONAL_CALLS = [
    ("hardswish", {}), ("hardsigmoid", {}), ("mish", {}), ("selu", {}), ("celu", dict(alpha=1.5)),
    ("glu", dict(dim=0)), ("softsign", {}), ("softmin", dict(dim=1)),
    ("threshold", dict(threshold=0.5, value=9.0)),
    ("rrelu", dict(lower=0.1, upper=0.5)), ("hardshrink", dict(lambd=1.0)), ("softshrink", dict(lambd=0.3)),
    ("tanhshrink", {}),
]


@pytest.mark.parametrize("fn,kwargs", FUNCTIONAL_CALLS, ids=str)
def test_more_functional_activations_match_torch_for_float32(fn, kwargs):
    x = _x_more(np.float32, (6, 8))
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    ty, my = getattr(TF, fn)(tx, **kwargs), getattr(F, fn)(mx, **kwargs)
    assert my.dtype == mininn.float32
    ty.sum().backward()
    my.sum().backward()
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), rtol=1e-5, atol=1e-6)


INPLACE_CALLS = [
    ("relu_", {}), ("elu_", dict(alpha=0.7)), ("celu_", dict(alpha=0.7)), ("selu_", {}),
    ("leaky_relu_", dict(negative_slope=0.2)), ("hardtanh_", dict(min_val=-0.5, max_val=2.0)),
    ("rrelu_", dict(lower=0.1, upper=0.3)), ("threshold_", dict(threshold=0.2, value=-4.0)),
]


@pytest.mark.parametrize("fn,kwargs", INPLACE_CALLS, ids=str)
def test_inplace_functional_forms_overwrite_a_non_leaf_and_backpropagate_like_torch(fn, kwargs):
    x = _x_more(np.float64, (5, 6))
    results = []
    for lib, f in ((torch, TF), (mininn, F)):
        leaf = lib.tensor(x, requires_grad=True)
        h = leaf * 3
        assert getattr(f, fn)(h, **kwargs) is h
        (h * lib.tensor(x)).sum().backward()
        results.append((to_numpy(h), to_numpy(leaf.grad)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)


@pytest.mark.parametrize("fn,kwargs", INPLACE_CALLS + [
    ("hardswish", dict(inplace=True)), ("hardsigmoid", dict(inplace=True)), ("mish", dict(inplace=True)),
    ("selu", dict(inplace=True)), ("threshold", dict(threshold=0.0, value=2.0, inplace=True)),
], ids=str)
def test_inplace_activations_without_grad_write_through_views_like_torch(fn, kwargs):
    base = _x_more(np.float32, (4, 6))
    results = []
    for lib, f in ((torch, TF), (mininn, F)):
        whole = lib.tensor(base.copy())
        with lib.no_grad():
            part = whole[1:3]
            assert getattr(f, fn)(part, **kwargs) is part
        results.append(to_numpy(whole))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("lower,upper", [(1 / 8, 1 / 3), (0.2, 0.4)])
def test_rrelu_in_training_draws_slopes_from_the_range_and_uses_them_in_backward(lower, upper):
    mininn.manual_seed(0)
    x = mininn.tensor(np.concatenate([-np.linspace(0.1, 5, 20000), [0.0], np.linspace(0.1, 5, 100)]),
                      requires_grad=True)
    y = nn.RReLU(lower, upper)(x)
    y.sum().backward()
    values, grad = y.numpy(force=True), x.grad.numpy()
    slopes = values[:20000] / x.numpy(force=True)[:20000]
    assert lower <= slopes.min() and slopes.max() <= upper
    assert abs(slopes.mean() - (lower + upper) / 2) < 5 * (upper - lower) / np.sqrt(12 * 20000)
    np.testing.assert_allclose(grad[:20000], slopes, rtol=1e-12)
    assert lower <= grad[20000] <= upper and values[20000] == 0  # 0 takes the negative branch
    np.testing.assert_array_equal(grad[20001:], 1.0)
    np.testing.assert_array_equal(values[20001:], x.numpy(force=True)[20001:])


def test_rrelu_functional_defaults_to_eval_and_module_follows_training_mode():
    x = mininn.tensor([-2.0, 3.0])
    np.testing.assert_allclose(F.rrelu(x).numpy(), [-2.0 * (1 / 8 + 1 / 3) / 2, 3.0])
    m = nn.RReLU(0.1, 0.1)  # a zero-width range makes training deterministic
    np.testing.assert_allclose(m(x).numpy(force=True), [-0.2, 3.0], rtol=1e-6)


def test_gumbel_softmax_samples_follow_the_softmax_of_the_logits():
    mininn.manual_seed(0)
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    x = mininn.tensor(np.tile(logits, (20000, 1)))
    soft = F.gumbel_softmax(x, tau=0.5)
    np.testing.assert_allclose(soft.numpy().sum(axis=1), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(x, hard=True).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(axis=1) == 1).all()
    np.testing.assert_allclose(hard.mean(axis=0), [0.1, 0.2, 0.7], atol=0.015)


@pytest.mark.parametrize("hard", [False, True])
def test_gumbel_softmax_gradient_is_the_soft_samples_softmax_gradient(hard):
    mininn.manual_seed(3)
    tau, w = 0.7, np.random.default_rng(0).standard_normal((4, 5))
    x = mininn.tensor(np.random.default_rng(1).standard_normal((4, 5)), requires_grad=True)
    y = F.gumbel_softmax(x, tau=tau, hard=hard, dim=1)
    (y * mininn.tensor(w)).sum().backward()
    mininn.manual_seed(3)
    soft = F.gumbel_softmax(x.detach(), tau=tau, dim=1).numpy()
    expected = soft * (w - (w * soft).sum(axis=1, keepdims=True)) / tau
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-10, atol=1e-12)
    if hard:
        np.testing.assert_array_equal(y.numpy(force=True), soft == soft.max(axis=1, keepdims=True))


def test_softmin_and_softmax2d_pick_dims_like_torch():
    x = _x_more(np.float32, (2, 3, 4))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin has been deprecated"):
        ours = nn.Softmin()(mininn.tensor(x))
    with pytest.warns(UserWarning):
        theirs = torch.nn.Softmin()(torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    np.testing.assert_allclose(nn.Softmax2d()(mininn.tensor(x)).numpy(),
                               torch.nn.Softmax2d()(torch.tensor(x)).numpy(), rtol=1e-6)


def test_integer_inputs_behave_like_torch_where_torch_accepts_them():
    x = np.array([-2, 0, 3, 7])
    for fn, kwargs in (("threshold", dict(threshold=1.5, value=9)), ("softsign", {}), ("tanhshrink", {})):
        ours, theirs = getattr(F, fn)(mininn.tensor(x), **kwargs), getattr(TF, fn)(torch.tensor(x), **kwargs)
        assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda lib, f: f.glu(lib.ones(3)),
    lambda lib, f: f.glu(lib.ones(())),
    lambda lib, f: f.glu(lib.ones(2, 3), dim=2),
    lambda lib, f: f.glu(lib.ones(2, 3)),
    lambda lib, f: f.glu(lib.ones(3, 2), -2),
    lambda lib, f: lib.nn.Softmax2d()(lib.ones(3)),
    lambda lib, f: lib.nn.Softmax2d()(lib.ones(2, 3, 4, 5, 6)),
    lambda lib, f: f.softshrink(lib.ones(3), -1.0),
    lambda lib, f: f.softshrink(lib.ones(3, dtype=lib.float64), -1.5),
    lambda lib, f: lib.nn.Softshrink(float("inf"))(lib.ones(3, dtype=lib.float64)),
    lambda lib, f: f.celu(lib.ones(3), 0.0),
    lambda lib, f: f.rrelu(lib.ones(3), 0.5, 0.1, training=True),
    lambda lib, f: f.rrelu(lib.ones(3), 0.5, 0.1),
    lambda lib, f: f.softmin(lib.ones(3), dim=2),
    lambda lib, f: f.gumbel_softmax(lib.ones(3), dim=2),
    lambda lib, f: f.relu_(lib.ones(3, requires_grad=True)),
    lambda lib, f: f.threshold_(lib.ones(3, requires_grad=True), 0.5, 0.0),
    lambda lib, f: f.rrelu(lib.tensor([1, 2]), training=True),
])
def test_more_activation_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))


@pytest.mark.parametrize("name", ["hardswish", "hardsigmoid", "mish", "selu", "celu", "elu", "glu",
                                  "hardshrink", "softshrink", "rrelu", "rrelu_"])
def test_float_only_activations_reject_integer_input_with_torchs_message(name):
    same_error(lambda: getattr(TF, name)(torch.tensor([1, 2])),
               lambda: getattr(F, name)(mininn.tensor([1, 2])))
