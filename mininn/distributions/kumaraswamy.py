"""``Kumaraswamy(concentration1, concentration0)``: a Beta-like family on [0, 1] with a closed-form
inverse CDF, built as torch builds it from a uniform base and power transforms."""

from __future__ import annotations

from typing import Any, ClassVar

import mininn
from mininn.distributions import constraints
from mininn.distributions.transformed_distribution import TransformedDistribution
from mininn.distributions.transforms import AffineTransform, PowerTransform
from mininn.distributions.uniform import Uniform
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Tensor

__all__ = ["Kumaraswamy"]

_EULER_GAMMA = 0.57721566490153286060


def _moments(a: Tensor, b: Tensor, n: int) -> Tensor:
    """``E[X**n]`` of Kumaraswamy(a, b): ``b * B(1 + n / a, b)``."""
    arg1 = 1 + n / a
    return b * mininn.exp(mininn.lgamma(arg1) + mininn.lgamma(b) - mininn.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """Density ``a b x**(a-1) (1 - x**a)**(b-1)`` on [0, 1] (reparameterisable)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration1": constraints.positive, "concentration0": constraints.positive,
    }
    support = constraints.unit_interval  # type: ignore[assignment]
    has_rsample = True  # type: ignore[assignment]
    _expand_params: ClassVar[dict[str, int]] = {"concentration1": 0, "concentration0": 0}

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(mininn.full_like(self.concentration0, 0), mininn.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return log_mode.masked_fill((b < 1) | (a < 1), float("nan")).exp()

    @property
    def variance(self) -> Tensor:
        return _moments(self.concentration1, self.concentration0, 2) - mininn.pow(self.mean, 2)

    def entropy(self) -> Tensor:
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = mininn.digamma(self.concentration0 + 1) + _EULER_GAMMA
        return t0 + t1 * h0 - mininn.log(self.concentration1) - mininn.log(self.concentration0)
