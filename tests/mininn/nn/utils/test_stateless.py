"""nn.utils.stateless.functional_call against torch 2.13: replaced tensors for one call,
gradients to the given tensors, tied weights, strict key checks, restoration."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn.utils import stateless
from tests.mininn.nn._layer_parity import same_error, to_numpy, twin

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:`torch.nn.utils.stateless.functional_call` is deprecated")


def _tied(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(2, 2)
            self.b = lib.nn.Linear(2, 2)
            self.b.weight = self.a.weight
            self.register_buffer("buf", lib.ones(2))

        def forward(self, x):
            return self.b(self.a(x)) * self.buf

    return Tied()


@pytest.fixture
def tied():
    torch.manual_seed(0)
    t = _tied(torch)
    return t, twin(t, _tied(mininn))


CALLS = [
    ({"a.weight": np.zeros((2, 2))}, {}),
    ({"b.weight": np.eye(2), "buf": np.full(2, 2.0)}, {}),
    ({"a.weight": np.zeros((2, 2)), "b.weight": np.ones((2, 2))}, {"tie_weights": False}),
    ({"a.weight": np.eye(2)}, {"tie_weights": False}),
    ({"a.new": np.ones(1)}, {}),
]


@pytest.mark.parametrize("tensors, options", CALLS, ids=str)
def test_functional_call_matches_torch_and_restores_the_module(tied, tensors, options):
    t, m = tied
    x = np.ones((1, 2), np.float32)
    t_vals = {k: torch.tensor(v.astype(np.float32), requires_grad=True) for k, v in tensors.items()}
    m_vals = {k: mininn.tensor(v.astype(np.float32), requires_grad=True) for k, v in tensors.items()}
    to = torch.nn.utils.stateless.functional_call(t, t_vals, torch.tensor(x), **options)
    mo = stateless.functional_call(m, m_vals, (mininn.tensor(x),), {}, **options)
    np.testing.assert_allclose(to_numpy(mo), to_numpy(to), rtol=1e-6, atol=1e-7)
    to.sum().backward()
    mo.sum().backward()
    for k, tv in t_vals.items():
        if tv.grad is not None:
            np.testing.assert_allclose(to_numpy(m_vals[k].grad), to_numpy(tv.grad), rtol=1e-6, atol=1e-7)
    assert m.b.weight is m.a.weight and isinstance(m.a.weight, nn.Parameter) and not hasattr(m.a, "new")
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]


@pytest.mark.parametrize("given, options", [
    ({"a.weight": 0.0, "b.weight": 1.0}, {}),
    ({"a.weight": 0.0, "zz": 1.0}, {"strict": True}),
    ({"a.weight": 0.0, "zz": 1.0}, {"strict": True, "tie_weights": False}),
    ({"c.x": 1.0}, {}),
], ids=str)
def test_functional_call_errors_match_torch(tied, given, options):
    t, m = tied
    t_vals = {k: torch.full((2, 2), v) for k, v in given.items()}
    m_vals = {k: mininn.full((2, 2), v) for k, v in given.items()}
    same_error(lambda: torch.nn.utils.stateless.functional_call(t, t_vals, torch.ones(1, 2), **options),
               lambda: stateless.functional_call(m, m_vals, mininn.ones(1, 2), **options))


def test_functional_call_warns_like_torch():
    with pytest.warns(FutureWarning) as t_rec:
        torch.nn.utils.stateless.functional_call(torch.nn.Identity(), {}, torch.ones(1))
    with pytest.warns(FutureWarning) as m_rec:
        stateless.functional_call(nn.Identity(), {}, mininn.ones(1))
    assert str(m_rec[0].message) == str(t_rec[0].message)
