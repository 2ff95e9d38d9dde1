"""Counting distributions: ``Poisson(rate)``, ``Geometric(probs | logits)``,
``Binomial(total_count, probs | logits)`` and ``NegativeBinomial(total_count, probs | logits)``.
Samples are floats holding whole numbers, as in torch."""

from __future__ import annotations

from functools import cached_property
from numbers import Number
from typing import Any, ClassVar

import numpy as np

import mininn
from mininn._factories import default_generator
from mininn.distributions import constraints
from mininn.distributions.distribution import Distribution
from mininn.distributions.exp_family import ExponentialFamily
from mininn.distributions.gamma import Gamma
from mininn.distributions.utils import broadcast_all, logits_to_probs, probs_to_logits
from mininn.tensor import Size, Tensor

__all__ = ["Binomial", "Geometric", "NegativeBinomial", "Poisson"]


class Poisson(ExponentialFamily):
    """``rate ** k * exp(-rate) / k!`` for ``k = 0, 1, 2, ...``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(Size() if isinstance(rate, Number) else self.rate.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def expand(self, batch_shape: Any, _instance: Any = None) -> Poisson:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {"rate": 0})

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with mininn.no_grad():
            return mininn.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (mininn.log(self.rate),)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return mininn.exp(x)


class _ProbsOrLogits(Distribution):
    """A Bernoulli-like parameter given as ``probs`` or as ``logits`` (exactly one)."""

    def _set_param(self, probs: Any, logits: Any, *others: Any) -> tuple[Tensor, ...]:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        name, given = ("probs", probs) if probs is not None else ("logits", logits)
        *rest, param = broadcast_all(*others, given)
        self.__dict__[name] = param
        self._param = param
        return tuple(rest)

    @cached_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @cached_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    def _expand_probs(self, batch_shape: Any, **extra: Any) -> Any:
        new = self._expanded(batch_shape, {"probs": 0, "logits": 0}, **extra)
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new


class Geometric(_ProbsOrLogits):
    """The number of failures before the first success in Bernoulli(``probs``) trials."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval, "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._set_param(probs, logits)
        given = probs if probs is not None else logits
        batch = Size() if isinstance(given, Number) else self._param.shape
        super().__init__(batch, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) of "
                    f"distribution {self!r} to be positive but found invalid values:\n{value.data[~valid]}"
                )

    def expand(self, batch_shape: Any, _instance: Any = None) -> Geometric:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expand_probs(batch_shape)

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return mininn.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        tiny = float(np.finfo(self.probs._data.dtype).tiny)
        with mininn.no_grad(), default_generator._lock:
            u = default_generator.rng.uniform(tiny, 1, size=tuple(shape))
        with mininn.no_grad():
            return (mininn.tensor(u, dtype=self.probs.dtype).log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.masked_fill((probs == 1) & (value == 0), 0.0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        bce = mininn.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
        return bce / self.probs


class Binomial(_ProbsOrLogits):
    """Successes in ``total_count`` Bernoulli(``probs``) trials."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        (count,) = self._set_param(probs, logits, total_count)
        self.total_count = count.type_as(self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Binomial:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expand_probs(batch_shape, total_count=self.total_count.expand(batch_shape))

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with mininn.no_grad():
            return mininn.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        clamped = (logits.clamp(min=0) + logits - logits.clamp(max=0)) / 2
        normalizer = n * clamped + n * mininn.log1p(mininn.exp(-logits.abs())) - mininn.lgamma(n + 1)
        return value * logits - mininn.lgamma(value + 1) - mininn.lgamma(n - value + 1) - normalizer

    def _homogeneous_count(self, what: str) -> int:
        total = int(self.total_count.max())
        if not int(self.total_count.min()) == total:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total

    def entropy(self) -> Tensor:
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(mininn.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``0 .. total_count``, shaped ``(n + 1,) + (1,) * len(batch_shape)`` (expanded to the batch)."""
        total = self._homogeneous_count("enumerate_support")
        values = mininn.arange(1 + total, dtype=self._param.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class NegativeBinomial(_ProbsOrLogits):
    """Successes before ``total_count`` failures in Bernoulli(``probs``) trials (``total_count`` may be
    fractional): a Poisson whose rate is Gamma(``total_count``, ``exp(-logits)``)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "total_count": constraints.greater_than_eq(0), "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        (count,) = self._set_param(probs, logits, total_count)
        self.total_count = count.type_as(self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> NegativeBinomial:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expand_probs(batch_shape, total_count=self.total_count.expand(batch_shape))

    @property
    def mean(self) -> Tensor:
        return self.total_count * mininn.exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / mininn.sigmoid(-self.logits)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with mininn.no_grad():
            rate = Gamma(self.total_count, mininn.exp(-self.logits), validate_args=False).sample(sample_shape)
            return mininn.poisson(rate)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logsigmoid = mininn.nn.functional.logsigmoid
        n = self.total_count
        unnormalised = n * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        with np.errstate(invalid="ignore"):  # lgamma(0) - lgamma(0) where n = value = 0, masked below
            normaliser = -mininn.lgamma(n + value) + mininn.lgamma(1.0 + value) + mininn.lgamma(n)
        return unnormalised - normaliser.masked_fill(n + value == 0.0, 0.0)
