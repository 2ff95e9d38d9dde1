"""ExponentialFamily against torch 2.13: which families are members, the generic entropy and the
Bregman-divergence KL from each member's natural parameters and log normaliser, and the refusal
of a cross-family KL in torch's words."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(9)
A, B = _RNG.uniform(0.5, 3.0, (2, 3)), _RNG.uniform(0.5, 3.0, (2, 3))
C, E = _RNG.uniform(0.5, 3.0, (2, 3)), _RNG.uniform(0.5, 3.0, (2, 3))


def D(lib):  # noqa: N802 - the distributions module of either library
    return lib.distributions


MEMBERS = {
    "Normal": lambda lib, a, b: D(lib).Normal(a - 1.5, b),
    "Gamma": lambda lib, a, b: D(lib).Gamma(a, b),
    "Chi2": lambda lib, a, b: D(lib).Chi2(a),
    "Exponential": lambda lib, a, b: D(lib).Exponential(a),
    "Bernoulli": lambda lib, a, b: D(lib).Bernoulli(a / 3.5),
    "Beta": lambda lib, a, b: D(lib).Beta(a, b),
    "Dirichlet": lambda lib, a, b: D(lib).Dirichlet(a),
    "Poisson": lambda lib, a, b: D(lib).Poisson(a),
    "ContinuousBernoulli": lambda lib, a, b: D(lib).ContinuousBernoulli(logits=a - 1.5),
}


def _members(lib):
    base = D(lib).ExponentialFamily
    classes = {n: getattr(D(lib), n) for n in D(lib).__all__}
    return {n for n, c in classes.items() if isinstance(c, type) and issubclass(c, base)}


def test_the_members_are_torchs():
    assert _members(mininn) == _members(torch) - {"Wishart"}  # the one mininn lacks


@pytest.mark.parametrize("name", sorted(set(MEMBERS) - {"Poisson", "Beta", "Dirichlet"}))
def test_generic_entropy_equals_torchs(name):
    make = MEMBERS[name]
    run_both(lambda lib, a, b: D(lib).ExponentialFamily.entropy(make(lib, a, b)), A, B, check_grad=False)


@pytest.mark.parametrize("name", sorted(MEMBERS))
def test_bregman_kl_equals_torchs(name):
    make = MEMBERS[name]

    def bregman(lib, a, b, c, e):
        if lib is mininn:
            return mininn.distributions.exp_family.bregman_kl(make(lib, a, b), make(lib, c, e))
        return torch.distributions.kl._kl_expfamily_expfamily(make(lib, a, b), make(lib, c, e))

    run_both(bregman, A, B, C, E)  # gradients reach q's parameters only, in both
    closed_form = lambda lib, a, b, c, e: D(lib).kl_divergence(make(lib, a, b), make(lib, c, e))  # noqa: E731
    if name != "Bernoulli":  # torch's Bernoulli closed form and its Bregman form round differently
        np.testing.assert_allclose(bregman(mininn, *map(mininn.tensor, (A, B, C, E))).detach().numpy(),
                                   closed_form(mininn, *map(mininn.tensor, (A, B, C, E))).detach().numpy(),
                                   rtol=1e-9)


def test_cross_family_kl_and_missing_carrier_measure_raise_like_torch():
    same_error(lambda: D(torch).kl_divergence(D(torch).Normal(0.0, 1.0), D(torch).Bernoulli(0.5)),
               lambda: D(mininn).kl_divergence(D(mininn).Normal(0.0, 1.0), D(mininn).Bernoulli(0.5)))
    for lib in (torch, mininn):
        with pytest.raises(NotImplementedError):
            D(lib).Poisson(lib.tensor([1.0])).entropy()
