"""``mininn.distributions``: probability distributions with torch's interface.

Every family has ``sample`` (and ``rsample`` where torch's is reparameterised), ``log_prob``,
``entropy``, ``mean``, ``variance``/``stddev``, ``mode``, ``cdf``/``icdf`` where torch has them,
``support``/``arg_constraints``, ``batch_shape``/``event_shape``, ``expand``, and argument
validation with torch's messages; ``kl_divergence`` covers every pair torch registers among them
(``kl.py``, ``kl_families.py``, ``kl_cross.py``, ``kl_infinite.py``). Samples come from mininn's
global generator (``mininn.manual_seed``), not torch's sequence.

Not here (torch has them): Wishart, LKJCholesky; the transforms CorrCholesky, Reshape, Cat, Stack
and CumulativeDistribution (so ``biject_to``/``transform_to`` of corr_cholesky, cat and stack).
Gamma-family ``rsample`` gradients are exact implicit derivatives
(torch's approximate them to ~1e-4); Dirichlet/Beta ``rsample`` normalises Gamma draws, so per draw
their gradient differs from torch's (both unbiased).
"""

import sys as _sys

from mininn.distributions import (
    constraint_registry,
    constraints,
    kl_cross,
    kl_families,
    kl_infinite,
    transforms,
)
from mininn.distributions.bernoulli import Bernoulli
from mininn.distributions.categorical import Categorical
from mininn.distributions.constraint_registry import biject_to, transform_to
from mininn.distributions.continuous_bernoulli import ContinuousBernoulli
from mininn.distributions.counts import Binomial, Geometric, NegativeBinomial, Poisson
from mininn.distributions.dirichlet import Beta, Dirichlet
from mininn.distributions.distribution import Distribution
from mininn.distributions.exp_family import ExponentialFamily
from mininn.distributions.extreme_value import GeneralizedPareto, Gumbel, Pareto, Weibull
from mininn.distributions.gamma import Chi2, Exponential, Gamma
from mininn.distributions.gamma_derived import FisherSnedecor, InverseGamma
from mininn.distributions.independent import Independent
from mininn.distributions.kl import kl_divergence, register_kl
from mininn.distributions.kumaraswamy import Kumaraswamy
from mininn.distributions.location_scale import Cauchy, Laplace, StudentT
from mininn.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from mininn.distributions.mixture_same_family import MixtureSameFamily
from mininn.distributions.multivariate_normal import MultivariateNormal
from mininn.distributions.normal import Normal
from mininn.distributions.one_hot import Multinomial, OneHotCategorical, OneHotCategoricalStraightThrough
from mininn.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from mininn.distributions.transformed_distribution import (
    HalfCauchy,
    HalfNormal,
    LogisticNormal,
    LogNormal,
    TransformedDistribution,
)
from mininn.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    PowerTransform,
    SigmoidTransform,
    SoftplusTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from mininn.distributions.uniform import Uniform
from mininn.distributions.vector_transforms import (
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    SoftmaxTransform,
    StickBreakingTransform,
)
from mininn.distributions.von_mises import VonMises

del kl_cross, kl_families, kl_infinite  # imported for their registrations

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ComposeTransform",
    "ContinuousBernoulli",
    "Dirichlet",
    "Distribution",
    "ExpRelaxedCategorical",
    "ExpTransform",
    "ExponentialFamily",
    "Exponential",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "IndependentTransform",
    "InverseGamma",
    "Kumaraswamy",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LowRankMultivariateNormal",
    "LowerCholeskyTransform",
    "LogitRelaxedBernoulli",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StickBreakingTransform",
    "StudentT",
    "TanhTransform",
    "Transform",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "biject_to",
    "constraint_registry",
    "constraints",
    "identity_transform",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
]

# torch keeps one module per family (torch.distributions.beta, ...); ours group families, so torch's module
# names point at the module holding each family and `from torch.distributions.beta import Beta` works
_TORCH_MODULES = {
    "beta": "dirichlet", "binomial": "counts", "cauchy": "location_scale", "chi2": "gamma",
    "exponential": "gamma", "generalized_pareto": "extreme_value", "geometric": "counts",
    "gumbel": "extreme_value",
    "half_cauchy": "transformed_distribution", "fishersnedecor": "gamma_derived",
    "inverse_gamma": "gamma_derived", "half_normal": "transformed_distribution",
    "negative_binomial": "counts", "pareto": "extreme_value", "weibull": "extreme_value",
    "laplace": "location_scale", "log_normal": "transformed_distribution",
    "logistic_normal": "transformed_distribution", "multinomial": "one_hot",
    "one_hot_categorical": "one_hot", "poisson": "counts", "relaxed_bernoulli": "relaxed",
    "relaxed_categorical": "relaxed", "studentT": "location_scale",
}
for _torch_name, _ours in _TORCH_MODULES.items():
    globals()[_torch_name] = _sys.modules[f"{__name__}.{_ours}"]
