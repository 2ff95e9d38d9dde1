"""The continuous families against torch 2.13: log_prob, cdf/icdf, entropy, mean, variance, stddev and
mode, with gradients, in float32 and float64 (Gamma, Chi2, Exponential, Beta, Dirichlet, Laplace,
Cauchy, StudentT, LogNormal, HalfNormal, HalfCauchy, Gumbel, Weibull, Pareto, InverseGamma,
FisherSnedecor, Kumaraswamy)."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.distributions._parity import run_both_trigamma

torch = pytest.importorskip("torch")

FLOATS = [np.float32, np.float64]
_RNG = np.random.default_rng(3)
POS_A = _RNG.uniform(0.3, 4.0, (2, 3))
POS_B = _RNG.uniform(0.5, 3.0, (2, 3))
POSITIVE_VALUES = _RNG.uniform(0.05, 5.0, (4, 2, 3))
REAL_VALUES = _RNG.standard_normal((4, 2, 3)) * 2
UNIT_VALUES = _RNG.uniform(0.02, 0.98, (4, 2, 3))
LOC = _RNG.standard_normal((2, 3))
QUANTILES = _RNG.uniform(0.02, 0.98, (2, 3))


def D(lib):  # noqa: N802 - the distributions module of either library
    return lib.distributions


def _stats(dist, names=("mean", "variance", "stddev", "mode")):
    return tuple(getattr(dist, n) for n in names) + (dist.entropy(),)


@pytest.mark.parametrize("dtype", FLOATS)
def test_gamma_and_chi2_match_torch(dtype):
    a, b, v = POS_A.astype(dtype), POS_B.astype(dtype), POSITIVE_VALUES.astype(dtype)
    run_both(lambda lib, c, r, x: D(lib).Gamma(c, r).log_prob(x), a, b, v)
    run_both_trigamma(lambda lib, c, r: _stats(D(lib).Gamma(c, r)), a, b)
    run_both(lambda lib, c, x: D(lib).Chi2(c).log_prob(x), a, v)
    run_both_trigamma(lambda lib, c: _stats(D(lib).Chi2(c)) + (D(lib).Chi2(c).df,), a)
    run_both(lambda lib, c, r: D(lib).Gamma(c, r).log_prob(2.0), a, b)  # a number is taken, as in torch


@pytest.mark.parametrize("dtype", FLOATS)
def test_gamma_cdf_is_the_regularised_incomplete_gamma_with_torchs_gradient_in_the_value(dtype):
    a, b, v = POS_A.astype(dtype), POS_B.astype(dtype), POSITIVE_VALUES.astype(dtype)
    # torch's igamma is itself accurate to ~1e-10 in places (checked against mpmath); ours to ~1e-14
    scale = 1e4 if dtype == np.float64 else 1
    run_both(lambda lib, c, r, x: D(lib).Gamma(c.detach(), r).cdf(x), a, b, v, scale=scale)
    run_both(lambda lib, c, x: D(lib).Chi2(c.detach()).cdf(x), a, v, scale=scale)


@pytest.mark.parametrize("dtype", FLOATS)
def test_exponential_matches_torch(dtype):
    r, v, q = POS_B.astype(dtype), POSITIVE_VALUES.astype(dtype), QUANTILES.astype(dtype)
    run_both(lambda lib, a, x: D(lib).Exponential(a).log_prob(x), r, v)
    run_both(lambda lib, a, x: D(lib).Exponential(a).cdf(x), r, v)
    run_both(lambda lib, a, p: D(lib).Exponential(a).icdf(p), r, q)
    run_both(lambda lib, a: _stats(D(lib).Exponential(a)), r)


@pytest.mark.parametrize("dtype", FLOATS)
def test_beta_and_dirichlet_match_torch(dtype):
    a, b, v = POS_A.astype(dtype), POS_B.astype(dtype), UNIT_VALUES.astype(dtype)
    run_both(lambda lib, c1, c0, x: D(lib).Beta(c1, c0).log_prob(x), a, b, v)
    run_both_trigamma(lambda lib, c1, c0: _stats(D(lib).Beta(c1, c0)) + (D(lib).Beta(c1, c0).concentration1,),
                      a, b)
    simplex = (UNIT_VALUES / UNIT_VALUES.sum(-1, keepdims=True)).astype(dtype)
    run_both(lambda lib, c, x: D(lib).Dirichlet(c).log_prob(x), a, simplex)
    run_both_trigamma(lambda lib, c: _stats(D(lib).Dirichlet(c)), a)
    below_one = np.array([[0.5, 0.3, 0.9], [2.0, 0.5, 3.0]], dtype)  # the all-below-1 row's mode is a corner
    run_both(lambda lib, c: D(lib).Dirichlet(c).mode, below_one, check_grad=False)
    run_both(lambda lib, c1, c0: D(lib).Beta(c1, c0).mode, below_one[0], below_one[1], check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("family", ["Laplace", "Cauchy"])
def test_laplace_and_cauchy_match_torch(dtype, family):
    m, s = LOC.astype(dtype), POS_B.astype(dtype)
    v, q = REAL_VALUES.astype(dtype), QUANTILES.astype(dtype)
    run_both(lambda lib, a, b, x: getattr(D(lib), family)(a, b).log_prob(x), m, s, v)
    run_both(lambda lib, a, b, x: getattr(D(lib), family)(a, b).cdf(x), m, s, v)
    run_both(lambda lib, a, b, p: getattr(D(lib), family)(a, b).icdf(p), m, s, q)
    run_both(lambda lib, a, b: _stats(getattr(D(lib), family)(a, b)), m, s, check_grad=family == "Laplace")


@pytest.mark.parametrize("dtype", FLOATS)
def test_student_t_matches_torch_including_undefined_moments(dtype):
    df, m, s, v = POS_A.astype(dtype), LOC.astype(dtype), POS_B.astype(dtype), REAL_VALUES.astype(dtype)
    run_both(lambda lib, d, a, b, x: D(lib).StudentT(d, a, b).log_prob(x), df, m, s, v)
    student = lambda lib, d, a, b: D(lib).StudentT(d, a, b)  # noqa: E731
    run_both_trigamma(lambda lib, d, a, b: (student(lib, d, a, b).entropy(), student(lib, d, a, b).mode),
                      df, m, s)
    edge_df = np.array([0.5, 1.0, 1.5, 2.0, 3.0, 7.0], dtype)
    run_both(lambda lib, d: (D(lib).StudentT(d).mean, D(lib).StudentT(d, 0.0, 2.0).variance), edge_df,
             check_grad=False)
    run_both(lambda lib, d, x: D(lib).StudentT(d).log_prob(x), df[0], v[0, 0])  # loc/scale defaults


@pytest.mark.parametrize("dtype", FLOATS)
def test_lognormal_and_halfnormal_match_torch(dtype):
    m, s = LOC.astype(dtype), POS_B.astype(dtype)
    v, q = POSITIVE_VALUES.astype(dtype), QUANTILES.astype(dtype)
    run_both(lambda lib, a, b, x: D(lib).LogNormal(a, b).log_prob(x), m, s, v)
    run_both(lambda lib, a, b, x: D(lib).LogNormal(a, b).cdf(x), m, s, v)
    run_both(lambda lib, a, b, p: D(lib).LogNormal(a, b).icdf(p), m, s, q)
    run_both(lambda lib, a, b: _stats(D(lib).LogNormal(a, b)), m, s)
    run_both(lambda lib, b, x: D(lib).HalfNormal(b).log_prob(x), s, v)
    run_both(lambda lib, b, x: D(lib).HalfNormal(b).cdf(x), s, v)
    run_both(lambda lib, b, p: D(lib).HalfNormal(b).icdf(p), s, q)
    run_both(lambda lib, b: _stats(D(lib).HalfNormal(b)), s)
    signed = REAL_VALUES[0].astype(dtype)
    run_both(lambda lib, b, x: D(lib).HalfNormal(b, validate_args=False).log_prob(x), s, signed,
             check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_half_cauchy_matches_torch(dtype):
    s, v, q = POS_B.astype(dtype), POSITIVE_VALUES.astype(dtype), QUANTILES.astype(dtype)
    run_both(lambda lib, b, x: D(lib).HalfCauchy(b).log_prob(x), s, v)
    run_both(lambda lib, b, x: D(lib).HalfCauchy(b).cdf(x), s, v)
    run_both(lambda lib, b, p: D(lib).HalfCauchy(b).icdf(p), s, q)
    run_both(lambda lib, b: _stats(D(lib).HalfCauchy(b), ("mean", "mode", "variance")), s, check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_gumbel_weibull_and_pareto_match_torch(dtype):
    m, s = LOC.astype(dtype), POS_B.astype(dtype)
    v, q, c = REAL_VALUES.astype(dtype), QUANTILES.astype(dtype), POS_A.astype(dtype)
    run_both(lambda lib, a, b, x: D(lib).Gumbel(a, b).log_prob(x), m, s, v)
    run_both(lambda lib, a, b, x: D(lib).Gumbel(a, b).cdf(x), m, s, (v / 4).astype(dtype))  # not 0 or 1
    run_both(lambda lib, a, b, p: D(lib).Gumbel(a, b).icdf(p), m, s, q)
    run_both(lambda lib, a, b: _stats(D(lib).Gumbel(a, b)), m, s)
    positive = POSITIVE_VALUES.astype(dtype)
    run_both(lambda lib, b, k, x: D(lib).Weibull(b, k).log_prob(x), s, c, positive)
    run_both(lambda lib, b, k, x: D(lib).Weibull(b, k).cdf(x), s, c, positive)
    run_both(lambda lib, b, k: _stats(D(lib).Weibull(b, k)), s, c + 1.0)
    above = (POSITIVE_VALUES + 3.0).astype(dtype)
    run_both(lambda lib, b, a, x: D(lib).Pareto(b, a).log_prob(x), s, c, above)
    run_both(lambda lib, b, a, x: D(lib).Pareto(b, a).cdf(x), s, c, above)
    run_both(lambda lib, b, a, p: D(lib).Pareto(b, a).icdf(p), s, c, q)
    run_both(lambda lib, b, a: _stats(D(lib).Pareto(b, a)), s, c + 2.5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_inverse_gamma_fisher_snedecor_and_kumaraswamy_match_torch(dtype):
    a, b = POS_A.astype(dtype), POS_B.astype(dtype)
    v, u = POSITIVE_VALUES.astype(dtype), UNIT_VALUES.astype(dtype)
    run_both(lambda lib, c, r, x: D(lib).InverseGamma(c, r).log_prob(x), a, b, v)
    run_both_trigamma(lambda lib, c, r: _stats(D(lib).InverseGamma(c + 2.5, r)), a, b)
    run_both(lambda lib, c, r: (D(lib).InverseGamma(c, r).mean, D(lib).InverseGamma(c, r).variance),
             a, b, check_grad=False)  # infinite where concentration <= 1 or 2
    run_both(lambda lib, c, r, x: D(lib).FisherSnedecor(c, r).log_prob(x), a, b, v)
    big = (a + 4.5).astype(dtype)
    run_both(lambda lib, c, r: (D(lib).FisherSnedecor(c, r).mean, D(lib).FisherSnedecor(c, r).variance,
                                D(lib).FisherSnedecor(c, r).mode), big, big[::-1].copy())
    run_both(lambda lib, c, r: (D(lib).FisherSnedecor(c, r).mean, D(lib).FisherSnedecor(c, r).variance,
                                D(lib).FisherSnedecor(c, r).mode), a, b, check_grad=False)
    run_both(lambda lib, c, r, x: D(lib).Kumaraswamy(c, r).log_prob(x), a, b, u)
    run_both(lambda lib, c, r, x: D(lib).Kumaraswamy(c, r).cdf(x), a, b, u)
    run_both_trigamma(lambda lib, c, r: _stats(D(lib).Kumaraswamy(c + 1.0, r + 1.0)), a, b)
    run_both(lambda lib, c, r: D(lib).Kumaraswamy(c, r).mode, a, b, check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_von_mises_matches_torch_to_its_bessel_approximation(dtype):
    """torch's log I0/I1 are polynomial fits good to ~1e-7 relative; ours are exact (checked
    against scipy below), so values and gradients are compared at that accuracy."""
    loc, kappa = LOC.astype(dtype), np.array([[0.05, 0.8, 3.0], [12.0, 60.0, 400.0]], dtype)
    v = REAL_VALUES.astype(dtype)
    tolerance = dict(rtol=2e-6, atol=2e-6) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-5)
    for lib_value in (lambda lib, m, k, x: D(lib).VonMises(m, k).log_prob(x),
                      lambda lib, m, k, x: D(lib).VonMises(m, k).variance):
        ours_in = [mininn.tensor(a, requires_grad=True) for a in (loc, kappa, v)]
        theirs_in = [torch.tensor(a, requires_grad=True) for a in (loc, kappa, v)]
        got, want = lib_value(mininn, *ours_in), lib_value(torch, *theirs_in)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **tolerance)
        got.sum().backward()
        want.sum().backward()
        for o, t in zip(ours_in, theirs_in):
            if t.grad is not None:
                np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), **tolerance)


def test_von_mises_log_normaliser_is_exact():
    special = pytest.importorskip("scipy.special")
    kappa = np.array([1e-4, 0.3, 2.0, 49.0, 51.0, 700.0, 1e5])
    from mininn.distributions._special import log_bessel_i_array
    for order in (0, 1):
        exact = np.log(special.ive(order, kappa)) + kappa
        np.testing.assert_allclose(log_bessel_i_array(order, kappa), exact, rtol=1e-14, atol=1e-16)
    small = 1e-4  # log I0(x) = x**2 / 4 - x**4 / 64 + ... to full relative precision
    series = small**2 / 4 - small**4 / 64
    np.testing.assert_allclose(log_bessel_i_array(0, np.array([small])), series, rtol=1e-14)


def _generalized_pareto(lib, m, s, k):
    return D(lib).GeneralizedPareto(m, s, k)


GP_XI = np.array([[-0.3, 0.0, 0.4], [0.9, -0.1, 1e-9]])  # negative, zero, positive, near zero
GP_VALUE = LOC + 0.05 * POS_B  # inside every support


@pytest.mark.parametrize("dtype", FLOATS)
def test_generalized_pareto_matches_torch_for_each_sign_of_the_shape(dtype):
    loc, scale, xi, q = LOC.astype(dtype), POS_B.astype(dtype), GP_XI.astype(dtype), QUANTILES.astype(dtype)
    gp = _generalized_pareto
    if dtype == np.float32:  # torch 2.13's log_prob and cdf raise for float64 ("Double did not match Float")
        run_both(lambda lib, m, s, k, x: gp(lib, m, s, k).log_prob(x), loc, scale, xi, GP_VALUE.astype(dtype))
        run_both(lambda lib, m, s, k, x: gp(lib, m, s, k).cdf(x), loc, scale, xi, GP_VALUE.astype(dtype))
    run_both(lambda lib, m, s, k, p: gp(lib, m, s, k).icdf(p), loc, scale, xi, q)
    run_both(lambda lib, m, s, k: (gp(lib, m, s, k).mean, gp(lib, m, s, k).variance, gp(lib, m, s, k).mode,
                                   gp(lib, m, s, k).entropy()), loc, scale, xi, check_grad=False)
    ours = gp(mininn, *map(mininn.tensor, (loc, scale, xi)))
    theirs = gp(torch, *map(torch.tensor, (loc, scale, xi)))
    assert repr(ours.support).replace("mininn.", "torch.") == repr(theirs.support)
    assert tuple(ours.rsample((4,)).shape) == tuple(theirs.rsample((4,)).shape)


def test_generalized_pareto_in_float64_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    ours = _generalized_pareto(mininn, *map(mininn.tensor, (LOC, POS_B, GP_XI)))
    value = mininn.tensor(GP_VALUE)
    want = stats.genpareto(GP_XI, loc=LOC, scale=POS_B)
    np.testing.assert_allclose(ours.log_prob(value).numpy(), want.logpdf(GP_VALUE), rtol=1e-7)
    np.testing.assert_allclose(ours.cdf(value).numpy(), want.cdf(GP_VALUE), rtol=1e-7)
