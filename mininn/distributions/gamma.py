"""``Gamma(concentration, rate)`` and its special cases ``Chi2(df)`` and ``Exponential(rate)``."""

from __future__ import annotations

from numbers import Number
from typing import Any, ClassVar

import numpy as np

import mininn
from mininn._factories import default_generator
from mininn.distributions import constraints
from mininn.distributions._special import gammainc, standard_gamma
from mininn.distributions.exp_family import ExponentialFamily
from mininn.distributions.utils import as_value, broadcast_all
from mininn.tensor import Size, Tensor

__all__ = ["Chi2", "Exponential", "Gamma"]


def _batch(*params: Any) -> Size | None:
    """``Size()`` when every parameter is a number (a scalar distribution), else None."""
    return Size() if all(isinstance(p, Number) for p in params) else None


class Gamma(ExponentialFamily):
    """Shape ``concentration`` and ``rate`` (1 / scale). ``rsample`` is differentiable in both, the
    concentration through implicit reparameterisation (torch's approximates that derivative to about
    1e-4 relative; this one computes it from the incomplete gamma series)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.positive, "rate": constraints.positive,
    }
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch = _batch(concentration, rate)
        super().__init__(self.concentration.shape if batch is None else batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Gamma:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"concentration": 0, "rate": 0})

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        smallest = float(np.finfo(value._data.dtype).tiny)
        value._data = np.maximum(value._data, smallest).astype(value._data.dtype)  # outside the graph
        return value

    def log_prob(self, value: Any) -> Tensor:
        value = as_value(value, self.rate)
        if self._validate_args:
            self._validate_sample(value)
        return (mininn.xlogy(self.concentration, self.rate) + mininn.xlogy(self.concentration - 1, value)
                - self.rate * value - mininn.lgamma(self.concentration))

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - mininn.log(self.rate) + mininn.lgamma(c) + (1.0 - c) * mininn.digamma(c)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        return mininn.lgamma(x + 1) + (x + 1) * mininn.log(-y.reciprocal())

    _mean_carrier_measure = 0.0


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2


class Exponential(ExponentialFamily):
    """Rate ``rate``: density ``rate * exp(-rate * x)`` on ``x >= 0`` (reparameterisable)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch = _batch(rate)
        super().__init__(self.rate.shape if batch is None else batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return mininn.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Exponential:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"rate": 0})

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with default_generator._lock:
            draws = default_generator.rng.standard_exponential(tuple(shape))
        return mininn.tensor(draws, dtype=self.rate.dtype) / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - mininn.exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        """The value below which a draw falls with probability ``value``."""
        return -mininn.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - mininn.log(self.rate)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return -mininn.log(-x)

    _mean_carrier_measure = 0.0
