"""``mininn.distributions``: probability distributions with torch's interface.

``Distribution`` (the base) and ``Bernoulli``, ``Categorical``, ``Normal``,
``Uniform``: ``sample``/``rsample``, ``log_prob``, ``entropy``, ``mean``,
``variance``, ``expand``, argument validation with torch's messages, and ``kl_divergence``. Samples come from
mininn's global generator (``mininn.manual_seed``), not torch's sequence.
"""

from mininn.distributions import constraints
from mininn.distributions.bernoulli import Bernoulli
from mininn.distributions.categorical import Categorical
from mininn.distributions.distribution import Distribution
from mininn.distributions.kl import kl_divergence, register_kl
from mininn.distributions.normal import Normal
from mininn.distributions.uniform import Uniform

__all__ = [
    "Bernoulli",
    "Categorical",
    "Distribution",
    "Normal",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
]
