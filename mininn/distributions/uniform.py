"""``Uniform(low, high)``: the continuous uniform distribution on ``[low, high)``."""

from __future__ import annotations

from numbers import Number
from typing import Any

import mininn
from mininn.distributions import constraints
from mininn.distributions.distribution import Distribution
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Size, Tensor

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform on ``[low, high)`` (reparameterisable)."""

    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        batch = Size() if isinstance(low, Number) and isinstance(high, Number) else self.low.shape
        super().__init__(batch, validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return mininn.full_like(self.high, float("nan"))

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = mininn.rand(shape, dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value).type_as(self.low) * (self.high > value).type_as(self.low)
        return mininn.log(inside) - mininn.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        """The value below which a draw falls with probability ``value``."""
        return self.low + value * (self.high - self.low)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Uniform:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"low": 0, "high": 0})

    def entropy(self) -> Tensor:
        return mininn.log(self.high - self.low)
