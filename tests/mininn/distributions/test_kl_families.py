"""kl_divergence for the pairs torch registers among the families, against torch 2.13 (values and
gradients), with the infinite cases and the refusals torch gives."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn.distributions.kl_infinite import _INFINITE
from tests.mininn._tensor_parity import run_both
from tests.mininn.distributions._parity import run_both_trigamma
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

FLOATS = [np.float32, np.float64]
_RNG = np.random.default_rng(5)
P_POS, Q_POS = _RNG.uniform(0.4, 3.0, (2, 3)), _RNG.uniform(0.4, 3.0, (2, 3))
P_POS2, Q_POS2 = _RNG.uniform(0.4, 3.0, (2, 3)), _RNG.uniform(0.4, 3.0, (2, 3))
P_REAL, Q_REAL = _RNG.standard_normal((2, 3)), _RNG.standard_normal((2, 3))
P_PROB, Q_PROB = _RNG.uniform(0.1, 0.9, (2, 3)), _RNG.uniform(0.1, 0.9, (2, 3))


def D(lib):  # noqa: N802 - the distributions module of either library
    return lib.distributions


def kl(lib, p, q):
    return D(lib).kl_divergence(p, q)


TWO_PARAM = {  # family -> (constructor, whether digamma's derivative enters the gradient)
    "Gamma": (lambda lib, a, b: D(lib).Gamma(a, b), True),
    "Beta": (lambda lib, a, b: D(lib).Beta(a, b), True),
    "Laplace": (lambda lib, a, b: D(lib).Laplace(a - 1.0, b), False),
    "Cauchy": (lambda lib, a, b: D(lib).Cauchy(a - 1.0, b), False),
    "LogNormal": (lambda lib, a, b: D(lib).LogNormal(a - 1.0, b), False),
    "Gumbel": (lambda lib, a, b: D(lib).Gumbel(a - 1.0, b), True),
}
ONE_PARAM = {
    "Exponential": lambda lib, a: D(lib).Exponential(a),
    "Poisson": lambda lib, a: D(lib).Poisson(a),
    "Chi2": lambda lib, a: D(lib).Chi2(a),
    "HalfNormal": lambda lib, a: D(lib).HalfNormal(a),
    "Dirichlet": lambda lib, a: D(lib).Dirichlet(a),
    "Geometric": lambda lib, a: D(lib).Geometric(a / 3.1),
    "Binomial": lambda lib, a: D(lib).Binomial(5, a / 3.1),
    "OneHotCategorical": lambda lib, a: D(lib).OneHotCategorical(a),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("family", sorted(TWO_PARAM))
def test_two_parameter_families_kl_matches_torch(dtype, family):
    make, trigamma = TWO_PARAM[family]
    check = run_both_trigamma if trigamma else run_both
    arrays = [x.astype(dtype) for x in (P_POS, P_POS2, Q_POS, Q_POS2)]
    check(lambda lib, a, b, c, d: kl(lib, make(lib, a, b), make(lib, c, d)), *arrays)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("family", sorted(ONE_PARAM))
def test_one_parameter_families_kl_matches_torch(dtype, family):
    make = ONE_PARAM[family]
    run_both_trigamma(lambda lib, a, b: kl(lib, make(lib, a), make(lib, b)), P_POS.astype(dtype),
                      Q_POS.astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_pareto_kl_matches_torch_and_is_infinite_where_p_reaches_below_q(dtype):
    a, b, c = P_POS.astype(dtype), Q_POS.astype(dtype), P_POS2.astype(dtype)
    pareto = lambda lib, s, t, u, v: kl(lib, D(lib).Pareto(s, t), D(lib).Pareto(u, v))  # noqa: E731
    run_both(lambda lib, s, t, u, v: pareto(lib, s + u, t, u, v), a, b, c, a[::-1].copy())
    run_both(pareto, a, b, c, a[::-1].copy(), check_grad=False)


@pytest.mark.parametrize("dtype", FLOATS)
def test_cross_family_pairs_match_torch(dtype):
    a, b, c = P_POS.astype(dtype), Q_POS.astype(dtype), P_REAL.astype(dtype)
    run_both_trigamma(lambda lib, x, y, z: (kl(lib, D(lib).Exponential(x), D(lib).Gamma(y, z)),
                                            kl(lib, D(lib).Gamma(y, z), D(lib).Exponential(x))),
                      a, b, a[::-1].copy())
    run_both(lambda lib, m, s, n, t: kl(lib, D(lib).Normal(m, s), D(lib).Laplace(n, t)),
             c, a, c[::-1].copy(), b)
    run_both(lambda lib, p, r: kl(lib, D(lib).Bernoulli(p), D(lib).Poisson(r)), P_PROB.astype(dtype), b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mvn_and_independent_kl_match_torch(dtype):
    rng = np.random.default_rng(2)
    m1, m2 = rng.standard_normal((2, 3)).astype(dtype), rng.standard_normal((4, 1, 3)).astype(dtype)
    a1, a2 = rng.standard_normal((2, 3, 3)), rng.standard_normal((3, 3))
    c1 = (a1 @ a1.transpose(0, 2, 1) + np.eye(3)).astype(dtype)
    l2 = np.linalg.cholesky(a2 @ a2.T + np.eye(3)).astype(dtype)
    run_both(lambda lib, x, s, y, t: kl(lib, D(lib).MultivariateNormal(x, s),
                                        D(lib).MultivariateNormal(y, scale_tril=t)), m1, c1, m2, l2)
    ind = lambda lib, m, s: D(lib).Independent(D(lib).Normal(m, s), 1)  # noqa: E731
    run_both(lambda lib, x, s, y, t: kl(lib, ind(lib, x, s), ind(lib, y, t)), P_REAL.astype(dtype),
             P_POS.astype(dtype), Q_REAL.astype(dtype), Q_POS.astype(dtype))


def test_infinite_and_refused_cases_match_torch():
    run_both(lambda lib, n, p, m, q: kl(lib, D(lib).Binomial(n, p), D(lib).Binomial(m, q)),
             np.array([5.0, 6.0]), np.array([0.3, 0.4]), np.array([5.0, 5.0]), np.array([0.5, 0.5]),
             check_grad=False)
    binomials = lambda lib: (D(lib).Binomial(3, lib.tensor(0.5)), D(lib).Binomial(5, lib.tensor(0.5)))  # noqa: E731
    same_error(lambda: kl(torch, *binomials(torch)), lambda: kl(mininn, *binomials(mininn)))
    same_error(lambda: kl(torch, D(torch).MultivariateNormal(torch.zeros(2), torch.eye(2)),
                          D(torch).MultivariateNormal(torch.zeros(3), torch.eye(3))),
               lambda: kl(mininn, D(mininn).MultivariateNormal(mininn.zeros(2), mininn.eye(2)),
                          D(mininn).MultivariateNormal(mininn.zeros(3), mininn.eye(3))))
    same_error(lambda: kl(torch, D(torch).Laplace(0.0, 1.0), D(torch).Cauchy(0.0, 1.0)),
               lambda: kl(mininn, D(mininn).Laplace(0.0, 1.0), D(mininn).Cauchy(0.0, 1.0)))
    for lib in (torch, mininn):  # reinterpreted dims that differ: refused
        p = D(lib).Independent(D(lib).Normal(lib.zeros(2, 3), 1.0), 1)
        q = D(lib).Independent(D(lib).Normal(lib.zeros(2, 3), 1.0), 2)
        with pytest.raises(NotImplementedError):
            kl(lib, p, q)


def _samples(lib):
    t = lib.tensor
    return {
        "Normal": D(lib).Normal(t([0.3, -1.0]), t([1.0, 2.0])),
        "Laplace": D(lib).Laplace(t([0.3, -1.0]), 1.0), "Gumbel": D(lib).Gumbel(t([0.3, -1.0]), 1.0),
        "Exponential": D(lib).Exponential(t([1.0, 2.0])),
        "Gamma": D(lib).Gamma(t([2.0, 3.0]), 1.0), "Beta": D(lib).Beta(t([2.0, 3.0]), t([1.5, 2.0])),
        "Pareto": D(lib).Pareto(t([1.0, 2.0]), 3.0), "Uniform": D(lib).Uniform(t([0.1, 0.2]), 0.9),
        "ContinuousBernoulli": D(lib).ContinuousBernoulli(t([0.3, 0.6])),
        "Poisson": D(lib).Poisson(t([1.0, 2.0])),
        "Bernoulli": D(lib).Bernoulli(t([0.3, 0.6])), "Binomial": D(lib).Binomial(3, t([0.3, 0.6])),
    }


INFINITE_PAIRS = sorted((p.__name__, q.__name__) for p, (_, qs) in _INFINITE.items() for q in qs)


@pytest.mark.parametrize(("p", "q"), INFINITE_PAIRS)
def test_pairs_with_disjoint_supports_are_infinite_like_torchs(p, q):
    ours, theirs = _samples(mininn), _samples(torch)
    got, want = kl(mininn, ours[p], ours[q]), kl(torch, theirs[p], theirs[q])
    assert got.tolist() == want.tolist() == [float("inf")] * 2


def test_normal_against_poisson_is_refused_as_torch_refuses_it():
    ours, theirs = _samples(mininn), _samples(torch)
    same_error(lambda: kl(torch, theirs["Normal"], theirs["Poisson"]),
               lambda: kl(mininn, ours["Normal"], ours["Poisson"]))


def _cross(lib, name, a, b):
    """Family ``name`` from two positive parameter arrays, in ranges where its moments are finite."""
    d = lib.distributions
    return {
        "Normal": lambda: d.Normal(a - 1.0, b), "Laplace": lambda: d.Laplace(a - 1.0, b),
        "Gumbel": lambda: d.Gumbel(a - 1.0, b), "Exponential": lambda: d.Exponential(a),
        "Gamma": lambda: d.Gamma(a, b), "Beta": lambda: d.Beta(a, b), "Pareto": lambda: d.Pareto(b, a + 2.0),
        "Uniform": lambda: d.Uniform(a * 0.1, a * 0.1 + b * 0.2),
        "UniformWide": lambda: d.Uniform(a * 0 - 1, a + 1),
        "ParetoLow": lambda: d.Pareto(b * 0 + 0.01, a),
        "ContinuousBernoulli": lambda: d.ContinuousBernoulli(a * 0.5),  # just outside lims its closed
        # forms cancel catastrophically (values and gradients there depend on rounding, in torch too)
        "UniformInside": lambda: d.Uniform(a * 0.1 + 0.01, a * 0.1 + 0.5),
    }[name]()


CROSS_PAIRS = [
    ("Beta", "Normal"), ("Exponential", "Normal"), ("Gamma", "Normal"), ("Gumbel", "Normal"),
    ("Laplace", "Normal"), ("Pareto", "Normal"), ("Uniform", "Normal"), ("Exponential", "Gumbel"),
    ("Gamma", "Gumbel"),
    ("Normal", "Gumbel"), ("Uniform", "Gumbel"), ("Beta", "Exponential"), ("Beta", "Gamma"),
    ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Uniform", "Exponential"), ("Uniform", "Gamma"),
    ("Uniform", "Beta"), ("Beta", "UniformWide"), ("Uniform", "ParetoLow"),
    ("Beta", "ContinuousBernoulli"), ("UniformInside", "ContinuousBernoulli"),
    ("ContinuousBernoulli", "Exponential"), ("ContinuousBernoulli", "Normal"),
    ("ContinuousBernoulli", "UniformWide"),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("p", "q"), CROSS_PAIRS)
def test_cross_family_closed_forms_match_torch(dtype, p, q):
    a, b = (P_POS / 3.5).astype(dtype), (Q_POS / 3.5).astype(dtype)  # in (0.1, 0.9): inside [0, 1]
    c, e = (P_POS2 / 3.5).astype(dtype), (Q_POS2 / 3.5).astype(dtype)
    check = run_both_trigamma if {"Beta", "Gamma"} & {p, q} else run_both
    check(lambda lib, w, x, y, z: kl(lib, _cross(lib, p, w, x), _cross(lib, q, y, z)), a, b, c, e)


@pytest.mark.parametrize(("p", "q", "low"), [("Uniform", "Exponential", -0.5), ("Uniform", "Gamma", -0.5),
                                              ("Uniform", "Beta", -0.5), ("Uniform", "Beta", 0.5)])
def test_cross_family_infinite_cases_match_torch(p, q, low):
    lows, highs = np.array([low, 0.2]), np.array([low + 1.2, 0.7])
    for lib in (mininn, torch):
        uniform = D(lib).Uniform(lib.tensor(lows), lib.tensor(highs))
        got = kl(lib, uniform, _cross(lib, q, lib.tensor([0.5, 0.6]), lib.tensor([0.7, 0.8])))
        assert got.tolist()[0] == float("inf") and np.isfinite(got.tolist()[1])


def test_continuous_bernoulli_against_a_uniform_on_the_unit_interval_is_infinite_like_torchs():
    """torch's bounds are inclusive: a Uniform(0, 1) q (or anything inside it) gives inf."""
    for lib in (mininn, torch):
        p = D(lib).ContinuousBernoulli(lib.tensor([0.3, 0.7]))
        got = kl(lib, p, D(lib).Uniform(lib.tensor([0.0, -0.5]), lib.tensor([1.0, 1.5])))
        assert got.tolist()[0] == float("inf") and np.isfinite(got.tolist()[1])
