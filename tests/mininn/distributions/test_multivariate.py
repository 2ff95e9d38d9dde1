"""Distributions over vectors against torch 2.13: MultivariateNormal in its three parametrisations
with broadcast batches, Independent, MixtureSameFamily, and the relaxed (Concrete) families."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

FLOATS = [np.float32, np.float64]
_RNG = np.random.default_rng(11)
A = _RNG.standard_normal((2, 3, 3))
COV = A @ A.transpose(0, 2, 1) + 0.5 * np.eye(3)
LOC = _RNG.standard_normal((4, 2, 3))
VALUE = _RNG.standard_normal((5, 4, 2, 3))


def D(lib):  # noqa: N802 - the distributions module of either library
    return lib.distributions


def _mvn(lib, loc, matrix, kind):
    return D(lib).MultivariateNormal(loc, **{kind: matrix})


def _matrix(kind, dtype):
    if kind == "covariance_matrix":
        return COV.astype(dtype)
    if kind == "precision_matrix":
        return np.linalg.inv(COV).astype(dtype)
    return np.linalg.cholesky(COV).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_matches_torch_in_each_parametrisation(dtype, kind):
    loc, matrix, value = LOC.astype(dtype), _matrix(kind, dtype), VALUE.astype(dtype)
    run_both(lambda lib, m, s, x: _mvn(lib, m, s, kind).log_prob(x), loc, matrix, value)
    run_both(lambda lib, m, s: (_mvn(lib, m, s, kind).entropy(), _mvn(lib, m, s, kind).mean,
                                _mvn(lib, m, s, kind).variance, _mvn(lib, m, s, kind).mode,
                                _mvn(lib, m, s, kind).covariance_matrix, _mvn(lib, m, s, kind).scale_tril,
                                _mvn(lib, m, s, kind).precision_matrix), loc, matrix)


def test_multivariate_normal_shapes_broadcast_like_torch():
    for make in [lambda lib: D(lib).MultivariateNormal(lib.zeros(3), lib.eye(3)),
                 lambda lib: D(lib).MultivariateNormal(lib.zeros(4, 1, 3), lib.eye(3).expand(2, 3, 3)),
                 lambda lib: D(lib).MultivariateNormal(lib.zeros(2, 3), scale_tril=lib.eye(3)).expand([5, 2]),
                 ]:
        ours, theirs = make(mininn), make(torch)
        assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
        assert tuple(ours.event_shape) == tuple(theirs.event_shape)
        assert tuple(ours.rsample((2,)).shape) == tuple(theirs.rsample((2,)).shape)
        assert tuple(ours.entropy().shape) == tuple(theirs.entropy().shape)
        assert repr(ours) == repr(theirs).replace("torch.", "mininn.")
        assert tuple(ours.covariance_matrix.shape) == tuple(theirs.covariance_matrix.shape)


@pytest.mark.parametrize("dtype", FLOATS)
def test_independent_sums_the_reinterpreted_dims_like_torch(dtype):
    loc, scale, value = LOC.astype(dtype), np.abs(LOC).astype(dtype) + 0.5, VALUE.astype(dtype)
    ind = lambda lib, m, s, n: D(lib).Independent(D(lib).Normal(m, s), n)  # noqa: E731
    run_both(lambda lib, m, s, x: (ind(lib, m, s, 1).log_prob(x), ind(lib, m, s, 2).log_prob(x)),
             loc, scale, value)
    run_both(lambda lib, m, s: (ind(lib, m, s, 2).entropy(), ind(lib, m, s, 1).mean,
                                ind(lib, m, s, 1).variance, ind(lib, m, s, 1).mode), loc, scale)
    ours = ind(mininn, mininn.tensor(loc), mininn.tensor(scale), 2)
    theirs = ind(torch, torch.tensor(loc), torch.tensor(scale), 2)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert repr(ours.support) == repr(theirs.support)
    assert repr(ours).replace("mininn.", "torch.") == repr(theirs)
    assert ours.has_rsample and not ours.has_enumerate_support
    assert tuple(ours.expand((3, 4)).sample().shape) == tuple(theirs.expand((3, 4)).sample().shape)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mixture_same_family_matches_torch(dtype):
    weights = _RNG.uniform(0.1, 1.0, (4, 2)).astype(dtype)
    loc, scale = LOC[..., 0].astype(dtype), np.abs(LOC[..., 1]).astype(dtype) + 0.5  # (4, 2) components
    value = VALUE[:, :, 0, 0].astype(dtype)  # (5, 4)

    def gmm(lib, w, m, s):
        return D(lib).MixtureSameFamily(D(lib).Categorical(w), D(lib).Normal(m, s))

    run_both(lambda lib, w, m, s, x: (gmm(lib, w, m, s).log_prob(x), gmm(lib, w, m, s).cdf(x)),
             weights, loc, scale, value)
    run_both(lambda lib, w, m, s: (gmm(lib, w, m, s).mean, gmm(lib, w, m, s).variance), weights, loc, scale)
    mvn_mix = lambda lib, w, m: D(lib).MixtureSameFamily(  # noqa: E731
        D(lib).Categorical(logits=w), D(lib).Independent(D(lib).Normal(m, lib.ones_like(m)), 1))
    run_both(lambda lib, w, m, x: mvn_mix(lib, w, m).log_prob(x), weights[0], LOC[0].astype(dtype),
             VALUE[:, 0, 0].astype(dtype))
    ours = gmm(mininn, *map(mininn.tensor, (weights, loc, scale)))
    theirs = gmm(torch, *map(torch.tensor, (weights, loc, scale)))
    assert repr(ours).replace("mininn.", "torch.") == repr(theirs)
    assert repr(ours.support) == repr(theirs.support)
    assert tuple(ours.sample((3,)).shape) == tuple(theirs.sample((3,)).shape)
    assert tuple(ours.expand((2, 4)).sample().shape) == tuple(theirs.expand((2, 4)).sample().shape)


@pytest.mark.parametrize("dtype", FLOATS)
def test_relaxed_families_match_torch(dtype):
    temperature = np.array(0.7, dtype)
    probs = _RNG.uniform(0.1, 0.9, (2, 3)).astype(dtype)
    unit = _RNG.uniform(0.05, 0.95, (4, 2, 3)).astype(dtype)
    run_both(lambda lib, t, p, x: D(lib).RelaxedBernoulli(t, p).log_prob(x), temperature, probs, unit)
    run_both(lambda lib, t, z, x: D(lib).RelaxedBernoulli(t, logits=z).log_prob(x), temperature,
             probs * 4 - 2, unit)
    simplex = (unit / unit.sum(-1, keepdims=True)).astype(dtype)
    run_both(lambda lib, t, p, x: D(lib).RelaxedOneHotCategorical(t, p).log_prob(x), temperature, probs,
             simplex)
    run_both(lambda lib, t, p: (D(lib).RelaxedOneHotCategorical(t, p).probs,
                                D(lib).RelaxedBernoulli(t, p).logits), temperature, probs)


def _lowrank(lib, loc, w, d):
    return D(lib).LowRankMultivariateNormal(loc, w, d)


@pytest.mark.parametrize("dtype", FLOATS)
def test_low_rank_multivariate_normal_matches_torch(dtype):
    loc, value = LOC.astype(dtype), VALUE.astype(dtype)
    w = _RNG.standard_normal((2, 3, 2)).astype(dtype)
    d = _RNG.uniform(0.5, 2.0, 3).astype(dtype)
    run_both(lambda lib, m, f, g, x: _lowrank(lib, m, f, g).log_prob(x), loc, w, d, value)
    names = ("variance", "covariance_matrix", "scale_tril", "precision_matrix", "mean")
    run_both(lambda lib, m, f, g: (_lowrank(lib, m, f, g).entropy(),
                                   *(getattr(_lowrank(lib, m, f, g), n) for n in names)), loc, w, d)
    ours = _lowrank(mininn, *map(mininn.tensor, (loc, w, d)))
    theirs = _lowrank(torch, *map(torch.tensor, (loc, w, d)))
    assert repr(ours).replace("mininn.", "torch.") == repr(theirs)
    assert tuple(ours.rsample((5,)).shape) == tuple(theirs.rsample((5,)).shape)
    assert tuple(ours.expand((3, 4, 2)).sample().shape) == tuple(theirs.expand((3, 4, 2)).sample().shape)


def test_low_rank_draws_have_its_covariance():
    mininn.manual_seed(2)
    w, d = np.array([[1.0], [0.5], [-1.0]]), np.array([0.5, 1.0, 0.2])
    loc = mininn.tensor([1.0, 0.0, -1.0], dtype=mininn.float64)
    draws = _lowrank(mininn, loc, mininn.tensor(w), mininn.tensor(d)).sample((40000,))
    np.testing.assert_allclose(np.cov(draws.numpy().T), w @ w.T + np.diag(d), atol=0.05)
    np.testing.assert_allclose(draws.numpy().mean(0), [1.0, 0.0, -1.0], atol=0.03)


@pytest.mark.parametrize("call", [
    lambda lib: _lowrank(lib, lib.tensor(0.0), lib.ones(1, 1), lib.ones(1)),
    lambda lib: _lowrank(lib, lib.zeros(3), lib.ones(3), lib.ones(3)),
    lambda lib: _lowrank(lib, lib.zeros(3), lib.ones(2, 1), lib.ones(3)),
    lambda lib: _lowrank(lib, lib.zeros(3), lib.ones(3, 1), lib.ones(2)),
    lambda lib: _lowrank(lib, lib.zeros(2, 3), lib.ones(4, 3, 1), lib.ones(3)),
    lambda lib: _lowrank(lib, lib.zeros(3), lib.ones(3, 1), lib.tensor([1.0, -1.0, 1.0])),
])
def test_low_rank_bad_arguments_raise_torchs_messages(call):
    same_error(lambda: call(torch), lambda: call(mininn))


@pytest.mark.parametrize("dtype", FLOATS)
def test_low_rank_kl_pairs_match_torch(dtype):
    m1, m2 = LOC[0].astype(dtype), LOC[1, :1].astype(dtype)
    w1, w2 = _RNG.standard_normal((2, 3, 2)).astype(dtype), _RNG.standard_normal((3, 1)).astype(dtype)
    d1, d2 = _RNG.uniform(0.5, 2.0, (2, 3)).astype(dtype), _RNG.uniform(0.5, 2.0, 3).astype(dtype)
    tril = np.linalg.cholesky(COV[0]).astype(dtype)
    kl = lambda lib, p, q: D(lib).kl_divergence(p, q)  # noqa: E731
    mvn = lambda lib, m, t: D(lib).MultivariateNormal(m, scale_tril=t)  # noqa: E731
    run_both(lambda lib, a, b, c, e, f, g: kl(lib, _lowrank(lib, a, b, c), _lowrank(lib, e, f, g)),
             m1, w1, d1, m2, w2, d2)
    run_both(lambda lib, a, b, c, e, t: (kl(lib, _lowrank(lib, a, b, c), mvn(lib, e, t)),
                                         kl(lib, mvn(lib, e, t), _lowrank(lib, a, b, c))),
             m1, w1, d1, m2, tril)


@pytest.mark.parametrize("dtype", FLOATS)
def test_tanh_squashed_gaussian_policy_matches_torch(dtype):
    """The soft actor-critic policy: Normal through TanhTransform(cache_size=1), log_prob of its own
    rsample (the cache returns the pre-tanh draw, so saturated actions stay finite)."""
    loc, scale = LOC[0].astype(dtype), np.abs(LOC[1]).astype(dtype) + 0.3
    actions = np.tanh(VALUE[0, 0]).astype(dtype)

    def squashed(lib, m, s):
        return D(lib).TransformedDistribution(D(lib).Normal(m, s), [D(lib).TanhTransform(cache_size=1)])

    run_both(lambda lib, m, s, a: squashed(lib, m, s).log_prob(a), loc, scale, actions)
    for lib in (mininn, torch):
        policy = squashed(lib, lib.tensor(loc), lib.tensor(scale * 0 + 0.01))
        draw = policy.rsample()
        draw_saturated = draw.detach() * 0 + 1.0
        assert np.isfinite(policy.log_prob(draw).detach().numpy()).all()
        assert repr(policy.support) == "Interval(lower_bound=-1.0, upper_bound=1.0)"
        with np.errstate(invalid="ignore", divide="ignore"):  # without the cache: atanh(1) = inf
            saturated = squashed(lib, lib.tensor(loc), lib.tensor(scale)).log_prob(draw_saturated)
        assert not np.isfinite(saturated.detach().numpy()).any()


def test_transforms_with_cache_and_bad_cache_sizes_like_torch():
    for lib in (mininn, torch):
        t = D(lib).ExpTransform()
        assert t.with_cache(1)._cache_size == 1 and t.with_cache(0) is t
        assert D(lib).AffineTransform(1.0, 2.0).with_cache(1)._cache_size == 1
    same_error(lambda: torch.distributions.TanhTransform(cache_size=2),
               lambda: mininn.distributions.TanhTransform(cache_size=2))


@pytest.mark.parametrize("dtype", FLOATS)
def test_logistic_normal_matches_torch(dtype):
    loc, scale = LOC[0].astype(dtype), (np.abs(LOC[1]) + 0.3).astype(dtype)  # (2, 3) -> events of 4
    unit = _RNG.uniform(0.1, 1.0, (5, 2, 4))
    simplex = (unit / unit.sum(-1, keepdims=True)).astype(dtype)
    run_both(lambda lib, m, s, x: D(lib).LogisticNormal(m, s).log_prob(x), loc, scale, simplex)
    pairs = (unit[:, 0, :2] / unit[:, 0, :2].sum(-1, keepdims=True)).astype(dtype)
    run_both(lambda lib, m, s, x: D(lib).LogisticNormal(m[0, 0], s[0, 0]).log_prob(x), loc, scale,
             pairs)  # scalar parameters: one event of 2
    for make in (lambda lib: D(lib).LogisticNormal(lib.zeros(2, 3), lib.ones(3)),
                 lambda lib: D(lib).LogisticNormal(0.0, 1.0),
                 lambda lib: D(lib).LogisticNormal(lib.zeros(3), 1.0).expand((4,))):
        ours, theirs = make(mininn), make(torch)
        assert (tuple(ours.batch_shape), tuple(ours.event_shape)) == (tuple(theirs.batch_shape),
                                                                        tuple(theirs.event_shape))
        assert tuple(ours.rsample((6,)).shape) == tuple(theirs.rsample((6,)).shape)
        assert repr(ours.support) == repr(theirs.support)
    mininn.manual_seed(0)
    draws = D(mininn).LogisticNormal(mininn.zeros(3), 1.0).sample((1000,))
    assert bool(D(mininn).constraints.simplex.check(draws).all())


def test_transformed_distribution_event_dims_and_shape_errors_match_torch():
    def make(lib):
        d = lib.distributions
        transforms = [d.StickBreakingTransform(), d.AffineTransform(0.0, 2.0, event_dim=1)]
        return d.TransformedDistribution(d.Normal(lib.zeros(2, 3), 1.0), transforms)

    ours, theirs = make(mininn), make(torch)
    assert (tuple(ours.batch_shape), tuple(ours.event_shape)) == ((2,), (4,)) == (
        tuple(theirs.batch_shape), tuple(theirs.event_shape))
    value = np.full((2, 4), 0.5)
    run_both(lambda lib, v: make(lib).log_prob(v), value, check_grad=False)
    same_error(lambda: torch.distributions.TransformedDistribution(
                   torch.distributions.Normal(0.0, 1.0), torch.distributions.StickBreakingTransform()),
               lambda: mininn.distributions.TransformedDistribution(
                   mininn.distributions.Normal(0.0, 1.0), mininn.distributions.StickBreakingTransform()))
