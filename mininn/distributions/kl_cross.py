"""Closed-form KL(p || q) between families of different kinds, the pairs torch registers: a Beta,
Exponential, Gamma, Gumbel, Laplace, Pareto or Uniform ``p`` against a Normal, Gumbel, Exponential,
Gamma, Beta, Uniform or Pareto ``q``, and a ContinuousBernoulli against a Beta, Uniform, Exponential
or Normal. Each is ``-H(p) - E_p[log q]`` with ``E_p`` in closed form;
infinite where ``p`` reaches outside ``q``'s support (a Uniform below 0 against a Gamma) or where a
moment of ``p`` that the formula needs is infinite (a Pareto with ``alpha <= 1`` or ``2``)."""

from __future__ import annotations

import math

import mininn
from mininn.distributions.continuous_bernoulli import ContinuousBernoulli
from mininn.distributions.dirichlet import Beta
from mininn.distributions.extreme_value import Gumbel, Pareto
from mininn.distributions.gamma import Exponential, Gamma
from mininn.distributions.kl import register_kl
from mininn.distributions.location_scale import Laplace
from mininn.distributions.normal import Normal
from mininn.distributions.uniform import Uniform
from mininn.tensor import Tensor

__all__: list[str] = []

_EULER_GAMMA = 0.57721566490153286060


def _x_log_x(t: Tensor) -> Tensor:
    return t * t.log()


def _gamma_log_normaliser(q: Gamma) -> Tensor:
    """``log Gamma(k) - k log(rate)``: minus the log-density's constant of ``q``."""
    return q.concentration.lgamma() - q.concentration * q.rate.log()


def _normal_quadratic(first: Tensor, second: Tensor, q: Normal) -> Tensor:
    """``E_p[(x - mu)**2] / (2 sigma**2)`` from ``E_p[x]`` and ``E_p[x**2]``."""
    return (0.5 * second - q.loc * first + 0.5 * q.loc.pow(2)) / q.scale.pow(2)


# ---- against a Normal ----------------------------------------------------------------------------
@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    total = p.concentration1 + p.concentration0
    mean = p.concentration1 / total
    second = mean * (1 - mean) / (total + 1) + mean.pow(2)
    return -p.entropy() + 0.5 * (q.scale.pow(2) * 2 * math.pi).log() + _normal_quadratic(mean, second, q)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    rate_sqr = p.rate.pow(2)
    t1 = 0.5 * mininn.log(rate_sqr * q.scale.pow(2) * 2 * math.pi)
    return t1 - 1 + (rate_sqr.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / q.scale.pow(2)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    k, beta_sqr = p.concentration, p.rate.pow(2)
    t1 = 0.5 * mininn.log(beta_sqr * q.scale.pow(2) * 2 * math.pi) - k - k.lgamma()
    quadratic = (0.5 * (k.pow(2) + k) / beta_sqr - q.loc * k / p.rate + 0.5 * q.loc.pow(2)) / q.scale.pow(2)
    return t1 + (k - 1) * k.digamma() + quadratic


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _EULER_GAMMA - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_EULER_GAMMA + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    ratio = p.scale.pow(2) / q.scale.pow(2)
    t1 = 0.5 * mininn.log(2 * ratio / math.pi)
    return -t1 + ratio + (0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)) / q.scale.pow(2) - 1


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    common = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / (2 * q.scale.pow(2)) - 1
    return result.masked_fill(p.alpha <= 2, math.inf)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    return t1 + 0.5 * (width.pow(2) / 12 + ((p.high + p.low - 2 * q.loc) / 2).pow(2)) / q.scale.pow(2)


# ---- against a Gumbel ----------------------------------------------------------------------------
@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    prod, ratio = p.rate * q.scale, q.loc / q.scale
    return prod.log() - 1 - ratio + mininn.exp(ratio) * prod / (prod + 1) + prod.reciprocal()


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    k, prod, ratio = p.concentration, p.rate * q.scale, q.loc / q.scale
    t1 = (k - 1) * k.digamma() - k.lgamma() - k
    t2 = prod.log() + k / prod
    t3 = mininn.exp(ratio) * (1 + prod.reciprocal()).pow(-k) - ratio
    return t1 + t2 + t3


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    mean_ratio, var_ratio, loc_ratio = p.loc / q.scale, (p.scale / q.scale).pow(2), q.loc / q.scale
    t3 = mininn.exp(-mean_ratio + 0.5 * var_ratio + loc_ratio)
    return -0.5 * var_ratio.log() + mean_ratio - loc_ratio + t3 - (0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    common = q.scale / (p.high - p.low)
    high, low = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    return common.log() + 0.5 * (high + low) - common * (mininn.exp(-high) - mininn.exp(-low))


# ---- against an Exponential, a Gamma or a Beta ---------------------------------------------------
@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    mean = p.concentration1 / (p.concentration1 + p.concentration0)
    return -p.entropy() - q.rate.log() + q.rate * mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    total = p.concentration1 + p.concentration0
    mean_log = p.concentration1.digamma() - total.digamma()
    t4 = q.rate * p.concentration1 / total
    return -p.entropy() + _gamma_log_normaliser(q) - (q.concentration - 1) * mean_log + t4


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    prod = p.scale * q.rate
    result = (p.alpha / prod).log() - p.alpha.reciprocal() + p.alpha * prod / (p.alpha - 1) - 1
    return result.masked_fill(p.alpha <= 1, math.inf)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    common = p.scale.log() + p.alpha.reciprocal()
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    result = p.alpha.log() - common + _gamma_log_normaliser(q) + (1 - q.concentration) * common + t4 - 1
    return result.masked_fill(p.alpha <= 1, math.inf)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return result.masked_fill(p.low < 0, math.inf)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    width = p.high - p.low
    mean_log = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t4 = q.rate * (p.high + p.low) / 2
    result = -width.log() + _gamma_log_normaliser(q) + (1 - q.concentration) * mean_log + t4
    return result.masked_fill(p.low < 0, math.inf)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    width = p.high - p.low
    mean_log = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    mean_log1m = -(_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    a, b = q.concentration1, q.concentration0
    log_beta = a.lgamma() + b.lgamma() - (a + b).lgamma()
    result = log_beta - width.log() - (a - 1) * mean_log - (b - 1) * mean_log1m
    return result.masked_fill((p.high > 1) | (p.low < 0), math.inf)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return result.masked_fill((q.low > 0) | (q.high < 1), math.inf)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    mean_log = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return (mean_log * (q.alpha + 1) - t1).masked_fill(p.low < q.scale, math.inf)


# ---- with a ContinuousBernoulli: E[log q] from its mean and variance, or its normaliser ------------
def _against_continuous_bernoulli(p: Beta | Uniform, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() - p.mean * q.logits - mininn.log1p(-q.probs) - q._cont_bern_log_norm()


register_kl(Beta, ContinuousBernoulli)(_against_continuous_bernoulli)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    result = _against_continuous_bernoulli(p, q)
    return result.masked_fill((p.high >= 1) | (p.low <= 0), math.inf)  # torch's bounds, both inclusive


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - mininn.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    t2 = 0.5 * (math.log(2.0 * math.pi) + mininn.square(q.loc / q.scale)) + mininn.log(q.scale)
    t3 = (p.variance + mininn.square(p.mean) - 2.0 * q.loc * p.mean) / (2.0 * mininn.square(q.scale))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return result.masked_fill((q.low >= 0) | (q.high <= 1), math.inf)  # torch's bounds, both inclusive
