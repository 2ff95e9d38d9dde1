"""mininn.nn.init against torch 2.13: gains, fan rules, messages, distributions, in-place identity."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn import init
from tests.mininn.nn._layer_parity import same_error, to_numpy

torch = pytest.importorskip("torch")
TI = torch.nn.init


@pytest.mark.parametrize("args", [
    ("linear",), ("conv1d",), ("conv2d",), ("conv3d",), ("conv_transpose1d",), ("conv_transpose2d",),
    ("conv_transpose3d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",), ("leaky_relu", 0.2),
    ("leaky_relu", 3), ("leaky_relu", math.sqrt(5)), ("selu",),
], ids=str)
def test_calculate_gain_matches_torch(args):
    assert init.calculate_gain(*args) == TI.calculate_gain(*args)


@pytest.mark.parametrize("args", [("softmax",), ("leaky_relu", "0.2"), ("leaky_relu", True)], ids=str)
def test_calculate_gain_errors_match_torch(args):
    same_error(lambda: TI.calculate_gain(*args), lambda: init.calculate_gain(*args))


@pytest.mark.parametrize("shape", [(3, 4), (8, 3, 5), (16, 4, 3, 3), (2, 3, 1, 4, 5), (5, 0)])
def test_fan_in_and_fan_out_match_torch(shape):
    expected = TI._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert init._calculate_fan_in_and_fan_out(mininn.empty(shape)) == expected


@pytest.mark.parametrize("call", [
    lambda lib, i: i._calculate_fan_in_and_fan_out(lib.empty(4)),
    lambda lib, i: i.xavier_uniform_(lib.empty(4)),
    lambda lib, i: i.kaiming_uniform_(lib.empty(3, 4), mode="fan_avg"),
    lambda lib, i: i.kaiming_normal_(lib.empty(3, 4), nonlinearity="softmax"),
    lambda lib, i: i.eye_(lib.empty(2, 3, 4)),
    lambda lib, i: i.dirac_(lib.empty(3, 4)),
    lambda lib, i: i.dirac_(lib.empty(3, 4, 3), groups=2),
    lambda lib, i: i.orthogonal_(lib.empty(4)),
])
def test_init_errors_match_torch(call):
    same_error(lambda: call(torch, TI), lambda: call(mininn, init))


def test_kaiming_mode_is_case_insensitive_like_torch():
    w = init.kaiming_uniform_(mininn.empty(50, 2000), mode="FAN_OUT", nonlinearity="relu")
    bound = math.sqrt(3) * math.sqrt(2) / math.sqrt(50)  # fan_out = 50, not fan_in = 2000
    assert np.abs(w.numpy()).max() <= bound and np.abs(w.numpy()).max() > 0.9 * bound


@pytest.mark.parametrize("fill", [
    lambda i, t: i.uniform_(t, -0.5, 2.0),
    lambda i, t: i.normal_(t, 1.0, 0.1),
    lambda i, t: i.trunc_normal_(t, std=0.02),
    lambda i, t: i.constant_(t, 0.3),
    lambda i, t: i.ones_(t),
    lambda i, t: i.zeros_(t),
    lambda i, t: i.eye_(t),
    lambda i, t: i.xavier_uniform_(t, gain=2.0),
    lambda i, t: i.xavier_normal_(t),
    lambda i, t: i.kaiming_uniform_(t, a=math.sqrt(5)),
    lambda i, t: i.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"),
    lambda i, t: i.orthogonal_(t),
])
def test_init_fills_a_parameter_in_place_outside_no_grad_and_returns_it(fill):
    m = nn.Linear(6, 4)
    weight = m.weight
    ptr, alias = weight.data_ptr(), weight.detach()  # the alias shares the storage
    out = fill(init, weight)
    assert out is weight and m.weight is weight and weight.data_ptr() == ptr
    assert mininn.equal(alias, weight)
    assert weight.requires_grad and weight.grad_fn is None and weight.dtype == mininn.float32


def test_constant_ones_zeros_and_eye_match_torch_exactly():
    for fill in (lambda i, t: i.constant_(t, 0.25), lambda i, t: i.ones_(t), lambda i, t: i.zeros_(t),
                 lambda i, t: i.eye_(t)):
        ours, theirs = fill(init, mininn.empty(3, 5)), fill(TI, torch.empty(3, 5))
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((4, 8, 2, 3, 5), 1),
                                          ((8, 2, 3, 3), 4)])
def test_dirac_matches_torch_exactly(shape, groups):
    np.testing.assert_array_equal(to_numpy(init.dirac_(mininn.empty(shape), groups)),
                                  to_numpy(TI.dirac_(torch.empty(shape), groups)))


N = (400, 500)  # 200,000 samples: 2% tolerances on moments are many sigmas wide


def _sample(fill, shape=N, dtype=mininn.float32):
    mininn.manual_seed(0)
    return fill(mininn.empty(shape, dtype=dtype)).numpy()


def test_uniform_and_normal_have_the_requested_moments():
    u = _sample(lambda t: init.uniform_(t, -1.0, 3.0))
    assert u.min() >= -1.0 and u.max() <= 3.0
    assert u.mean() == pytest.approx(1.0, abs=0.02) and u.var() == pytest.approx(16 / 12, rel=0.02)
    g = _sample(lambda t: init.normal_(t, 2.0, 0.5))
    assert g.mean() == pytest.approx(2.0, abs=0.01) and g.std() == pytest.approx(0.5, rel=0.02)


def test_trunc_normal_stays_in_bounds_with_the_truncated_moments():
    x = _sample(lambda t: init.trunc_normal_(t, 0.0, 1.0, -2.0, 2.0))
    assert x.min() >= -2.0 and x.max() <= 2.0
    phi = math.exp(-2) / math.sqrt(2 * math.pi)
    mass = math.erf(2 / math.sqrt(2))
    assert x.mean() == pytest.approx(0.0, abs=0.01)
    assert x.var() == pytest.approx(1 - 4 * phi / mass, rel=0.02)
    shifted = _sample(lambda t: init.trunc_normal_(t, 0.5, 0.02, a=0.49, b=0.55))
    assert shifted.min() >= 0.49 and shifted.max() <= 0.55


def test_trunc_normal_warns_like_torch_when_the_mean_is_far_outside_the_bounds():
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(mininn.empty(10), mean=10.0, std=1.0, a=-2.0, b=2.0)


@pytest.mark.parametrize("fill,std", [
    (lambda t: init.xavier_uniform_(t, gain=2.0), 2.0 * math.sqrt(2 / 900)),
    (lambda t: init.xavier_normal_(t, gain=0.5), 0.5 * math.sqrt(2 / 900)),
    (lambda t: init.kaiming_uniform_(t), math.sqrt(2 / (1 + 0.01**2)) / math.sqrt(500)),
    (lambda t: init.kaiming_uniform_(t, a=math.sqrt(5)), math.sqrt(2 / 6) / math.sqrt(500)),
    (lambda t: init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu"), math.sqrt(2) / math.sqrt(400)),
    (lambda t: init.kaiming_normal_(t, nonlinearity="tanh"), (5 / 3) / math.sqrt(500)),
], ids=["xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_uniform_sqrt5", "kaiming_normal_out",
        "kaiming_normal_tanh"])
def test_xavier_and_kaiming_have_torchs_standard_deviation(fill, std):
    x = _sample(fill)
    assert x.mean() == pytest.approx(0.0, abs=0.02 * std)
    assert x.std() == pytest.approx(std, rel=0.02)


def test_uniform_initialisers_respect_their_bound():
    bound = math.sqrt(6 / 900)
    assert np.abs(_sample(init.xavier_uniform_)).max() <= bound


@pytest.mark.parametrize("shape", [(6, 10), (10, 6), (4, 3, 2, 2)])
def test_orthogonal_gives_orthonormal_rows_or_columns_times_gain(shape):
    w = _sample(lambda t: init.orthogonal_(t, gain=2.0), shape=shape, dtype=mininn.float64)
    flat = w.reshape(shape[0], -1) / 2.0
    small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(small, np.eye(small.shape[0]), atol=1e-12)


def test_random_initialisers_are_reproducible_under_manual_seed_and_accept_a_generator():
    a = _sample(init.xavier_normal_, shape=(5, 5))
    b = _sample(init.xavier_normal_, shape=(5, 5))
    np.testing.assert_array_equal(a, b)
    mininn.manual_seed(99)
    c = init.normal_(mininn.empty(5), generator=mininn.Generator().manual_seed(3)).numpy()
    global_before = init.normal_(mininn.empty(5)).numpy()
    mininn.manual_seed(99)
    d = init.normal_(mininn.empty(5), generator=mininn.Generator().manual_seed(3)).numpy()
    np.testing.assert_array_equal(c, d)
    np.testing.assert_array_equal(init.normal_(mininn.empty(5)).numpy(), global_before)  # untouched


def test_float64_tensors_stay_float64():
    w = init.kaiming_uniform_(mininn.empty(3, 4, dtype=mininn.float64))
    assert w.dtype == mininn.float64


def test_kaiming_on_a_zero_element_tensor_warns_and_does_nothing_like_torch():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        out = init.kaiming_uniform_(mininn.empty(0, 3))
    assert tuple(out.shape) == (0, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.uniform_(mininn.empty(0, 3))


def test_sparse_zeroes_the_same_count_per_column_as_torch_with_the_requested_std():
    mininn.manual_seed(0)
    w = init.sparse_(mininn.empty(200, 60, dtype=mininn.float64), sparsity=0.35, std=0.5).numpy()
    expected = (TI.sparse_(torch.empty(200, 60), sparsity=0.35) == 0).sum(0).numpy()
    np.testing.assert_array_equal((w == 0).sum(0), expected)
    assert abs(w[w != 0].std() - 0.5) < 0.02


def test_sparse_error_matches_torch():
    same_error(lambda: TI.sparse_(torch.empty(3, 4, 5), 0.5),
               lambda: init.sparse_(mininn.empty(3, 4, 5), 0.5))


_DEPRECATED_CALLS = {
    "uniform": (), "normal": (), "constant": (0.25,), "eye": (), "xavier_uniform": (), "xavier_normal": (),
    "kaiming_uniform": (), "kaiming_normal": (), "orthogonal": (), "sparse": (0.5,),
}


@pytest.mark.parametrize("name", list(_DEPRECATED_CALLS) + ["dirac"])
def test_deprecated_spelling_warns_like_torch_and_fills_in_place(name):
    args = _DEPRECATED_CALLS.get(name, ())
    shape = (3, 2, 3) if name == "dirac" else (4, 6)
    with pytest.warns(FutureWarning) as want:
        getattr(TI, name)(torch.empty(shape), *args)
    t = mininn.zeros(shape)
    with pytest.warns(FutureWarning) as got:
        out = getattr(init, name)(t, *args)
    assert [str(w.message) for w in got] == [str(w.message) for w in want]
    assert got[0].filename == __file__  # points at the caller, as torch's does
    assert out is t


def test_deprecated_spelling_gives_the_same_values_as_the_underscore_version():
    with pytest.warns(FutureWarning):
        old = init.constant(mininn.empty(2, 3), 0.5)
    np.testing.assert_array_equal(old.numpy(), np.full((2, 3), 0.5, np.float32))
