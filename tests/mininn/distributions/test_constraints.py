"""Constraints against torch 2.13: checks, reprs and flags, the dependent placeholders users write
in their own distributions, and how validation treats them."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")


def C(lib):  # noqa: N802 - the constraints module of either library
    return lib.distributions.constraints


_M = np.array([[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]], [[1.0, 0.0], [3.0, 1.0]]])
VALUES = {
    "matrices": _M,
    "vectors": np.array([[0.2, 0.8], [0.5, 0.6], [1.0, 0.0], [-0.1, 1.1]]),
    "scalars": np.array([-1.5, -0.0, 0.0, 0.3, 1.0, 2.0, 2.5, float("inf")]),
}
CASES = [
    ("square", "matrices"), ("symmetric", "matrices"), ("positive_semidefinite", "matrices"),
    ("positive_definite", "matrices"), ("lower_triangular", "matrices"), ("lower_cholesky", "matrices"),
    ("simplex", "vectors"), ("one_hot", "vectors"), ("real_vector", "vectors"), ("real", "scalars"),
    ("positive", "scalars"), ("nonnegative", "scalars"), ("unit_interval", "scalars"),
    ("boolean", "scalars"),
    ("nonnegative_integer", "scalars"), ("positive_integer", "scalars"),
]


@pytest.mark.parametrize(("name", "kind"), CASES)
def test_constraint_checks_reprs_and_flags_match_torch(name, kind):
    ours, theirs = getattr(C(mininn), name), getattr(C(torch), name)
    value = VALUES[kind]
    assert ours.check(mininn.tensor(value)).tolist() == theirs.check(torch.tensor(value)).tolist()
    assert repr(ours) == repr(theirs)
    assert (ours.is_discrete, ours.event_dim) == (theirs.is_discrete, theirs.event_dim)


@pytest.mark.parametrize("make", [
    lambda c: c.greater_than_eq(1.0), lambda c: c.half_open_interval(0.0, 2.0),
    lambda c: c.interval(0.0, 1.0),
    lambda c: c.integer_interval(0, 2), lambda c: c.multinomial(2), lambda c: c.independent(c.positive, 1),
])
def test_parametrised_constraints_match_torch(make):
    ours, theirs = make(C(mininn)), make(C(torch))
    value = VALUES["vectors"] * 2
    assert ours.check(mininn.tensor(value)).tolist() == theirs.check(torch.tensor(value)).tolist()
    assert repr(ours) == repr(theirs)


def test_dependent_placeholders_behave_like_torchs():
    for lib in (mininn, torch):
        c = C(lib)
        assert c.is_dependent(c.dependent) and not c.is_dependent(c.real)
        assert c.dependent(is_discrete=True, event_dim=1).event_dim == 1
        with pytest.raises(NotImplementedError):
            _ = c.dependent.event_dim
    assert repr(C(mininn).dependent) == repr(C(torch).dependent)
    same_error(lambda: C(torch).dependent.check(torch.zeros(1)),
               lambda: C(mininn).dependent.check(mininn.zeros(1)))


def _truncated_normal(lib):
    """A truncated normal as users write one: a dependent support and a dependent argument."""
    dist, c = lib.distributions, C(lib)

    class TruncatedNormal(dist.Distribution):
        arg_constraints = {"loc": c.real, "scale": c.positive, "low": c.dependent}  # noqa: RUF012
        has_rsample = False

        def __init__(self, loc, scale, low, validate_args=None):
            self.loc, self.scale, self.low = dist.utils.broadcast_all(loc, scale, low)
            super().__init__(self.loc.shape, validate_args=validate_args)

        @c.dependent_property(is_discrete=False, event_dim=0)
        def support(self):
            return c.greater_than_eq(self.low)

        def log_prob(self, value):
            if self._validate_args:
                self._validate_sample(value)
            base = dist.Normal(self.loc, self.scale)
            return base.log_prob(value) - (1 - base.cdf(self.low)).log()

    return TruncatedNormal


def test_a_user_distribution_with_dependent_constraints_validates_like_torchs():
    ours = _truncated_normal(mininn)(mininn.tensor([0.0, 1.0]), mininn.tensor([1.0, 2.0]), -0.5)
    theirs = _truncated_normal(torch)(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]), -0.5)
    np.testing.assert_allclose(ours.log_prob(mininn.tensor([0.3, 2.0])).numpy(),
                               theirs.log_prob(torch.tensor([0.3, 2.0])).numpy(), rtol=1e-6)
    assert repr(ours.support) == repr(theirs.support)
    assert C(mininn).is_dependent(_truncated_normal(mininn).support)  # on the class: a placeholder
    assert C(torch).is_dependent(_truncated_normal(torch).support)
    same_error(lambda: theirs.log_prob(torch.tensor([-1.0, 0.0])),
               lambda: ours.log_prob(mininn.tensor([-1.0, 0.0])))
    same_error(lambda: _truncated_normal(torch)(torch.tensor([0.0]), torch.tensor([-1.0]), 0.0),
               lambda: _truncated_normal(mininn)(mininn.tensor([0.0]), mininn.tensor([-1.0]), 0.0))
