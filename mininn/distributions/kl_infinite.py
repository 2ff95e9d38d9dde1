"""The pairs whose KL(p || q) torch registers as infinite everywhere: ``p`` puts mass where ``q``
has none (a real-valued ``p`` against a ``q`` on the positive numbers or an interval, a Poisson
against a bounded count), so the result is ``inf`` shaped like ``p``'s parameter."""

from __future__ import annotations

import math
from typing import Any

import mininn
from mininn.distributions.bernoulli import Bernoulli
from mininn.distributions.continuous_bernoulli import ContinuousBernoulli
from mininn.distributions.counts import Binomial, Poisson
from mininn.distributions.dirichlet import Beta
from mininn.distributions.extreme_value import Gumbel, Pareto
from mininn.distributions.gamma import Exponential, Gamma
from mininn.distributions.kl import register_kl
from mininn.distributions.location_scale import Laplace
from mininn.distributions.normal import Normal
from mininn.distributions.uniform import Uniform
from mininn.tensor import Tensor

__all__: list[str] = []

# p's family -> (the parameter whose shape the result takes, the q families)
_INFINITE: dict[type, tuple[str, tuple[type, ...]]] = {
    Beta: ("concentration1", (Pareto,)),
    ContinuousBernoulli: ("probs", (Pareto,)),
    Exponential: ("rate", (Beta, ContinuousBernoulli, Pareto, Uniform)),
    Gamma: ("concentration", (Beta, ContinuousBernoulli, Pareto, Uniform)),
    Gumbel: ("loc", (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
    Laplace: ("loc", (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
    Normal: ("loc", (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)),
    Pareto: ("scale", (Beta, ContinuousBernoulli, Uniform)),
    Poisson: ("rate", (Bernoulli, Binomial)),
}


def _infinite(param: str) -> Any:
    def kl(p: Any, q: Any) -> Tensor:
        return mininn.full_like(getattr(p, param), math.inf)

    return kl


for _p_type, (_param, _q_types) in _INFINITE.items():
    for _q_type in _q_types:
        register_kl(_p_type, _q_type)(_infinite(_param))
