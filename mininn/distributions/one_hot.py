"""Categorical draws as vectors: ``OneHotCategorical`` (one draw, one-hot),
``OneHotCategoricalStraightThrough`` and ``Multinomial`` (counts of ``total_count`` draws)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

import mininn
from mininn._factories import default_generator
from mininn.distributions import constraints
from mininn.distributions.categorical import Categorical
from mininn.distributions.counts import Binomial
from mininn.distributions.distribution import Distribution
from mininn.distributions.utils import broadcast_all
from mininn.tensor import Size, Tensor

__all__ = ["Multinomial", "OneHotCategorical", "OneHotCategoricalStraightThrough"]


class _OverCategorical(Distribution):
    """Shared by the families built on a ``Categorical`` over the last dim."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex, "logits": constraints.real_vector,
    }
    _categorical: Categorical

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape


class OneHotCategorical(_OverCategorical):
    """A one-hot vector whose 1 falls at category ``i`` with probability ``probs[..., i]``."""

    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Any:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {}, _categorical=self._categorical.expand(batch_shape))

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return mininn.nn.functional.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Tensor:
        probs = self._categorical.probs
        return probs * (1 - probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return mininn.nn.functional.one_hot(indices, probs.shape[-1]).to(probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The ``n`` one-hot vectors, shaped ``(n,) + (1,) * len(batch_shape) + (n,)`` (expanded)."""
        n = self._event_shape[0]
        values = mininn.eye(n, dtype=self._categorical._param.dtype)
        values = values.reshape((n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand((n,) + tuple(self._batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` whose ``rsample`` passes gradients straight through to ``probs``."""

    has_rsample = True

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


class Multinomial(_OverCategorical):
    """Counts per category of ``total_count`` draws from ``Categorical(probs | logits)``."""

    def __init__(self, total_count: int = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Multinomial:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        categorical = self._categorical.expand(batch_shape)
        binomial = Binomial(self.total_count, probs=categorical.probs, validate_args=False)
        return self._expanded(batch_shape, {}, total_count=self.total_count, _categorical=categorical,
                              _binomial=binomial)

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = np.asarray(self.probs.detach()._data, np.float64)
        probs = np.broadcast_to(probs / probs.sum(-1, keepdims=True), tuple(shape))
        with default_generator._lock:
            counts = default_generator.rng.multinomial(self.total_count, probs.reshape(-1, shape[-1]))
        return mininn.tensor(counts.reshape(tuple(shape)), dtype=self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.masked_fill((value == 0) & (logits == -float("inf")), 0.0)
        log_factorial_n = mininn.lgamma(value.sum(-1) + 1)
        log_factorial_xs = mininn.lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        n = mininn.tensor(self.total_count)  # int64: lgamma(n + 1) in the default float dtype, as torch
        term1 = n * self._categorical.entropy() - mininn.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = mininn.exp(self._binomial.log_prob(support))
        weights = mininn.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum([0, -1])
