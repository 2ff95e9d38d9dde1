"""``Normal(loc, scale)``: the Gaussian distribution."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, ClassVar

import mininn
from mininn.distributions import constraints
from mininn.distributions.exp_family import ExponentialFamily
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Size, Tensor

__all__ = ["Normal"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Normal(ExponentialFamily):
    """The normal distribution with mean ``loc`` and standard deviation ``scale`` (reparameterisable)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real, "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        batch = Size() if isinstance(loc, Number) and isinstance(scale, Number) else self.loc.shape
        super().__init__(batch, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = mininn.randn(shape, dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with mininn.no_grad():
            shape = self._extended_shape(sample_shape)
            return mininn.normal(self.loc.expand(shape), self.scale.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - _HALF_LOG_2PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + mininn.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        """The value below which a draw falls with probability ``value``."""
        return self.loc + self.scale * mininn.erfinv(2 * value - 1) * math.sqrt(2)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Normal:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"loc": 0, "scale": 0})

    def entropy(self) -> Tensor:
        return 0.5 + _HALF_LOG_2PI + mininn.log(self.scale)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        return -0.25 * x.pow(2) / y + 0.5 * mininn.log(-math.pi / y)

    _mean_carrier_measure = 0.0
