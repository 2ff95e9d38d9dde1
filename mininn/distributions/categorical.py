"""``Categorical(probs=...)`` or ``Categorical(logits=...)``: one of ``K`` categories per draw."""

from __future__ import annotations

from functools import cached_property
from typing import Any, ClassVar

import numpy as np

import mininn
from mininn.distributions import constraints
from mininn.distributions.distribution import Distribution
from mininn.distributions.utils import logits_to_probs, probs_to_logits
from mininn.tensor import Size, Tensor

__all__ = ["Categorical"]


class Categorical(Distribution):
    """Category ``i`` of the last dim with probability ``probs[..., i]`` (normalised), or
    ``softmax(logits)[..., i]``; give exactly one of the two. Samples are int64 indices."""

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {
        "probs": constraints.simplex, "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            param = self.logits
        self._param = param
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    @cached_property
    def logits(self) -> Tensor:  # noqa: F811 - the other parametrisation, computed on first use
        return probs_to_logits(self.probs)

    @cached_property
    def probs(self) -> Tensor:  # noqa: F811
        return logits_to_probs(self.logits)

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self) -> Size:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        return mininn.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return mininn.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        sample_shape = Size(sample_shape)
        n = sample_shape.numel()
        probs_2d = self.probs.reshape(-1, self._num_events)
        with mininn.no_grad():
            draws = mininn.multinomial(probs_2d, n, True).T  # (n, batch)
        return draws.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = mininn.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Categorical:
        """The same distribution repeated over ``batch_shape`` (parameters expanded, not copied)."""
        new = self._expanded(batch_shape, {"probs": 1, "logits": 1}, _num_events=self._num_events)
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new

    def entropy(self) -> Tensor:
        smallest = float(np.finfo(self.logits._data.dtype).min)
        logits = self.logits.clamp(min=smallest)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The categories ``0 .. K-1``, shaped ``(K,) + (1,) * len(batch_shape)`` (expanded to the batch)."""
        values = mininn.arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
