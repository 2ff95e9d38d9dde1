"""mininn.distributions against torch 2.13: log_prob, entropy, moments, parametrisations, gradients,
sample shapes and statistics, argument validation messages, reprs."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import mininn.distributions as MD
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")
TD = torch.distributions

FLOATS = [np.float32, np.float64]
_RNG = np.random.default_rng(0)
LOC, SCALE = _RNG.standard_normal((2, 3)), _RNG.uniform(0.5, 2.0, 3)
VALUE = _RNG.standard_normal((4, 2, 3))
PROBS = _RNG.uniform(0.05, 0.95, (2, 3))
COINS = (_RNG.random((4, 2, 3)) < 0.5).astype(np.float64)
WEIGHTS = _RNG.uniform(0.1, 1.0, (2, 4))
CATEGORIES = _RNG.integers(0, 4, (3, 2))


def D(lib):  # noqa: N802 - the distributions module of either library
    return TD if lib is torch else MD


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_matches_torch_with_gradients(dtype):
    loc, scale, value = LOC.astype(dtype), SCALE.astype(dtype), VALUE.astype(dtype)
    run_both(lambda lib, m, s, v: D(lib).Normal(m, s).log_prob(v), loc, scale, value)
    run_both(lambda lib, m, s, v: D(lib).Normal(m, s).cdf(v), loc, scale, value)
    run_both(lambda lib, m, s: (D(lib).Normal(m, s).entropy(), D(lib).Normal(m, s).mean,
                                D(lib).Normal(m, s).variance, D(lib).Normal(m, s).stddev,
                                D(lib).Normal(m, s).mode), loc, scale)


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_matches_torch_with_gradients(dtype):
    low, high = LOC.astype(dtype), (LOC + SCALE).astype(dtype)
    inside = (LOC + 0.3 * SCALE).astype(dtype)
    run_both(lambda lib, a, b, v: D(lib).Uniform(a, b).log_prob(v), low, high, inside)
    run_both(lambda lib, a, b, v: D(lib).Uniform(a, b).cdf(v), low, high, inside)
    run_both(lambda lib, a, b: (D(lib).Uniform(a, b).entropy(), D(lib).Uniform(a, b).mean,
                                D(lib).Uniform(a, b).variance, D(lib).Uniform(a, b).stddev), low, high)
    outside = np.array([-1.0, 0.5, 2.0], dtype)
    run_both(lambda lib, v: D(lib).Uniform(0.0, 1.0, validate_args=False).log_prob(v), outside,
             check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_bernoulli_matches_torch_in_both_parametrisations(dtype):
    probs, logits, coins = PROBS.astype(dtype), LOC.astype(dtype), COINS.astype(dtype)
    run_both(lambda lib, p, v: D(lib).Bernoulli(probs=p).log_prob(v), probs, coins)
    run_both(lambda lib, z, v: D(lib).Bernoulli(logits=z).log_prob(v), logits, coins)
    run_both(lambda lib, p: (D(lib).Bernoulli(probs=p).entropy(), D(lib).Bernoulli(probs=p).logits,
                             D(lib).Bernoulli(probs=p).variance, D(lib).Bernoulli(p).mean), probs)
    run_both(lambda lib, z: (D(lib).Bernoulli(logits=z).entropy(), D(lib).Bernoulli(logits=z).probs), logits)
    run_both(lambda lib, p: D(lib).Bernoulli(probs=p).mode, np.array([0.2, 0.5, 0.7], dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_categorical_matches_torch_in_both_parametrisations(dtype):
    weights = WEIGHTS.astype(dtype)
    run_both(lambda lib, p, i: D(lib).Categorical(probs=p).log_prob(i), weights, CATEGORIES)
    run_both(lambda lib, z, i: D(lib).Categorical(logits=z).log_prob(i), weights * 3, CATEGORIES)
    run_both(lambda lib, p: (D(lib).Categorical(probs=p).entropy(), D(lib).Categorical(probs=p).logits,
                             D(lib).Categorical(probs=p).probs), weights)
    run_both(lambda lib, z: (D(lib).Categorical(logits=z).entropy(), D(lib).Categorical(logits=z).probs,
                             D(lib).Categorical(logits=z).logits), weights)
    with_zero = weights.copy()
    with_zero[0, 1] = 0.0
    run_both(lambda lib, p: D(lib).Categorical(probs=p).entropy(), with_zero)
    run_both(lambda lib, p: (D(lib).Categorical(p).mean, D(lib).Categorical(p).variance,
                             D(lib).Categorical(p).mode), weights, check_grad=False)


def test_shapes_supports_and_flags_match_torch():
    pairs = [
        (lambda lib: D(lib).Normal(0.0, 1.0)), (lambda lib: D(lib).Normal(lib.zeros(2, 3), 1.0)),
        (lambda lib: D(lib).Uniform(lib.zeros(3), 2.0)), (lambda lib: D(lib).Bernoulli(logits=lib.zeros(2))),
        (lambda lib: D(lib).Categorical(probs=lib.ones(3, 4))),
    ]
    for make in pairs:
        ours, theirs = make(mininn), make(torch)
        assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
        assert tuple(ours.event_shape) == tuple(theirs.event_shape)
        for flag in ("has_rsample", "has_enumerate_support"):
            assert getattr(ours, flag) == getattr(theirs, flag)
        assert repr(ours.support) == repr(theirs.support)
        assert repr(ours).replace("mininn.", "torch.") == repr(theirs)
        sample, t_sample = ours.sample((5,)), theirs.sample((5,))
        assert tuple(sample.shape) == tuple(t_sample.shape)
        assert sample.dtype.name == str(t_sample.dtype).removeprefix("torch.")
    for make in pairs[3:]:
        ours, theirs = make(mininn), make(torch)
        assert ours.enumerate_support().tolist() == theirs.enumerate_support().tolist()
        assert tuple(ours.enumerate_support(False).shape) == tuple(theirs.enumerate_support(False).shape)


def test_samples_have_the_distributions_statistics_and_follow_manual_seed():
    mininn.manual_seed(0)
    normal = MD.Normal(mininn.tensor([1.0, -2.0]), mininn.tensor([0.5, 3.0])).sample((20000,)).numpy()
    np.testing.assert_allclose(normal.mean(0), [1.0, -2.0], atol=0.1)
    np.testing.assert_allclose(normal.std(0), [0.5, 3.0], rtol=0.05)
    uniform = MD.Uniform(mininn.tensor([1.0, 2.0]), mininn.tensor([3.0, 6.0])).rsample((20000,)).numpy()
    assert uniform.min() >= 1.0 and uniform[:, 1].max() < 6.0
    np.testing.assert_allclose(uniform.var(0), [4 / 12, 16 / 12], rtol=0.05)
    coins = MD.Bernoulli(logits=mininn.tensor([0.0, 2.0])).sample((20000,)).numpy()
    np.testing.assert_allclose(coins.mean(0), [0.5, 1 / (1 + np.exp(-2))], atol=0.02)
    draws = MD.Categorical(probs=mininn.tensor([0.2, 0.3, 0.5])).sample((20000,)).numpy()
    np.testing.assert_allclose(np.bincount(draws) / 20000, [0.2, 0.3, 0.5], atol=0.02)
    mininn.manual_seed(5)
    a = MD.Normal(0.0, 1.0).sample((3,))
    mininn.manual_seed(5)
    assert MD.Normal(0.0, 1.0).sample((3,)).tolist() == a.tolist()


def test_rsample_is_differentiable_and_sample_is_not():
    loc = mininn.tensor([1.0, 2.0], requires_grad=True)
    scale = mininn.tensor([0.5, 3.0], requires_grad=True)
    draw = MD.Normal(loc, scale).rsample((1000,))
    draw.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1000.0, 1000.0])
    noise = (draw.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(scale.grad.numpy(), noise.sum(0).numpy(), rtol=1e-4)
    assert not MD.Normal(loc, scale).sample().requires_grad
    same_error(lambda: TD.Bernoulli(0.3).rsample(), lambda: MD.Bernoulli(0.3).rsample())


@pytest.mark.parametrize("call", [
    lambda lib: D(lib).Normal(0.0, -1.0),
    lambda lib: D(lib).Normal(lib.zeros(2), lib.tensor([1.0, -1.0])),
    lambda lib: D(lib).Normal(lib.zeros(2), lib.ones(3)),
    lambda lib: D(lib).Normal(0.0, 1.0).log_prob(lib.tensor(float("nan"))),
    lambda lib: D(lib).Normal(lib.zeros(2), 1.0).log_prob(lib.zeros(3)),
    lambda lib: D(lib).Normal(0.0, 1.0).log_prob(1.0),
    lambda lib: D(lib).Uniform(1.0, 0.0),
    lambda lib: D(lib).Uniform(lib.zeros(2), lib.tensor([1.0, -1.0])),
    lambda lib: D(lib).Uniform(0.0, 1.0).log_prob(lib.tensor(2.0)),
    lambda lib: D(lib).Bernoulli(probs=1.5),
    lambda lib: D(lib).Bernoulli(0.5, logits=0.0),
    lambda lib: D(lib).Bernoulli(),
    lambda lib: D(lib).Bernoulli(probs=0.3).log_prob(lib.tensor(0.5)),
    lambda lib: D(lib).Categorical(lib.tensor([0.2, -0.8])),
    lambda lib: D(lib).Categorical(logits=lib.tensor(1.0)),
    lambda lib: D(lib).Categorical(probs=lib.tensor(1.0)),
    lambda lib: D(lib).Categorical(probs=lib.tensor([0.2, 0.8])).log_prob(lib.tensor(2)),
])
def test_invalid_arguments_and_values_raise_torchs_messages(call):
    same_error(lambda: call(torch), lambda: call(mininn))


def test_validation_can_be_turned_off():
    assert MD.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    MD.Distribution.set_default_validate_args(False)
    try:
        assert MD.Bernoulli(probs=1.5).probs.item() == 1.5
    finally:
        MD.Distribution.set_default_validate_args(True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_kl_divergence_matches_torch_including_infinite_and_vanishing_terms(dtype):
    kl = lambda lib, p, q: D(lib).kl_divergence(p, q)  # noqa: E731
    loc, scale = LOC.astype(dtype), np.broadcast_to(SCALE, (2, 3)).astype(dtype)
    run_both(lambda lib, a, b, c, d: kl(lib, D(lib).Normal(a, b), D(lib).Normal(c, d)),
             loc, scale, loc[::-1].copy(), scale[::-1].copy())
    probs = PROBS.astype(dtype)
    run_both(lambda lib, a, b: kl(lib, D(lib).Bernoulli(a), D(lib).Bernoulli(b)), probs, probs[::-1].copy())
    edges_p, edges_q = probs.copy(), probs[::-1].copy()
    edges_p[0, 0], edges_q[1, 1], edges_q[1, 2] = 0.0, 0.0, 1.0
    run_both(lambda lib, a, b: kl(lib, D(lib).Bernoulli(a), D(lib).Bernoulli(b)), edges_p, edges_q,
             check_grad=False)
    weights = WEIGHTS.astype(dtype)
    with_zero = weights.copy()
    with_zero[0, 1] = 0.0
    run_both(lambda lib, a, b: kl(lib, D(lib).Categorical(a), D(lib).Categorical(b)),
             with_zero, weights[::-1].copy())
    run_both(lambda lib, a, b: kl(lib, D(lib).Categorical(logits=a), D(lib).Categorical(logits=b)),
             weights * 3, weights[::-1].copy())
    lows, highs = np.array([0.0, 0.5], dtype), np.array([1.0, 1.0], dtype)
    run_both(lambda lib, a, b, c, d: kl(lib, D(lib).Uniform(a, b), D(lib).Uniform(c, d)),
             lows, highs, np.array([-1.0, 0.6], dtype), np.array([2.0, 3.0], dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_icdf_inverts_the_cdf_like_torch(dtype):
    p = np.random.default_rng(1).uniform(0.01, 0.99, (2, 3)).astype(dtype)
    loc, scale = LOC.astype(dtype), SCALE.astype(dtype)
    run_both(lambda lib, a, b, q: D(lib).Normal(a, b).icdf(q), loc, scale, p)
    run_both(lambda lib, a, b, q: D(lib).Uniform(a, a + b).icdf(q), loc, scale, p)


def test_expand_repeats_the_distribution_over_a_batch_like_torch():
    pairs = [
        lambda lib: D(lib).Normal(lib.zeros(2), 1.0).expand((3, 2)),
        lambda lib: D(lib).Uniform(lib.zeros(2), 1.0).expand((3, 2)),
        lambda lib: D(lib).Bernoulli(probs=lib.tensor([0.2, 0.3])).expand((4, 2)),
        lambda lib: D(lib).Categorical(logits=lib.ones(2, 3)).expand((4, 2)),
    ]
    for make in pairs:
        ours, theirs = make(mininn), make(torch)
        assert repr(ours).replace("mininn.", "torch.") == repr(theirs)
        assert tuple(ours.sample().shape) == tuple(theirs.sample().shape)
    same_error(lambda: TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Cauchy(0.0, 1.0)),
               lambda: MD.kl_divergence(MD.Normal(0.0, 1.0), MD.Cauchy(0.0, 1.0)))


def test_a_user_subclass_written_for_torch_works():
    """A custom distribution as users write one: arg_constraints, support, lazy_property and
    _get_checked_instance in expand."""

    def define(lib):
        dist, constraints, utils = lib.distributions, lib.distributions.constraints, lib.distributions.utils

        class Scaled(dist.Distribution):
            arg_constraints = {"rate": constraints.positive}  # noqa: RUF012
            support = constraints.positive
            has_rsample = True

            def __init__(self, rate, validate_args=None):
                (self.rate,) = utils.broadcast_all(rate)
                super().__init__(self.rate.shape, validate_args=validate_args)

            @utils.lazy_property
            def doubled(self):
                return self.rate * 2

            def expand(self, batch_shape, _instance=None):
                new = self._get_checked_instance(Scaled, _instance)
                new.rate = self.rate.expand(batch_shape)
                super(Scaled, new).__init__(lib.Size(batch_shape), validate_args=False)
                return new

            def rsample(self, sample_shape=()):
                return self.doubled.expand(self._extended_shape(sample_shape))

            def log_prob(self, value):
                if self._validate_args:
                    self._validate_sample(value)
                return self.rate.log() - self.rate * value

        return Scaled

    ours, theirs = define(mininn)(mininn.tensor([1.0, 2.0])), define(torch)(torch.tensor([1.0, 2.0]))
    assert ours.sample((3,)).tolist() == theirs.sample((3,)).tolist()
    assert tuple(ours.expand((4, 2)).batch_shape) == tuple(theirs.expand((4, 2)).batch_shape)
    got, want = ours.log_prob(mininn.tensor([0.5, 1.0])), theirs.log_prob(torch.tensor([0.5, 1.0]))
    assert got.tolist() == want.tolist()
    same_error(lambda: define(torch)(torch.tensor([-1.0])), lambda: define(mininn)(mininn.tensor([-1.0])))
    same_error(lambda: define(torch)(torch.tensor([1.0])).log_prob(torch.tensor([-1.0])),
               lambda: define(mininn)(mininn.tensor([1.0])).log_prob(mininn.tensor([-1.0])))
    same_error(lambda: TD.Chi2(torch.tensor(1.0)).icdf(torch.tensor(0.5)),
               lambda: MD.Chi2(mininn.tensor(1.0)).icdf(mininn.tensor(0.5)))


def test_expand_keeps_the_validation_setting_like_torch():
    for lib in (mininn, torch):
        d = lib.distributions
        unchecked = (d.Normal(lib.zeros(2), 1.0, validate_args=False),
                     d.Gamma(lib.ones(2), 1.0, validate_args=False),
                     d.Categorical(logits=lib.zeros(2, 3), validate_args=False))
        for dist in unchecked:
            assert dist.expand((4, 2))._validate_args is False
        assert d.Normal(lib.zeros(2), 1.0, validate_args=True).expand((3, 2))._validate_args is True
