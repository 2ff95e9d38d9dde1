"""``kl_divergence`` registrations for the families beyond ``kl.py``'s first four: ContinuousBernoulli,
Gamma (and Chi2), Beta, Dirichlet, Laplace, Exponential, Poisson, Cauchy, Gumbel, Pareto, Geometric,
Binomial, OneHotCategorical, HalfNormal, LogNormal (transformed distributions with equal transforms),
MultivariateNormal and LowRankMultivariateNormal (each with itself and the other), Independent, any
two members of one exponential family (Bregman), and torch's cross pairs Exponential-Gamma,
Gamma-Exponential, Normal-Laplace and Bernoulli-Poisson. Formulas and infinite cases follow torch."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import mininn
from mininn.distributions.bernoulli import Bernoulli
from mininn.distributions.continuous_bernoulli import ContinuousBernoulli
from mininn.distributions.counts import Binomial, Geometric, Poisson
from mininn.distributions.dirichlet import Beta, Dirichlet
from mininn.distributions.exp_family import ExponentialFamily, bregman_kl
from mininn.distributions.extreme_value import Gumbel, Pareto
from mininn.distributions.gamma import Exponential, Gamma
from mininn.distributions.independent import Independent, sum_rightmost
from mininn.distributions.kl import _kl_normal_normal, kl_divergence, register_kl
from mininn.distributions.location_scale import Cauchy, Laplace
from mininn.distributions.lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    lowrank_logdet,
    lowrank_mahalanobis,
)
from mininn.distributions.multivariate_normal import MultivariateNormal, batch_mahalanobis
from mininn.distributions.normal import Normal
from mininn.distributions.one_hot import OneHotCategorical
from mininn.distributions.transformed_distribution import HalfNormal, TransformedDistribution
from mininn.tensor import Tensor

__all__: list[str] = []

_EULER_GAMMA = 0.57721566490153286060


register_kl(ExponentialFamily, ExponentialFamily)(bregman_kl)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + mininn.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - mininn.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = mininn.lgamma(q.concentration) - mininn.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * mininn.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * mininn.digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * mininn.digamma(p.concentration0)
    t5 = (sum_q - sum_p) * mininn.digamma(sum_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * mininn.exp(-loc_abs_diff / p.scale) - 1


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    return t1 - (4 * p.scale * q.scale).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct1, ct2, ct3 = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t3 = mininn.exp(ct2 + (1 + ct1).lgamma() - ct3)
    return -ct1.log() - ct2 + ct3 + ct1 * _EULER_GAMMA + t3 - (1 + _EULER_GAMMA)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return result.masked_fill(p.scale < q.scale, math.inf)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - mininn.log1p(-q.probs) / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return kl.masked_fill(p.total_count > q.total_count, math.inf)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return kl_divergence(p._categorical, q._categorical)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError(  # torch's message, with the run of spaces its line continuation leaves
            "KL-divergence between two Multivariate Normals with" + " " * 26
            + "different event shapes cannot be computed"
        )
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (lq.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - lp.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    n = p.event_shape[0]
    batch = tuple(np.broadcast_shapes(tuple(lq.shape[:-2]), tuple(lp.shape[:-2])))
    solved = mininn.linalg.solve_triangular(lq.expand(batch + (n, n)), lp.expand(batch + (n, n)), upper=False)
    term2 = solved.pow(2).sum((-2, -1))
    term3 = batch_mahalanobis(lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


def _trace_xxt(bmat: Tensor) -> Tensor:
    """``trace(X X.T)`` over a batch: the sum of squares of each matrix."""
    return bmat.pow(2).sum((-2, -1))


def _check_events(p: Any, q: Any) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(  # torch's message, with the run of spaces its line continuation leaves
            "KL-divergence between two (Low Rank) Multivariate Normals with" + " " * 26
            + "different event shapes cannot be computed"
        )


def _woodbury_a(q: LowRankMultivariateNormal) -> Tensor:
    """``L_C^-1 W.T D^-1`` of ``q`` (``L_C`` its capacitance factor)."""
    wt_dinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return mininn.linalg.solve_triangular(q._capacitance_tril, wt_dinv, upper=False)


def _lowrank_terms(q: LowRankMultivariateNormal, p_loc: Tensor) -> tuple[Tensor, Tensor]:
    """``log det`` of ``q``'s covariance and the Mahalanobis term of ``q.loc - p_loc``."""
    w, d = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    cap = q._capacitance_tril
    return lowrank_logdet(w, d, cap), lowrank_mahalanobis(w, d, q.loc - p_loc, cap)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p: LowRankMultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Low Rank Multivariate Normals with" + " " * 26
            + "different event shapes cannot be computed"
        )
    q_logdet, term3 = _lowrank_terms(q, p.loc)
    p_logdet = lowrank_logdet(p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, p._capacitance_tril)
    a = _woodbury_a(q)
    pw, pd, qd = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, q._unbroadcasted_cov_diag
    term2 = ((pd / qd).sum(-1) + _trace_xxt(pw * qd.rsqrt().unsqueeze(-1))
             - _trace_xxt(a * pd.sqrt().unsqueeze(-2)) - _trace_xxt(a.matmul(pw)))
    return 0.5 * (q_logdet - p_logdet + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check_events(p, q)
    q_logdet, term3 = _lowrank_terms(q, p.loc)
    lp = p._unbroadcasted_scale_tril
    term1 = q_logdet - 2 * lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    a = _woodbury_a(q)
    term2 = _trace_xxt(lp * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1)) - _trace_xxt(a.matmul(lp))
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _check_events(p, q)
    lq = q._unbroadcasted_scale_tril
    pw, pd = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    term1 = 2 * lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - lowrank_logdet(pw, pd, p._capacitance_tril)
    term3 = batch_mahalanobis(lq, q.loc - p.loc)
    batch = tuple(np.broadcast_shapes(tuple(lq.shape[:-2]), tuple(pw.shape[:-2])))
    n = p.event_shape[0]
    lq = lq.expand(batch + (n, n))
    term21 = _trace_xxt(mininn.linalg.solve_triangular(lq, pw.expand(batch + (n, pw.shape[-1])), upper=False))
    diag = mininn.diag_embed(pd.sqrt()).expand(batch + (n, n))
    term22 = _trace_xxt(mininn.linalg.solve_triangular(lq, diag, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    t1 = -q.concentration * mininn.log(ratio)
    return t1 + ratio + q.concentration.lgamma() + q.concentration * _EULER_GAMMA - (1 + _EULER_GAMMA)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * mininn.exp(-0.5 * loc_diff_scale_ratio.pow(2))
    t3 = loc_diff * mininn.erf(math.sqrt(0.5) * loc_diff_scale_ratio)
    return -mininn.log(scale_ratio) + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)
