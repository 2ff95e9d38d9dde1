"""``ContinuousBernoulli(probs | logits)``: the density ``C(lambda) lambda**x (1 - lambda)**(1 - x)``
on [0, 1] (Loaiza-Ganem and Cunningham, 2019), the likelihood of VAEs on pixel intensities.

Its normaliser ``C``, mean and variance have a removable singularity at ``lambda = 1/2``: inside
``lims`` (default ``(0.499, 0.501)``) they use their Taylor expansions about 1/2, and the closed
forms are evaluated at a probability cut to ``lims[0]`` so that no gradient sees the singularity.
"""

from __future__ import annotations

import math
from functools import cached_property
from numbers import Number
from typing import Any, ClassVar

import mininn
from mininn.distributions import constraints
from mininn.distributions.exp_family import ExponentialFamily
from mininn.distributions.utils import broadcast_all, clamp_probs, logits_to_probs, probs_to_logits
from mininn.tensor import Size, Tensor

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Give exactly one of ``probs`` (the shape parameter lambda in (0, 1)) or ``logits``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval, "logits": constraints.real,
    }
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Any = None, logits: Any = None, lims: tuple[float, float] = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (given,) = broadcast_all(probs)
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(given).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(given)
            param = self.probs
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        self._param = param
        self._lims = lims
        super().__init__(Size() if is_scalar else param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> ContinuousBernoulli:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        new = self._expanded(batch_shape, {"probs": 0, "logits": 0}, _lims=self._lims)
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new

    @cached_property
    def logits(self) -> Tensor:  # noqa: F811 - the other parametrisation, computed on first use
        return probs_to_logits(self.probs, is_binary=True)

    @cached_property
    def probs(self) -> Tensor:  # noqa: F811
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    # ---- the closed forms away from 1/2, the Taylor expansions near it ---------------------------
    def _stable(self) -> Tensor:
        """True where lambda is outside ``lims`` (the closed forms hold there)."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        return mininn.where(self._stable(), self.probs, self._lims[0] * mininn.ones_like(self.probs))

    def _log_odds_gap(self, cut: Tensor) -> Tensor:
        """``log(1 - lambda) - log(lambda)``."""
        return mininn.log1p(-cut) - mininn.log(cut)

    def _cont_bern_log_norm(self) -> Tensor:
        """``log C(lambda)``."""
        cut = self._cut_probs()
        below = mininn.where(cut <= 0.5, cut, mininn.zeros_like(cut))
        above = mininn.where(cut >= 0.5, cut, mininn.ones_like(cut))
        log_norm = mininn.log(mininn.abs(self._log_odds_gap(cut))) - mininn.where(
            cut <= 0.5, mininn.log1p(-2.0 * below), mininn.log(2.0 * above - 1.0))
        x = mininn.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return mininn.where(self._stable(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        exact = cut / (2.0 * cut - 1.0) + 1.0 / self._log_odds_gap(cut)
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * mininn.pow(x, 2)) * x
        return mininn.where(self._stable(), exact, taylor)

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        exact = cut * (cut - 1.0) / mininn.pow(1.0 - 2.0 * cut, 2)
        exact = exact + 1.0 / mininn.pow(self._log_odds_gap(cut), 2)
        x = mininn.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return mininn.where(self._stable(), exact, taylor)

    @property
    def stddev(self) -> Tensor:
        return mininn.sqrt(self.variance)

    # ---- density, distribution function, draws ---------------------------------------------------
    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = mininn.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        exact = (mininn.pow(cut, value) * mininn.pow(1.0 - cut, 1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inside = mininn.where(self._stable(), exact, value)
        clipped = mininn.where(value >= 1.0, mininn.ones_like(value), inside)
        return mininn.where(value <= 0.0, mininn.zeros_like(value), clipped)

    def icdf(self, value: Tensor) -> Tensor:
        """The value below which a draw falls with probability ``value``."""
        cut = self._cut_probs()
        exact = mininn.log1p(-cut + value * (2.0 * cut - 1.0)) - mininn.log1p(-cut)
        exact = exact / (mininn.log(cut) - mininn.log1p(-cut))
        return mininn.where(self._stable(), exact, value)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = mininn.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype)
        return self.icdf(u)

    def entropy(self) -> Tensor:
        log_probs0, log_probs1 = mininn.log1p(-self.probs), mininn.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    # ---- the exponential-family view: natural parameter = logits ----------------------------------
    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        low, high = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= low) | (x > high)
        cut = mininn.where(stable, x, low * mininn.ones_like(x))
        log_norm = mininn.log(mininn.abs(mininn.expm1(cut))) - mininn.log(mininn.abs(cut))
        taylor = 0.5 * x + mininn.pow(x, 2) / 24.0 - mininn.pow(x, 4) / 2880.0
        return mininn.where(stable, log_norm, taylor)
