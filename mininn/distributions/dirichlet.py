"""``Dirichlet(concentration)`` over the simplex and ``Beta(concentration1, concentration0)``, its
two-category case (a Dirichlet over ``(x, 1 - x)``, as torch builds it)."""

from __future__ import annotations

from numbers import Number
from typing import Any, ClassVar

import numpy as np

import mininn
from mininn.distributions import constraints
from mininn.distributions._special import standard_gamma
from mininn.distributions.exp_family import ExponentialFamily
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Tensor

__all__ = ["Beta", "Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Concentrations along the last dim. ``rsample`` normalises Gamma draws, differentiable in the
    concentration (per draw the gradient differs from torch's ``_dirichlet_grad``; both are unbiased)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration": constraints.independent(constraints.positive, 1),
    }
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Dirichlet:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"concentration": 1})

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(self.concentration.expand(shape))
        draws = gammas / gammas.sum(-1, keepdim=True)
        info = np.finfo(draws._data.dtype)
        draws._data = np.clip(draws._data, info.tiny, 1 - info.eps).astype(draws._data.dtype)  # no graph
        return draws

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (mininn.xlogy(c - 1.0, value).sum(-1) + mininn.lgamma(c.sum(-1))
                - mininn.lgamma(c).sum(-1))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> Tensor:
        above = (self.concentration - 1).clamp(min=0.0)
        mode = above / above.sum(-1, True)
        all_below = (self.concentration < 1).all(dim=-1, keepdim=True)
        k = above.shape[-1]
        corner = mininn.nn.functional.one_hot(mode.argmax(dim=-1), k).to(mode.dtype)
        return mininn.where(all_below, corner, mode)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        total = c.sum(-1, True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k = c.shape[-1]
        total = c.sum(-1)
        return (mininn.lgamma(c).sum(-1) - mininn.lgamma(total) - (k - total) * mininn.digamma(total)
                - ((c - 1.0) * mininn.digamma(c)).sum(-1))

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return x.lgamma().sum(-1) - mininn.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Density proportional to ``x**(concentration1 - 1) * (1 - x)**(concentration0 - 1)`` on [0, 1]."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "concentration1": constraints.positive, "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        if isinstance(concentration1, Number) and isinstance(concentration0, Number):
            both = mininn.tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            both = mininn.stack([c1, c0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Beta:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {}, _dirichlet=self._dirichlet.expand(batch_shape))

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(mininn.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        return mininn.lgamma(x) + mininn.lgamma(y) - mininn.lgamma(x + y)
