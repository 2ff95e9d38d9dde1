"""Sampling: shapes, dtypes, flags, supports and reprs equal torch's for every family; the draws
have the distributions' moments (fixed seeds); rsample gradients are the reparameterisation's
(the Gamma family's implicit one equals torch's ``_standard_gamma_grad`` within its approximation)."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")


def D(lib):  # noqa: N802 - the distributions module of either library
    return lib.distributions


FAMILIES = {
    "Gamma": lambda lib: D(lib).Gamma(lib.tensor([1.5, 0.4]), lib.tensor([2.0, 0.7])),
    "Gamma-scalar": lambda lib: D(lib).Gamma(2.0, 3.0),
    "Chi2": lambda lib: D(lib).Chi2(lib.tensor([3.0, 0.8])),
    "Exponential": lambda lib: D(lib).Exponential(lib.tensor([0.5, 2.0])),
    "Beta": lambda lib: D(lib).Beta(lib.tensor([0.7, 2.0]), lib.tensor([1.5, 3.0])),
    "Beta-scalar": lambda lib: D(lib).Beta(0.7, 2.0),
    "Dirichlet": lambda lib: D(lib).Dirichlet(lib.tensor([[0.5, 1.0, 4.0], [2.0, 2.0, 2.0]])),
    "Laplace": lambda lib: D(lib).Laplace(lib.tensor([0.0, 3.0]), lib.tensor([1.0, 0.5])),
    "Cauchy": lambda lib: D(lib).Cauchy(lib.tensor([0.0, 3.0]), 2.0),
    "StudentT": lambda lib: D(lib).StudentT(lib.tensor([5.0, 12.0]), 1.0, lib.tensor([1.0, 2.0])),
    "LogNormal": lambda lib: D(lib).LogNormal(lib.tensor([0.0, 0.5]), lib.tensor([0.25, 0.5])),
    "HalfNormal": lambda lib: D(lib).HalfNormal(lib.tensor([1.0, 2.5])),
    "Poisson": lambda lib: D(lib).Poisson(lib.tensor([0.5, 7.0])),
    "Geometric": lambda lib: D(lib).Geometric(lib.tensor([0.2, 0.7])),
    "Binomial": lambda lib: D(lib).Binomial(10, lib.tensor([0.2, 0.7])),
    "Multinomial": lambda lib: D(lib).Multinomial(6, lib.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])),
    "OneHotCategorical": lambda lib: D(lib).OneHotCategorical(lib.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])),
    "LowRankMultivariateNormal": lambda lib: D(lib).LowRankMultivariateNormal(
        lib.tensor([[1.0, -1.0], [0.0, 2.0]]), lib.tensor([[0.5], [1.0]]), lib.tensor([0.3, 0.6])),
    "HalfCauchy": lambda lib: D(lib).HalfCauchy(lib.tensor([1.0, 2.5])),
    "Gumbel": lambda lib: D(lib).Gumbel(lib.tensor([0.0, 3.0]), lib.tensor([1.0, 0.5])),
    "Gumbel-scalar": lambda lib: D(lib).Gumbel(1.0, 2.0),
    "Weibull": lambda lib: D(lib).Weibull(lib.tensor([1.0, 2.0]), lib.tensor([1.5, 4.0])),
    "Pareto": lambda lib: D(lib).Pareto(lib.tensor([1.0, 2.0]), lib.tensor([5.0, 9.0])),
    "NegativeBinomial": lambda lib: D(lib).NegativeBinomial(lib.tensor([3.0, 0.5]), lib.tensor([0.4, 0.7])),
    "InverseGamma": lambda lib: D(lib).InverseGamma(lib.tensor([4.0, 9.0]), lib.tensor([2.0, 5.0])),
    "FisherSnedecor": lambda lib: D(lib).FisherSnedecor(lib.tensor([6.0, 9.0]), lib.tensor([12.0, 20.0])),
    "Kumaraswamy": lambda lib: D(lib).Kumaraswamy(lib.tensor([0.5, 2.0]), lib.tensor([1.5, 3.0])),
    "ContinuousBernoulli": lambda lib: D(lib).ContinuousBernoulli(lib.tensor([0.2, 0.5, 0.9])),
    "ContinuousBernoulli-logits": lambda lib: D(lib).ContinuousBernoulli(logits=lib.tensor([-1.0, 2.0])),
    "VonMises": lambda lib: D(lib).VonMises(lib.tensor([0.5, -2.0, 3.0]), lib.tensor([0.3, 4.0, 1e-6])),
    "GeneralizedPareto": lambda lib: D(lib).GeneralizedPareto(
        lib.tensor([0.0, 1.0]), 2.0, lib.tensor([-0.2, 0.1])),
    "LogisticNormal": lambda lib: D(lib).LogisticNormal(lib.tensor([[0.0, 1.0], [-1.0, 0.5]]), 0.5),
    "MultivariateNormal": lambda lib: D(lib).MultivariateNormal(
        lib.tensor([1.0, -1.0]), lib.tensor([[2.0, 0.6], [0.6, 1.0]])),
    "Independent": lambda lib: D(lib).Independent(D(lib).Normal(lib.zeros(2, 3), lib.ones(3)), 1),
    "MixtureSameFamily": lambda lib: D(lib).MixtureSameFamily(
        D(lib).Categorical(lib.tensor([0.3, 0.7])),
        D(lib).Normal(lib.tensor([-2.0, 2.0]), lib.tensor([0.5, 1.0]))),
    "RelaxedBernoulli": lambda lib: D(lib).RelaxedBernoulli(lib.tensor(0.5), lib.tensor([0.3, 0.8])),
    "RelaxedOneHotCategorical": lambda lib: D(lib).RelaxedOneHotCategorical(
        lib.tensor(0.5), lib.tensor([0.2, 0.3, 0.5])),
}
NO_MOMENTS = {  # no finite moments or none torch defines, circular ones, or checked below (one-hot)
    "Cauchy", "HalfCauchy", "LogisticNormal", "OneHotCategorical", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "VonMises",
}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_shapes_flags_supports_and_reprs_match_torch(name):
    ours, theirs = FAMILIES[name](mininn), FAMILIES[name](torch)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    for flag in ("has_rsample", "has_enumerate_support"):
        assert getattr(ours, flag) == getattr(theirs, flag), flag
    assert repr(ours.support) == repr(theirs.support)
    assert repr(ours).replace("mininn.", "torch.") == repr(theirs)
    draw, t_draw = ours.sample((4, 5)), theirs.sample((4, 5))
    assert tuple(draw.shape) == tuple(t_draw.shape)
    assert draw.dtype.name == str(t_draw.dtype).removeprefix("torch.")
    assert bool(ours.support.check(draw).all()) if name != "RelaxedOneHotCategorical" else True
    if theirs.has_rsample:
        assert tuple(ours.rsample((3,)).shape) == tuple(theirs.rsample((3,)).shape)
    else:
        with pytest.raises(NotImplementedError):
            ours.rsample()
    wider = (3,) + tuple(theirs.batch_shape)
    assert tuple(ours.expand(wider).sample().shape) == tuple(theirs.expand(wider).sample().shape)
    assert repr(ours.expand(wider)).replace("mininn.", "torch.") == repr(theirs.expand(wider))


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - NO_MOMENTS))
def test_draws_have_the_distributions_mean_and_variance(name):
    mininn.manual_seed(1234)
    dist = FAMILIES[name](mininn)
    n = 40000
    draws = dist.sample((n,)).numpy().astype(np.float64)
    mean, var = dist.mean.numpy(), dist.variance.numpy()
    np.testing.assert_allclose(draws.mean(0), mean, atol=6 * np.sqrt(var.max() / n) + 1e-9)
    np.testing.assert_allclose(draws.var(0), var, rtol=0.08, atol=1e-3)


def test_relaxed_and_cauchy_draws_follow_their_cdfs():
    mininn.manual_seed(7)
    cauchy = D(mininn).Cauchy(mininn.tensor(1.0), mininn.tensor(2.0))
    draws = cauchy.sample((40000,))
    quartiles = np.quantile(draws.numpy(), [0.25, 0.5, 0.75])
    np.testing.assert_allclose(quartiles, [-1.0, 1.0, 3.0], atol=0.08)
    hot = D(mininn).OneHotCategorical(mininn.tensor([0.2, 0.3, 0.5])).sample((40000,)).numpy()
    np.testing.assert_allclose(hot.mean(0), [0.2, 0.3, 0.5], atol=0.015)
    assert (hot.sum(-1) == 1).all()
    soft = D(mininn).RelaxedOneHotCategorical(mininn.tensor(0.1), mininn.tensor([0.2, 0.3, 0.5]))
    soft = soft.sample((40000,))
    np.testing.assert_allclose(np.bincount(soft.numpy().argmax(-1)) / 40000, [0.2, 0.3, 0.5], atol=0.015)


def test_seeded_draws_repeat():
    for name in ("Gamma", "Dirichlet", "Laplace", "StudentT", "Poisson", "Multinomial", "MultivariateNormal"):
        mininn.manual_seed(3)
        first = FAMILIES[name](mininn).sample((4,))
        mininn.manual_seed(3)
        assert FAMILIES[name](mininn).sample((4,)).tolist() == first.tolist(), name


def test_gamma_rsample_gradient_is_the_implicit_one_torch_approximates():
    conc = mininn.tensor([0.3, 1.0, 2.5, 9.0, 40.0], dtype=mininn.float64, requires_grad=True)
    rate = mininn.tensor([1.0, 2.0, 0.5, 1.5, 3.0], dtype=mininn.float64, requires_grad=True)
    mininn.manual_seed(0)
    draws = D(mininn).Gamma(conc, rate).rsample((50,))
    draws.sum().backward()
    standard = torch.tensor(draws.detach().numpy() * rate.detach().numpy())
    torch_grad = torch._standard_gamma_grad(torch.tensor(conc.detach().numpy()).expand(50, 5), standard)
    expected_conc = (torch_grad / torch.tensor(rate.detach().numpy())).sum(0).numpy()
    np.testing.assert_allclose(conc.grad.numpy(), expected_conc, rtol=2e-3)
    np.testing.assert_allclose(rate.grad.numpy(), -(draws.detach().numpy() / rate.detach().numpy()).sum(0),
                               rtol=1e-12)


def test_gamma_implicit_gradient_is_the_exact_quantile_derivative():
    special = pytest.importorskip("scipy.special")
    conc = np.array([0.2, 0.8, 3.0, 25.0])
    u = np.array([0.1, 0.5, 0.9, 0.3])
    x = special.gammaincinv(conc, u)
    h = 1e-6
    exact = (special.gammaincinv(conc + h, u) - special.gammaincinv(conc - h, u)) / (2 * h)
    alpha = mininn.tensor(conc, requires_grad=True)
    from mininn.distributions._special import _StandardGamma
    _StandardGamma.apply(alpha, x).sum().backward()
    np.testing.assert_allclose(alpha.grad.numpy(), exact, rtol=1e-6)


def test_dirichlet_and_beta_rsample_gradients_are_unbiased():
    mininn.manual_seed(4)
    conc = mininn.tensor([1.5, 0.7, 3.0], dtype=mininn.float64, requires_grad=True)
    D(mininn).Dirichlet(conc).rsample((40000,))[:, 0].mean().backward()
    c = conc.detach().numpy()
    analytic = -c[0] / c.sum() ** 2 * np.ones(3) + np.array([1 / c.sum(), 0, 0])  # d E[x_0] / d conc
    np.testing.assert_allclose(conc.grad.numpy(), analytic, atol=0.01)
    a = mininn.tensor(2.0, dtype=mininn.float64, requires_grad=True)
    b = mininn.tensor(3.0, dtype=mininn.float64, requires_grad=True)
    D(mininn).Beta(a, b).rsample((40000,)).mean().backward()
    np.testing.assert_allclose([a.grad.item(), b.grad.item()], [3 / 25, -2 / 25], atol=0.01)


@pytest.mark.parametrize("family", ["Laplace", "Cauchy", "StudentT"])
def test_location_scale_rsample_gradients_are_the_standardised_draws(family):
    loc = mininn.tensor([0.5, -1.0], dtype=mininn.float64, requires_grad=True)
    scale = mininn.tensor([2.0, 0.5], dtype=mininn.float64, requires_grad=True)
    make = getattr(D(mininn), family)
    if family == "StudentT":
        dist = make(mininn.tensor([4.0, 9.0], dtype=mininn.float64), loc, scale)
    else:
        dist = make(loc, scale)
    draws = dist.rsample((100,))
    draws.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [100.0, 100.0])
    standardised = ((draws.detach() - loc.detach()) / scale.detach()).sum(0).numpy()
    np.testing.assert_allclose(scale.grad.numpy(), standardised, rtol=1e-10)


def test_transformed_and_multivariate_rsample_gradients():
    rate = mininn.tensor([0.5, 2.0], dtype=mininn.float64, requires_grad=True)
    draws = D(mininn).Exponential(rate).rsample((100,))
    draws.sum().backward()
    expected = (-draws.detach() / rate.detach()).sum(0).numpy()
    np.testing.assert_allclose(rate.grad.numpy(), expected, rtol=1e-12)
    loc = mininn.tensor([0.1, 0.2], dtype=mininn.float64, requires_grad=True)
    scale = mininn.tensor([0.3, 0.4], dtype=mininn.float64, requires_grad=True)
    y = D(mininn).LogNormal(loc, scale).rsample((50,))
    y.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), y.detach().sum(0).numpy(), rtol=1e-12)
    tril = mininn.tensor([[1.0, 0.0], [0.5, 2.0]], dtype=mininn.float64, requires_grad=True)
    mvn_loc = mininn.zeros(2, dtype=mininn.float64, requires_grad=True)
    x = D(mininn).MultivariateNormal(mvn_loc, scale_tril=tril).rsample((30,))
    x.sum().backward()
    np.testing.assert_allclose(mvn_loc.grad.numpy(), [30.0, 30.0])
    eps = np.linalg.solve(tril.detach().numpy(), x.detach().numpy().T).T  # the standard normal draws
    np.testing.assert_allclose(tril.grad.numpy(), np.ones((2, 1)) * eps.sum(0)[None, :], rtol=1e-10)
    assert not D(mininn).Gamma(rate, 1.0).sample().requires_grad


@pytest.mark.parametrize("call", [
    lambda lib: D(lib).Gamma(lib.tensor([1.0, -1.0]), 1.0),
    lambda lib: D(lib).Gamma(1.0, 0.0),
    lambda lib: D(lib).Gamma(1.0, 1.0).log_prob(lib.tensor(-1.0)),
    lambda lib: D(lib).Chi2(lib.tensor(-2.0)),
    lambda lib: D(lib).Exponential(lib.tensor([-1.0])),
    lambda lib: D(lib).Beta(lib.tensor([0.0]), lib.tensor([1.0])),
    lambda lib: D(lib).Beta(1.0, 1.0).log_prob(lib.tensor(1.5)),
    lambda lib: D(lib).Dirichlet(lib.tensor(1.0)),
    lambda lib: D(lib).Dirichlet(lib.tensor([1.0, -0.5])),
    lambda lib: D(lib).Dirichlet(lib.tensor([1.0, 2.0])).log_prob(lib.tensor([0.5, 0.6])),
    lambda lib: D(lib).Laplace(0.0, -1.0),
    lambda lib: D(lib).Cauchy(lib.tensor(float("nan")), 1.0),
    lambda lib: D(lib).StudentT(lib.tensor(-3.0)),
    lambda lib: D(lib).LogNormal(0.0, lib.tensor(-1.0)),
    lambda lib: D(lib).LogNormal(0.0, 1.0).log_prob(lib.tensor(-1.0)),
    lambda lib: D(lib).HalfNormal(lib.tensor(-1.0)),
    lambda lib: D(lib).HalfNormal(1.0).log_prob(lib.tensor(-1.0)),
    lambda lib: D(lib).Poisson(lib.tensor(-1.0)),
    lambda lib: D(lib).Poisson(lib.tensor(1.0)).log_prob(lib.tensor(1.5)),
    lambda lib: D(lib).Geometric(lib.tensor(0.0)),
    lambda lib: D(lib).Geometric(lib.tensor(1.5)),
    lambda lib: D(lib).Geometric(),
    lambda lib: D(lib).Binomial(lib.tensor(2.5), lib.tensor(0.5)),
    lambda lib: D(lib).Binomial(5, lib.tensor(0.5)).log_prob(lib.tensor(6.0)),
    lambda lib: D(lib).Binomial(lib.tensor([3.0, 4.0]), lib.tensor([0.5, 0.5])).entropy(),
    lambda lib: D(lib).Multinomial(lib.tensor(3), lib.tensor([0.5, 0.5])),
    lambda lib: D(lib).Multinomial(3, lib.tensor([0.5, 0.5])).log_prob(lib.tensor([3.0, 1.0])),
    lambda lib: D(lib).OneHotCategorical(lib.tensor([0.5, 0.5])).log_prob(lib.tensor([1.0, 1.0])),
    lambda lib: D(lib).MultivariateNormal(lib.tensor(0.0), lib.eye(1)),
    lambda lib: D(lib).MultivariateNormal(lib.zeros(2)),
    lambda lib: D(lib).MultivariateNormal(lib.zeros(2), lib.eye(2), scale_tril=lib.eye(2)),
    lambda lib: D(lib).MultivariateNormal(lib.zeros(2), lib.ones(2)),
    lambda lib: D(lib).MultivariateNormal(lib.zeros(2), precision_matrix=lib.ones(2)),
    lambda lib: D(lib).MultivariateNormal(lib.zeros(2), scale_tril=lib.ones(2)),
    lambda lib: D(lib).MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda lib: D(lib).MultivariateNormal(lib.zeros(2), scale_tril=lib.tensor([[1.0, 1.0], [0.0, 1.0]])),
    lambda lib: D(lib).MultivariateNormal(lib.zeros(2), lib.eye(2)).log_prob(lib.zeros(3)),
    lambda lib: D(lib).Independent(D(lib).Normal(lib.zeros(2), 1.0), 2),
    lambda lib: D(lib).Independent(D(lib).Normal(lib.zeros(2, 3), 1.0), 1).enumerate_support(),
    lambda lib: D(lib).MixtureSameFamily(D(lib).Normal(0.0, 1.0), D(lib).Normal(lib.zeros(2), 1.0)),
    lambda lib: D(lib).MixtureSameFamily(D(lib).Categorical(lib.ones(2)), lib.zeros(2)),
    lambda lib: D(lib).MixtureSameFamily(D(lib).Categorical(lib.ones(3)), D(lib).Normal(lib.zeros(2), 1.0)),
    lambda lib: D(lib).MixtureSameFamily(D(lib).Categorical(lib.ones(4, 2)),
                                         D(lib).Normal(lib.zeros(3, 2), 1.0)),
    lambda lib: D(lib).RelaxedBernoulli(lib.tensor(1.0), lib.tensor(2.0)),
    lambda lib: D(lib).Bernoulli(0.5).rsample(),
    lambda lib: D(lib).Poisson(lib.tensor(1.0)).rsample(),
])
def test_invalid_arguments_and_values_raise_torchs_messages(call):
    same_error(lambda: call(torch), lambda: call(mininn))


def test_gamma_cdf_refuses_a_gradient_in_the_concentration_like_torch():
    def backward(lib):
        conc = lib.tensor([2.0], requires_grad=True)
        D(lib).Gamma(conc, lib.tensor([1.0])).cdf(lib.tensor([1.5])).sum().backward()
    same_error(lambda: backward(torch), lambda: backward(mininn))


def test_von_mises_draws_have_its_circular_mean_and_variance():
    mininn.manual_seed(11)
    dist = D(mininn).VonMises(mininn.tensor([0.5, -2.0, 3.0], dtype=mininn.float64),
                              mininn.tensor([0.3, 4.0, 30.0], dtype=mininn.float64))
    draws = dist.sample((40000,)).numpy()
    assert draws.min() >= -np.pi and draws.max() < np.pi
    resultant = np.exp(1j * draws).mean(0)
    np.testing.assert_allclose(1 - np.abs(resultant), dist.variance.numpy(), atol=0.01)
    np.testing.assert_allclose(np.angle(resultant)[1:], [-2.0, 3.0], atol=0.02)
