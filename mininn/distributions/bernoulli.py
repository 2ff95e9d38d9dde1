"""``Bernoulli(probs=...)`` or ``Bernoulli(logits=...)``: a coin flip with success probability ``probs``."""

from __future__ import annotations

from functools import cached_property
from numbers import Number
from typing import Any, ClassVar

import mininn
from mininn.distributions import constraints
from mininn.distributions.exp_family import ExponentialFamily
from mininn.distributions.utils import broadcast_all, logits_to_probs, probs_to_logits
from mininn.tensor import Size, Tensor

__all__ = ["Bernoulli"]


def _softplus(x: Tensor) -> Tensor:
    """``log(1 + exp(x))`` without overflow."""
    return x.clamp(min=0) + mininn.log1p(mininn.exp(-x.abs()))


def _bce_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """Elementwise binary cross-entropy of ``target`` under log-odds ``logits``."""
    return _softplus(logits) - logits * target


class Bernoulli(ExponentialFamily):
    """1 with probability ``probs`` (or ``sigmoid(logits)``), else 0; give exactly one of the two."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval, "logits": constraints.real,
    }
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        self._param = param
        super().__init__(Size() if is_scalar else param.shape, validate_args=validate_args)

    @cached_property
    def logits(self) -> Tensor:  # noqa: F811 - the other parametrisation, computed on first use
        return probs_to_logits(self.probs, is_binary=True)

    @cached_property
    def probs(self) -> Tensor:  # noqa: F811
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with mininn.no_grad():
            return mininn.bernoulli(self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = mininn.broadcast_tensors(self.logits, value)
        return -_bce_with_logits(logits, value)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Bernoulli:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        new = self._expanded(batch_shape, {"probs": 0, "logits": 0})
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new

    def entropy(self) -> Tensor:
        return _bce_with_logits(self.logits, self.probs)

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        return (mininn.logit(self.probs),)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return mininn.log1p(mininn.exp(x))

    _mean_carrier_measure = 0.0

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The values 0 and 1, shaped ``(2,) + (1,) * len(batch_shape)`` (expanded to the batch)."""
        values = mininn.tensor([0.0, 1.0], dtype=self._param.dtype)
        values = values.reshape((2,) + (1,) * len(self._batch_shape))
        return values.expand((2,) + tuple(self._batch_shape)) if expand else values
