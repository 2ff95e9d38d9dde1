"""``ExponentialFamily``: the base of the families whose density is
``exp(<t(x), theta> - F(theta) + k(x))``, with torch's generic entropy and Bregman-divergence KL
from the log normaliser ``F`` (used where a family has no closed form of its own).

As in torch, both differentiate ``F`` at detached copies of the natural parameters, so the
first-order gradient suffices and the results carry no gradient back to ``p``'s parameters.
"""

from __future__ import annotations

from typing import Any

import mininn
from mininn.distributions.distribution import Distribution
from mininn.distributions.independent import sum_rightmost
from mininn.tensor import Tensor

__all__ = ["ExponentialFamily", "bregman_kl"]


class ExponentialFamily(Distribution):
    """Subclasses give ``_natural_params``, ``_log_normalizer(*params)`` and ``_mean_carrier_measure``."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def _normalizer_and_grads(self) -> tuple[list[Tensor], Tensor, tuple[Tensor, ...]]:
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_normalizer = self._log_normalizer(*params)
        grads = mininn.autograd.grad(log_normalizer.sum(), params, retain_graph=True)
        return params, log_normalizer, grads

    def entropy(self) -> Tensor:
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]``."""
        result: Any = -self._mean_carrier_measure
        params, log_normalizer, grads = self._normalizer_and_grads()
        result = result + log_normalizer
        for param, g in zip(params, grads):
            result = result - (param * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result


def bregman_kl(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """KL(p || q) of two members of one exponential family: the Bregman divergence of ``F``."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot "
                                  + " " * 28 + "be computed using Bregman divergences")
    p_params, log_normalizer, grads = p._normalizer_and_grads()
    q_params = q._natural_params
    result = q._log_normalizer(*q_params) - log_normalizer
    for pnp, qnp, g in zip(p_params, q_params, grads):
        result = result - sum_rightmost((qnp - pnp) * g, len(q.event_shape))
    return result
