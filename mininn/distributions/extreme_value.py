"""Extreme-value and tail families: ``Gumbel(loc, scale)``, ``Weibull(scale, concentration)`` and
``Pareto(scale, alpha)`` (built as torch builds them, by transforming a uniform or exponential base),
and ``GeneralizedPareto(loc, scale, concentration)``."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, ClassVar

import numpy as np

import mininn
from mininn.distributions import constraints
from mininn.distributions.distribution import Distribution
from mininn.distributions.gamma import Exponential
from mininn.distributions.transformed_distribution import TransformedDistribution
from mininn.distributions.transforms import AffineTransform, ExpTransform, PowerTransform
from mininn.distributions.uniform import Uniform
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Size, Tensor

__all__ = ["GeneralizedPareto", "Gumbel", "Pareto", "Weibull"]

_EULER_GAMMA = 0.57721566490153286060


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution: ``loc - scale * log(-log(U))``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real, "scale": constraints.positive,
    }
    support = constraints.real  # type: ignore[assignment]
    _expand_params: ClassVar[dict[str, int]] = {"loc": 0, "scale": 0}

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        info = np.finfo(self.loc._data.dtype)
        tiny, top = float(info.tiny), float(1 - info.eps)
        if isinstance(loc, Number) and isinstance(scale, Number):
            base = Uniform(tiny, top, validate_args=validate_args)
        else:
            base = Uniform(mininn.full_like(self.loc, tiny), mininn.full_like(self.loc, top),
                           validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-mininn.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + _EULER_GAMMA)


class Weibull(TransformedDistribution):
    """``scale * E ** (1 / concentration)`` for ``E ~ Exponential(1)``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "scale": constraints.positive, "concentration": constraints.positive,
    }
    support = constraints.positive  # type: ignore[assignment]

    def __init__(self, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(mininn.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Weibull:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        scale, concentration = self.scale.expand(batch_shape), self.concentration.expand(batch_shape)
        reciprocal = concentration.reciprocal()
        transforms = [PowerTransform(exponent=reciprocal), AffineTransform(loc=0, scale=scale)]
        return self._expanded(batch_shape, {}, scale=scale, concentration=concentration,
                              concentration_reciprocal=reciprocal, transforms=transforms,
                              base_dist=self.base_dist.expand(batch_shape))

    @property
    def mean(self) -> Tensor:
        return self.scale * mininn.exp(mininn.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self) -> Tensor:
        c = self.concentration
        return self.scale * ((c - 1) / c) ** c.reciprocal()

    @property
    def variance(self) -> Tensor:
        r = self.concentration_reciprocal
        gap = mininn.exp(mininn.lgamma(1 + 2 * r)) - mininn.exp(2 * mininn.lgamma(1 + r))
        return self.scale.pow(2) * gap

    def entropy(self) -> Tensor:
        r = self.concentration_reciprocal
        return _EULER_GAMMA * (1 - r) + mininn.log(self.scale * r) + 1


class Pareto(TransformedDistribution):
    """``scale * exp(E)`` for ``E ~ Exponential(alpha)``: density ``alpha scale**alpha / x**(alpha + 1)``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "alpha": constraints.positive, "scale": constraints.positive,
    }
    _expand_params: ClassVar[dict[str, int]] = {"scale": 0, "alpha": 0}

    def __init__(self, scale: Any, alpha: Any, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base, [ExpTransform(), AffineTransform(loc=0, scale=self.scale)],
                         validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class GeneralizedPareto(Distribution):
    """Peaks over a threshold: location ``loc``, ``scale`` and shape ``concentration`` (xi); xi = 0 is
    the shifted exponential, xi < 0 has the upper end ``loc - scale / xi`` (reparameterisable)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real,
    }
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, Number) for v in (loc, scale, concentration))
        super().__init__(Size() if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> GeneralizedPareto:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"loc": 0, "scale": 0, "concentration": 0})

    def _xi(self) -> tuple[Tensor, Tensor]:
        """Where xi is (close to) 0, and xi with 1 put there so the xi != 0 forms stay finite."""
        zero = mininn.isclose(self.concentration, mininn.zeros_like(self.concentration))
        return zero, mininn.where(zero, mininn.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = mininn.rand(tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._xi()
        y = 1 / xi + mininn.ones_like(z)
        nonzero = mininn.where(y == 0, y, y * mininn.log1p(xi * z))
        return -self.scale.log() - mininn.where(zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """``log P(X > value)``."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, xi = self._xi()
        return mininn.where(zero, -z, -mininn.log1p(xi * z) / xi)

    def log_cdf(self, value: Tensor) -> Tensor:
        """``log P(X <= value)``."""
        return mininn.log1p(-mininn.exp(self.log_survival_function(value)))

    def cdf(self, value: Tensor) -> Tensor:
        return mininn.exp(self.log_cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        """The value below which a draw falls with probability ``value``."""
        zero, xi = self._xi()
        log_u = mininn.log1p(-value)
        return mininn.where(zero, self.loc - self.scale * log_u,
                            self.loc + self.scale / xi * mininn.expm1(-xi * log_u))

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        xi = mininn.where(valid, self.concentration, 0.5)
        return mininn.where(valid, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        xi = mininn.where(valid, self.concentration, 0.25)
        return mininn.where(valid, self.scale**2 / ((1 - xi) ** 2 * (1 - 2 * xi)), math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    def entropy(self) -> Tensor:
        return mininn.broadcast_to(mininn.log(self.scale) + self.concentration + 1, tuple(self._batch_shape))

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        upper = mininn.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)
