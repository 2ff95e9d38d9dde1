"""``kl_divergence(p, q)``: KL(p || q) for the pairs registered with ``register_kl``
(here Normal, Uniform, Bernoulli and Categorical with their own kind; ``kl_families.py``
registers the rest), with torch's conventions where the divergence is infinite or a term vanishes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

import mininn
from mininn.distributions.bernoulli import Bernoulli
from mininn.distributions.categorical import Categorical
from mininn.distributions.distribution import Distribution
from mininn.distributions.normal import Normal
from mininn.distributions.uniform import Uniform
from mininn.tensor import Tensor

__all__ = ["kl_divergence", "register_kl"]

_KLFn = Callable[[Any, Any], Tensor]
_KL: dict[tuple[type, type], _KLFn] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[_KLFn], _KLFn]:
    """Decorator: ``fn(p, q)`` computes KL(p || q) for instances of ``type_p`` and ``type_q``."""

    def decorator(fn: _KLFn) -> _KLFn:
        _KL[type_p, type_q] = fn
        return fn

    return decorator


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), batched over the distributions' batch shapes."""
    for tp in type(p).__mro__:
        for tq in type(q).__mro__:
            if (tp, tq) in _KL:
                return _KL[tp, tq](p, q)
    raise NotImplementedError(
        f"No KL(p || q) is implemented for p type {type(p).__name__} and q type {type(q).__name__}"
    )


def _softplus(x: Tensor) -> Tensor:
    return x.clamp(min=0) + mininn.log1p(mininn.exp(-x.abs()))


def _set_where(t: Tensor, mask: Any, value: float) -> Tensor:
    return mininn.where(Tensor(np.broadcast_to(np.asarray(mask._data), t.shape)), value, t)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _set_where(result, (q.low > p.low) | (q.high < p.high), math.inf)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (_softplus(-q.logits) - _softplus(-p.logits))
    t1 = _set_where(_set_where(t1, q.probs == 0, math.inf), p.probs == 0, 0.0)
    t2 = (1 - p.probs) * (_softplus(q.logits) - _softplus(p.logits))
    t2 = _set_where(_set_where(t2, q.probs == 1, math.inf), p.probs == 1, 0.0)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _set_where(_set_where(t, q.probs == 0, math.inf), p.probs == 0, 0.0)
    return t.sum(-1)
