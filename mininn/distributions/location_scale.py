"""Symmetric location-scale families beside ``Normal``: ``Laplace``, ``Cauchy`` and ``StudentT``."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, ClassVar

import numpy as np

import mininn
from mininn._factories import default_generator
from mininn.distributions import constraints
from mininn.distributions.distribution import Distribution
from mininn.distributions.gamma import Chi2
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Size, Tensor

__all__ = ["Cauchy", "Laplace", "StudentT"]


def _draws(method: str, shape: Size, like: Tensor, **kwargs: Any) -> Tensor:
    """Float64 draws of the generator's ``method`` shaped ``shape``, in ``like``'s dtype."""
    with default_generator._lock:
        arr = getattr(default_generator.rng, method)(size=tuple(shape), **kwargs)
    return mininn.tensor(np.asarray(arr), dtype=like.dtype)


class _LocScale(Distribution):
    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real, "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        scalar = isinstance(loc, Number) and isinstance(scale, Number)
        super().__init__(Size() if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"loc": 0, "scale": 0})

    @property
    def mode(self) -> Tensor:
        return self.loc


class Laplace(_LocScale):
    """Density ``exp(-|x - loc| / scale) / (2 scale)`` (reparameterisable)."""

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2**0.5) * self.scale

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = float(np.finfo(self.loc._data.dtype).eps)
        u = _draws("uniform", self._extended_shape(sample_shape), self.loc, low=eps - 1, high=1)
        return self.loc - self.scale * u.sign() * mininn.log1p(-u.abs())

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -mininn.log(2 * self.scale) - mininn.abs(value - self.loc) / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        return 0.5 - 0.5 * diff.sign() * mininn.expm1(-diff.abs() / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        """The value below which a draw falls with probability ``value``."""
        term = value - 0.5
        return self.loc - self.scale * term.sign() * mininn.log1p(-2 * term.abs())

    def entropy(self) -> Tensor:
        return 1 + mininn.log(2 * self.scale)


class Cauchy(_LocScale):
    """Density ``1 / (pi scale (1 + ((x - loc) / scale)**2))``; no mean (NaN) and infinite variance."""

    @property
    def mean(self) -> Tensor:
        return mininn.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype)

    @property
    def variance(self) -> Tensor:
        return mininn.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = _draws("standard_cauchy", self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return mininn.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        """The value below which a draw falls with probability ``value``."""
        return mininn.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, shifted by ``loc`` and scaled by ``scale``.

    ``rsample`` is ``loc + scale * X / sqrt(Z / df)`` with ``X ~ Normal(0, 1)`` and ``Z ~ Chi2(df)``,
    differentiable in all three parameters.
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "df": constraints.positive, "loc": constraints.real, "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> StudentT:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"df": 0, "loc": 0, "scale": 0},
                              _chi2=self._chi2.expand(batch_shape))

    @property
    def mean(self) -> Tensor:
        return self.loc.masked_fill(self.df <= 1, float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        out = mininn.where(df > 2, finite, df.masked_fill((df <= 2) & (df > 1), float("inf")))
        return out.masked_fill(df <= 1, float("nan"))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        x = mininn.randn(self._extended_shape(sample_shape), dtype=self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * mininn.rsqrt(z / self.df)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        df = self.df
        norm = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi)
                + mininn.lgamma(0.5 * df) - mininn.lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * mininn.log1p(y**2.0 / df) - norm

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = mininn.lgamma(0.5 * df) + math.lgamma(0.5) - mininn.lgamma(0.5 * (df + 1))
        half_gap = mininn.digamma(0.5 * (df + 1)) - mininn.digamma(0.5 * df)
        return self.scale.log() + 0.5 * (df + 1) * half_gap + 0.5 * df.log() + lbeta
