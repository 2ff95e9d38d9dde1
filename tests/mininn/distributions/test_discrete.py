"""The counting and one-hot families against torch 2.13: Poisson, Geometric, Binomial and
NegativeBinomial (both parametrisations), Multinomial, OneHotCategorical: log_prob, entropy, moments,
mode, enumerate_support."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

FLOATS = [np.float32, np.float64]
_RNG = np.random.default_rng(7)
RATES = _RNG.uniform(0.2, 6.0, (2, 3))
COUNTS = _RNG.integers(0, 9, (4, 2, 3)).astype(np.float64)
PROBS = _RNG.uniform(0.05, 0.95, (2, 3))
LOGITS = _RNG.standard_normal((2, 3)) * 2
WEIGHTS = _RNG.uniform(0.1, 1.0, (2, 4))


def D(lib):  # noqa: N802 - the distributions module of either library
    return lib.distributions


def _stats(dist, names=("mean", "variance", "stddev", "mode")):
    return tuple(getattr(dist, n) for n in names)


@pytest.mark.parametrize("dtype", FLOATS)
def test_poisson_matches_torch(dtype):
    r, k = RATES.astype(dtype), COUNTS.astype(dtype)
    run_both(lambda lib, a, x: D(lib).Poisson(a).log_prob(x), r, k)
    run_both(lambda lib, a: _stats(D(lib).Poisson(a)), r)
    zero_rate = np.array([0.0, 1.5], dtype)
    run_both(lambda lib, a, x: D(lib).Poisson(a).log_prob(x), zero_rate, np.array([0.0, 2.0], dtype),
             check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_geometric_matches_torch_in_both_parametrisations(dtype):
    p, z, k = PROBS.astype(dtype), LOGITS.astype(dtype), COUNTS.astype(dtype)
    run_both(lambda lib, a, x: D(lib).Geometric(a).log_prob(x), p, k)
    run_both(lambda lib, a, x: D(lib).Geometric(logits=a).log_prob(x), z, k)
    run_both(lambda lib, a: _stats(D(lib).Geometric(a)) + (D(lib).Geometric(a).entropy(),), p)
    run_both(lambda lib, a: (D(lib).Geometric(logits=a).entropy(), D(lib).Geometric(logits=a).probs), z)
    certain = np.array([1.0, 0.5], dtype)
    run_both(lambda lib, a, x: D(lib).Geometric(a).log_prob(x), certain, np.array([0.0, 3.0], dtype),
             check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_binomial_matches_torch_in_both_parametrisations(dtype):
    n = np.full((2, 3), 8.0, dtype)
    p, z, k = PROBS.astype(dtype), LOGITS.astype(dtype), COUNTS.astype(dtype)
    run_both(lambda lib, a, x: D(lib).Binomial(8, a).log_prob(x), p, k)
    run_both(lambda lib, a, x: D(lib).Binomial(8, logits=a).log_prob(x), z, k)
    run_both(lambda lib, c, a: _stats(D(lib).Binomial(c, a)) + (D(lib).Binomial(c, a).entropy(),), n, p)
    run_both(lambda lib, a: (D(lib).Binomial(8, logits=a).entropy(), D(lib).Binomial(8, logits=a).mean), z)
    run_both(lambda lib, a: (D(lib).Binomial(8, a).enumerate_support(),
                             D(lib).Binomial(8, a).enumerate_support(False)), p, check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial_matches_torch(dtype):
    w, z = WEIGHTS.astype(dtype), (WEIGHTS * 3).astype(dtype)
    counts = np.array([[[1, 0, 3, 1], [0, 0, 5, 0]], [[2, 2, 1, 0], [1, 1, 1, 2]]], dtype)
    run_both(lambda lib, p, x: D(lib).Multinomial(5, p).log_prob(x), w, counts)
    run_both(lambda lib, a, x: D(lib).Multinomial(5, logits=a).log_prob(x), z, counts)
    run_both(lambda lib, p: (D(lib).Multinomial(5, p).mean, D(lib).Multinomial(5, p).variance,
                             D(lib).Multinomial(5, p).entropy()), w)
    with_zero = w.copy()
    with_zero[0, 1] = 0.0
    run_both(lambda lib, p, x: D(lib).Multinomial(5, p).log_prob(x), with_zero, counts[:, :1],
             check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_one_hot_categorical_matches_torch(dtype):
    w = WEIGHTS.astype(dtype)
    hot = np.eye(4, dtype=dtype)[np.array([[1, 3], [0, 2], [3, 3]])]
    run_both(lambda lib, p, x: D(lib).OneHotCategorical(p).log_prob(x), w, hot)
    run_both(lambda lib, p: _stats(D(lib).OneHotCategorical(p)) + (D(lib).OneHotCategorical(p).entropy(),), w)
    one_hot = lambda lib, a: D(lib).OneHotCategorical(logits=a)  # noqa: E731
    run_both(lambda lib, a: (one_hot(lib, a).enumerate_support(), one_hot(lib, a).enumerate_support(False)),
             w, check_grad=False)


def test_straight_through_one_hot_passes_the_gradient_to_probs_like_torch():
    w = WEIGHTS.astype(np.float64)
    run_both(lambda lib, p: D(lib).OneHotCategoricalStraightThrough(p).rsample((3,)) * 0
             + D(lib).OneHotCategoricalStraightThrough(p).probs, w)


@pytest.mark.parametrize("dtype", FLOATS)
def test_negative_binomial_matches_torch_in_both_parametrisations(dtype):
    n, p, z, k = RATES.astype(dtype), PROBS.astype(dtype), LOGITS.astype(dtype), COUNTS.astype(dtype)
    run_both(lambda lib, c, a, x: D(lib).NegativeBinomial(c, a).log_prob(x), n, p, k)
    run_both(lambda lib, c, a, x: D(lib).NegativeBinomial(c, logits=a).log_prob(x), n, z, k)
    run_both(lambda lib, c, a: _stats(D(lib).NegativeBinomial(c, a)), n, p)
    run_both(lambda lib, a, x: D(lib).NegativeBinomial(0.0, a).log_prob(x), p[0], np.zeros(3, dtype),
             check_grad=False)


CB_PROBS = np.array([0.02, 0.3, 0.4995, 0.5, 0.5004, 0.7, 0.98])  # the middle three inside lims


@pytest.mark.parametrize("dtype", FLOATS)
def test_continuous_bernoulli_matches_torch_on_both_sides_of_one_half(dtype):
    p = np.broadcast_to(CB_PROBS, (3, 7)).astype(dtype)
    x = np.random.default_rng(1).uniform(0.01, 0.99, (3, 7)).astype(dtype)
    cb = lambda lib, a: D(lib).ContinuousBernoulli(a)  # noqa: E731
    run_both(lambda lib, a, v: cb(lib, a).log_prob(v), p, x)
    run_both(lambda lib, a, v: cb(lib, a).cdf(v), p, x)
    run_both(lambda lib, a, v: cb(lib, a).icdf(v), p, x)
    run_both(lambda lib, a: (cb(lib, a).mean, cb(lib, a).variance, cb(lib, a).stddev, cb(lib, a).entropy()),
             p)
    logits = np.log(p / (1 - p)).astype(dtype)
    run_both(lambda lib, z, v: D(lib).ContinuousBernoulli(logits=z).log_prob(v), logits, x)
    run_both(lambda lib, z: D(lib).ContinuousBernoulli(logits=z).entropy(), logits)
    run_both(lambda lib, a, b: D(lib).kl_divergence(cb(lib, a), cb(lib, b)), p, p[:, ::-1].copy())
    edges = np.array([-0.5, 0.0, 1.0, 1.5], dtype)
    run_both(lambda lib, a, v: D(lib).ContinuousBernoulli(a, validate_args=False).cdf(v), p[0, :4].copy(),
             edges, check_grad=False)


def test_continuous_bernoulli_draws_shapes_and_checks_match_torch():
    ours = D(mininn).ContinuousBernoulli(mininn.tensor([0.2, 0.5, 0.9]))
    theirs = D(torch).ContinuousBernoulli(torch.tensor([0.2, 0.5, 0.9]))
    assert tuple(ours.rsample((4,)).shape) == tuple(theirs.rsample((4,)).shape)
    assert repr(ours) == repr(theirs).replace("torch.", "mininn.")
    assert tuple(ours.expand((2, 3)).sample().shape) == (2, 3)
    mininn.manual_seed(0)
    draws = ours.sample((40000,)).numpy()
    np.testing.assert_allclose(draws.mean(0), ours.mean.numpy(), atol=0.01)
    np.testing.assert_allclose(draws.var(0), ours.variance.numpy(), rtol=0.05)
    same_error(lambda: D(torch).ContinuousBernoulli(torch.tensor([1.5]), validate_args=True),
               lambda: D(mininn).ContinuousBernoulli(mininn.tensor([1.5]), validate_args=True))
    # without an explicit validate_args, torch clamps probs into (0, 1) first and then accepts them
    clamped = D(mininn).ContinuousBernoulli(mininn.tensor([1.5])).probs
    assert clamped.tolist() == D(torch).ContinuousBernoulli(torch.tensor([1.5])).probs.tolist()
