"""Continuous relaxations (Concrete / Gumbel-softmax): ``RelaxedBernoulli`` and
``RelaxedOneHotCategorical`` with their log-space bases ``LogitRelaxedBernoulli`` and
``ExpRelaxedCategorical``; all reparameterisable at a ``temperature``."""

from __future__ import annotations

from numbers import Number
from typing import Any, ClassVar

import mininn
from mininn.distributions import constraints
from mininn.distributions.categorical import Categorical
from mininn.distributions.counts import _ProbsOrLogits
from mininn.distributions.distribution import Distribution
from mininn.distributions.transformed_distribution import TransformedDistribution
from mininn.distributions.transforms import ExpTransform, SigmoidTransform
from mininn.distributions.utils import broadcast_all, clamp_probs
from mininn.tensor import Size, Tensor

__all__ = ["ExpRelaxedCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli", "RelaxedOneHotCategorical"]


def _uniforms(shape: Size, like: Tensor) -> Tensor:
    return clamp_probs(mininn.rand(tuple(shape), dtype=like.dtype))


class LogitRelaxedBernoulli(_ProbsOrLogits):
    """The logit of a ``RelaxedBernoulli`` draw: ``(logistic noise + logits) / temperature``."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval, "logits": constraints.real,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self.temperature = temperature
        self._set_param(probs, logits)
        given = probs if probs is not None else logits
        batch = Size() if isinstance(given, Number) else self._param.shape
        super().__init__(batch, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> LogitRelaxedBernoulli:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expand_probs(batch_shape, temperature=self.temperature)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(tuple(shape)))
        u = _uniforms(shape, probs)
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class _Relaxed(TransformedDistribution):
    """A relaxed distribution's parameters, read from its base (what the two relaxed classes share)."""

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs


class RelaxedBernoulli(_Relaxed):
    """Values in (0, 1) that approach Bernoulli(``probs``) draws as ``temperature`` goes to 0."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.unit_interval, "logits": constraints.real,
    }
    support = constraints.unit_interval  # type: ignore[assignment]
    has_rsample = True  # type: ignore[assignment]

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)


class ExpRelaxedCategorical(Distribution):
    """The log of a ``RelaxedOneHotCategorical`` draw: log-softmax((logits + Gumbel noise) / temperature)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex, "logits": constraints.real_vector,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> ExpRelaxedCategorical:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        return self._expanded(batch_shape, {}, temperature=self.temperature,
                              _categorical=self._categorical.expand(batch_shape))

    @property
    def param_shape(self) -> Size:
        return self._categorical.param_shape

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = _uniforms(self._extended_shape(sample_shape), self.logits)
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = mininn.full_like(self.temperature, float(k)).lgamma()
        log_scale = log_scale - self.temperature.log().mul(-(k - 1))
        score = logits - value.mul(self.temperature)
        return (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(_Relaxed):
    """Points of the simplex that approach one-hot draws of ``Categorical(probs)`` as ``temperature``
    goes to 0 (Gumbel-softmax)."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex, "logits": constraints.real_vector,
    }
    support = constraints.simplex  # type: ignore[assignment]
    has_rsample = True  # type: ignore[assignment]

    def __init__(self, temperature: Tensor, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)
