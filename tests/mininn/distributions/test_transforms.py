"""The elementwise transforms against torch 2.13: forward, inverse and log-Jacobian values with
gradients, signs, domains, equality, reprs, and composition."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(13)
X = _RNG.standard_normal((3, 4))
POSITIVE = _RNG.uniform(0.2, 3.0, (3, 4))
UNIT = _RNG.uniform(0.05, 0.95, (3, 4))


def T(lib):  # noqa: N802 - the transforms module of either library
    return lib.distributions.transforms


def _compose(lib):
    t = T(lib)
    return t.ComposeTransform([t.ExpTransform(), t.AffineTransform(1.0, 3.0),
                               t.PowerTransform(lib.tensor(0.5, dtype=lib.float64))])


MAKERS = {  # name -> (transform, domain sample)
    "Exp": (lambda lib: T(lib).ExpTransform(), X),
    "Abs": (lambda lib: T(lib).AbsTransform(), X),
    "Affine": (lambda lib: T(lib).AffineTransform(0.5, -2.0), X),
    "Power": (lambda lib: T(lib).PowerTransform(lib.tensor(1.7, dtype=lib.float64)), POSITIVE),
    "Sigmoid": (lambda lib: T(lib).SigmoidTransform(), X),
    "Softplus": (lambda lib: T(lib).SoftplusTransform(), X),
    "Tanh": (lambda lib: T(lib).TanhTransform(), X),
    "Compose": (_compose, X),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_forward_inverse_and_log_jacobian_match_torch(name):
    make, x = MAKERS[name]
    run_both(lambda lib, a: make(lib)(a), x)
    run_both(lambda lib, a: make(lib).inv(make(lib)(a.detach()) * 1.0), x)
    if name != "Abs":  # torch's AbsTransform has no log-Jacobian (it is not bijective)
        run_both(lambda lib, a: make(lib).log_abs_det_jacobian(a, make(lib)(a)), x)
        run_both(lambda lib, a: make(lib).inv.log_abs_det_jacobian(make(lib)(a), a), x)
    ours, theirs = make(mininn), make(torch)
    assert repr(ours) == repr(theirs)
    assert repr(ours.inv) == repr(theirs.inv)
    assert repr(ours.domain) == repr(theirs.domain) and repr(ours.codomain) == repr(theirs.codomain)
    assert ours.bijective == theirs.bijective
    assert ours == make(mininn) and (theirs == make(torch))
    assert (ours == T(mininn).ExpTransform()) == (theirs == T(torch).ExpTransform())


def test_signs_and_identity_match_torch():
    for lib in (mininn, torch):
        assert T(lib).AffineTransform(0.0, -2.0).sign == -1
        assert T(lib).ComposeTransform([T(lib).AffineTransform(0.0, -2.0), T(lib).ExpTransform()]).sign == -1
        assert float(T(lib).PowerTransform(lib.tensor(-1.0)).sign) == -1.0
        x = lib.tensor([0.3, -1.0])
        assert T(lib).identity_transform(x).tolist() == x.tolist()
        assert T(lib).identity_transform.log_abs_det_jacobian(x, x).tolist() == [0.0, 0.0]
    assert repr(T(mininn).identity_transform) == repr(T(torch).identity_transform)


def test_a_composed_transform_in_a_transformed_distribution_matches_torch():
    def dist(lib, loc, scale):
        d = lib.distributions
        squash = d.ComposeTransform([d.SoftplusTransform(), d.AffineTransform(1.0, 2.0)])
        return d.TransformedDistribution(d.Normal(loc, scale), squash)

    loc, scale, value = X[0], POSITIVE[0], (POSITIVE[1] * 2 + 1.5)
    run_both(lambda lib, m, s, v: dist(lib, m, s).log_prob(v), loc, scale, value)
    run_both(lambda lib, m, s, v: dist(lib, m, s).cdf(v), loc, scale, value)
    run_both(lambda lib, m, s, q: dist(lib, m, s).icdf(q), loc, scale, UNIT[0])


VECTOR = {  # name -> (transform, domain sample)
    "Softmax": (lambda lib: T(lib).SoftmaxTransform(), X),
    "StickBreaking": (lambda lib: T(lib).StickBreakingTransform(), X),
    "LowerCholesky": (lambda lib: T(lib).LowerCholeskyTransform(), _RNG.standard_normal((2, 3, 3))),
    "PositiveDefinite": (lambda lib: T(lib).PositiveDefiniteTransform(), _RNG.standard_normal((2, 3, 3))),
    "Independent": (lambda lib: T(lib).IndependentTransform(T(lib).ExpTransform(), 1), X),
}


@pytest.mark.parametrize("name", sorted(VECTOR))
def test_vector_transforms_match_torch(name):
    make, x = VECTOR[name]
    run_both(lambda lib, a: make(lib)(a), x)
    run_both(lambda lib, a: make(lib).inv(make(lib)(a.detach()) * 1.0), x)
    if name in ("StickBreaking", "Independent"):
        run_both(lambda lib, a: make(lib).log_abs_det_jacobian(a, make(lib)(a)), x)
    ours, theirs = make(mininn), make(torch)
    assert repr(ours) == repr(theirs)
    assert repr(ours.domain) == repr(theirs.domain) and repr(ours.codomain) == repr(theirs.codomain)
    assert ours.bijective == theirs.bijective
    assert ours.codomain.check(ours(mininn.tensor(x))).all()


def _constraints(c):
    return [c.real, c.positive, c.nonnegative, c.greater_than(2.0), c.greater_than_eq(-1.0),
            c.less_than(1.0), c.unit_interval, c.interval(-1.0, 3.0), c.half_open_interval(0.0, 2.0),
            c.simplex, c.real_vector, c.independent(c.positive, 1), c.lower_cholesky, c.positive_definite,
            c.integer_interval(0, 3)]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("index", range(15))
def test_biject_to_and_transform_to_choose_torchs_transform(registry, index):
    ours_c = _constraints(mininn.distributions.constraints)[index]
    theirs_c = _constraints(torch.distributions.constraints)[index]

    def pick(lib, constraint):
        return getattr(lib.distributions, registry)(constraint)

    try:
        expected = pick(torch, theirs_c)
    except NotImplementedError:
        same_error(lambda: pick(torch, theirs_c), lambda: pick(mininn, ours_c))
        return
    assert repr(pick(mininn, ours_c)) == repr(expected)
    matrices = "Cholesky" in repr(expected) or "Definite" in repr(expected)
    x = _RNG.standard_normal((2, 3, 3) if matrices else (2, 3))
    run_both(lambda lib, a: pick(lib, ours_c if lib is mininn else theirs_c)(a), x)
    y = pick(mininn, ours_c)(mininn.tensor(x))
    assert ours_c.check(y).all()


def test_registering_a_factory_like_torch():
    for lib in (mininn, torch):
        d = lib.distributions
        registry = d.constraint_registry.ConstraintRegistry()
        registry.register(d.constraints.positive, lambda c, d=d: d.ExpTransform())
        assert isinstance(registry(d.constraints.positive), d.ExpTransform)

    def bad(lib):
        return lib.distributions.constraint_registry.ConstraintRegistry().register(int, lambda c: None)

    same_error(lambda: bad(torch), lambda: bad(mininn))
