"""``VonMises(loc, concentration)``: the circular normal distribution of an angle (radians, read
modulo 2 pi), density ``exp(concentration * cos(x - loc)) / (2 pi I0(concentration))``.

``log I0`` is computed exactly here (series / asymptotic expansion); torch evaluates it with
Abramowitz-Stegun polynomial fits good to ~1e-7 relative, so log-probabilities agree to about that.
Draws use Best and Fisher's rejection sampler in float64, as torch's do.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

import mininn
from mininn._factories import default_generator
from mininn.distributions import constraints
from mininn.distributions._special import log_bessel_i
from mininn.distributions.distribution import Distribution
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Tensor

__all__ = ["VonMises"]


def _proposal_r(kappa: np.ndarray) -> np.ndarray:
    """Best and Fisher's envelope parameter (its Taylor form below kappa = 1e-5, where it cancels)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = 1 + np.sqrt(1 + 4 * kappa**2)
        rho = (tau - np.sqrt(2 * tau)) / (2 * kappa)
        exact = (1 + rho**2) / (2 * rho)
    return np.where(kappa < 1e-5, 1 / kappa + kappa, exact)


def _rejection_sample(loc: np.ndarray, kappa: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Angles in [-pi, pi) around ``loc``: proposals accepted by Best and Fisher's test until all are."""
    loc, kappa = np.broadcast_to(loc, shape), np.broadcast_to(kappa, shape)
    r = _proposal_r(kappa)
    x, done = np.zeros(shape), np.zeros(shape, dtype=bool)
    rng = default_generator.rng
    while not done.all():
        with default_generator._lock:
            u1, u2, u3 = rng.random((3,) + shape)
        z = np.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = kappa * (r - f)
        with np.errstate(divide="ignore", invalid="ignore"):
            accept = ~done & (((c * (2 - c) - u2) > 0) | (np.log(c / u2) + 1 - c >= 0))
        x = np.where(accept, np.sign(u3 - 0.5) * np.arccos(np.clip(f, -1, 1)), x)
        done |= accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """An angle near ``loc``, more tightly so the larger ``concentration``; ``mean`` and ``variance``
    are the circular ones. Not reparameterisable (``rsample`` is refused, as in torch)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "loc": constraints.real, "concentration": constraints.positive,
    }
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> VonMises:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"loc": 0, "concentration": 0})

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * mininn.cos(value - self.loc) - math.log(2 * math.pi)
                - log_bessel_i(self.concentration, 0))

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        loc = np.asarray(self.loc.detach()._data, np.float64)
        kappa = np.asarray(self.concentration.detach()._data, np.float64)
        return mininn.tensor(_rejection_sample(loc, kappa, shape), dtype=self.loc.dtype)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @cached_property
    def variance(self) -> Tensor:  # type: ignore[override]
        return 1 - (log_bessel_i(self.concentration, 1) - log_bessel_i(self.concentration, 0)).exp()
