"""nn.utils.parametrize against torch 2.13: class swap, state-dict keys, forward and
gradients through a parametrization, right_inverse on assignment, caching, removal, errors."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn.utils import parametrize
from tests.mininn.nn._layer_parity import same_error, state_layout, to_numpy
from tests.mininn.nn.utils._norm_twins import assert_steps_match, build, load_from

torch = pytest.importorskip("torch")
P = torch.nn.utils.parametrize


def _plugins(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return (x + x.transpose(0, 1)) / 2

    class Scale(lib.nn.Module):
        def forward(self, x):
            return x * 3

        def right_inverse(self, x):
            return x / 3

    class Sum(lib.nn.Module):
        def forward(self, a, b):
            return a + b

        def right_inverse(self, x):
            return x * 0.25, x * 0.75

    class ToDouble(lib.nn.Module):
        def forward(self, x):
            return x.double()

    class First(lib.nn.Module):
        def forward(self, x):
            return x[0]

    return {c.__name__: c for c in (Symmetric, Scale, Sum, ToDouble, First)}


T_PLUG, M_PLUG = _plugins(torch), _plugins(mininn)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chain", [["Symmetric"], ["Scale"], ["Sum"], ["Scale", "Symmetric"],
                                   ["Sum", "Scale"]], ids=str)
def test_parametrized_linear_keys_repr_outputs_and_grads_match_torch(chain, dtype):
    t, m = build("Linear", (4, 4), dtype)
    for name in chain:
        P.register_parametrization(t, "weight", T_PLUG[name]())
        parametrize.register_parametrization(m, "weight", M_PLUG[name]())
    assert type(m).__name__ == type(t).__name__ == "ParametrizedLinear"
    assert isinstance(m, nn.Linear)
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert state_layout(m) == state_layout(t)
    assert repr(m).replace("mininn", "torch") == repr(t).replace("__main__", "torch")
    load_from(t, m)
    np.testing.assert_allclose(to_numpy(m.weight), to_numpy(t.weight), rtol=1e-6)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(dtype)
    assert_steps_match(t, m, x, steps=(True,), tol=1e-5 if dtype == np.float32 else 1e-12)


def test_is_parametrized_and_a_parametrized_buffer():
    t, m = build("BatchNorm1d", (3,))
    assert not parametrize.is_parametrized(m)
    P.register_parametrization(t, "running_var", T_PLUG["Scale"]())
    parametrize.register_parametrization(m, "running_var", M_PLUG["Scale"]())
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "running_var")
    assert not parametrize.is_parametrized(m, "weight")
    assert state_layout(m) == state_layout(t)
    assert list(dict(m.named_buffers())) == list(dict(t.named_buffers()))
    np.testing.assert_allclose(to_numpy(m.running_var), to_numpy(t.running_var))


def test_assigning_goes_through_right_inverse_and_keeps_the_same_original():
    t, m = build("Linear", (3, 3))
    P.register_parametrization(t, "weight", T_PLUG["Scale"]())
    parametrize.register_parametrization(m, "weight", M_PLUG["Scale"]())
    original = m.parametrizations.weight.original
    value = np.arange(9, dtype=np.float32).reshape(3, 3)
    t.weight = torch.tensor(value)
    m.weight = mininn.tensor(value)
    assert m.parametrizations.weight.original is original
    np.testing.assert_allclose(to_numpy(original), to_numpy(t.parametrizations.weight.original))
    np.testing.assert_allclose(to_numpy(m.weight), value, rtol=1e-6)


def test_cached_computes_each_parametrized_tensor_once():
    m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", M_PLUG["Scale"]())
    assert m.weight is not m.weight
    with parametrize.cached():
        first = m.weight
        assert m.weight is first
        with parametrize.cached():
            assert m.weight is first
        assert m.weight is first
    assert m.weight is not first


@pytest.mark.parametrize("leave_parametrized", [True, False])
def test_remove_parametrizations_restores_the_class_and_keys_like_torch(leave_parametrized):
    t, m = build("Linear", (3, 3))
    P.register_parametrization(t, "weight", T_PLUG["Scale"]())
    parametrize.register_parametrization(m, "weight", M_PLUG["Scale"]())
    P.register_parametrization(t, "bias", T_PLUG["Scale"]())
    parametrize.register_parametrization(m, "bias", M_PLUG["Scale"]())
    load_from(t, m)
    original = m.parametrizations.weight.original
    P.remove_parametrizations(t, "weight", leave_parametrized)
    parametrize.remove_parametrizations(m, "weight", leave_parametrized)
    assert state_layout(m) == state_layout(t) and type(m).__name__ == "ParametrizedLinear"
    assert m.weight is original
    np.testing.assert_allclose(to_numpy(m.weight), to_numpy(t.weight), rtol=1e-6)
    P.remove_parametrizations(t, "bias", leave_parametrized)
    parametrize.remove_parametrizations(m, "bias", leave_parametrized)
    assert type(m) is nn.Linear and "parametrizations" not in m._modules
    assert state_layout(m) == state_layout(t) and repr(m) == repr(t)


def test_remove_a_multi_tensor_parametrization_keeps_its_value():
    t, m = build("Linear", (3, 3))
    P.register_parametrization(t, "weight", T_PLUG["Sum"]())
    parametrize.register_parametrization(m, "weight", M_PLUG["Sum"]())
    load_from(t, m)
    same_error(lambda: P.remove_parametrizations(t, "weight", leave_parametrized=False),
               lambda: parametrize.remove_parametrizations(m, "weight", leave_parametrized=False))
    P.remove_parametrizations(t, "weight")
    parametrize.remove_parametrizations(m, "weight")
    assert isinstance(m.weight, nn.Parameter) and state_layout(m) == state_layout(t)
    np.testing.assert_allclose(to_numpy(m.weight), to_numpy(t.weight), rtol=1e-6)


def test_a_parametrized_module_deep_copies_but_refuses_pickle():
    m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", M_PLUG["Scale"]())
    replica = copy.deepcopy(m)
    assert type(replica) is type(m)
    assert replica.parametrizations.weight.original is not m.parametrizations.weight.original
    np.testing.assert_array_equal(to_numpy(replica.weight), to_numpy(m.weight))
    t = P.register_parametrization(torch.nn.Linear(3, 3), "weight", T_PLUG["Scale"]())
    same_error(lambda: pickle.dumps(t), lambda: pickle.dumps(m))


@pytest.mark.parametrize("plugin", ["ToDouble", "First"])
def test_registration_checks_dtype_and_shape_like_torch(plugin):
    same_error(lambda: P.register_parametrization(torch.nn.Linear(3, 3), "weight", T_PLUG[plugin]()),
               lambda: parametrize.register_parametrization(nn.Linear(3, 3), "weight", M_PLUG[plugin]()))
    t = P.register_parametrization(torch.nn.Linear(3, 3), "weight", T_PLUG["Scale"]())
    m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", M_PLUG["Scale"]())
    same_error(lambda: P.register_parametrization(t, "weight", T_PLUG[plugin]()),
               lambda: parametrize.register_parametrization(m, "weight", M_PLUG[plugin]()))
    m_unsafe = parametrize.register_parametrization(nn.Linear(3, 3), "weight", M_PLUG[plugin](), unsafe=True)
    t_unsafe = P.register_parametrization(torch.nn.Linear(3, 3), "weight", T_PLUG[plugin](), unsafe=True)
    assert tuple(m_unsafe.weight.shape) == tuple(t_unsafe.weight.shape)
    same_error(lambda: setattr(t_unsafe, "weight", torch.ones(3, 3)),
               lambda: setattr(m_unsafe, "weight", mininn.ones(3, 3)))


def test_other_errors_match_torch():
    t, m = torch.nn.Linear(3, 3), nn.Linear(3, 3)
    same_error(lambda: P.register_parametrization(t, "nope", T_PLUG["Scale"]()),
               lambda: parametrize.register_parametrization(m, "nope", M_PLUG["Scale"]()))
    same_error(lambda: P.remove_parametrizations(t, "weight"),
               lambda: parametrize.remove_parametrizations(m, "weight"))


@pytest.mark.parametrize("plugin", ["Scale", "Sum"])
def test_transfer_parametrizations_and_params_matches_torch(plugin):
    t_from, m_from = build("Linear", (3, 3))
    P.register_parametrization(t_from, "weight", T_PLUG[plugin]())
    parametrize.register_parametrization(m_from, "weight", M_PLUG[plugin]())
    load_from(t_from, m_from)
    t_to, m_to = torch.nn.Linear(3, 3), nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(t_from, t_to)
    assert parametrize.transfer_parametrizations_and_params(m_from, m_to) is m_to
    assert state_layout(m_to) == state_layout(t_to) and type(m_to).__name__ == type(t_to).__name__
    np.testing.assert_allclose(to_numpy(m_to.weight), to_numpy(t_to.weight), rtol=1e-6)
    assert m_to.parametrizations.weight[0] is m_from.parametrizations.weight[0]
    untouched = nn.Linear(3, 3)
    assert parametrize.transfer_parametrizations_and_params(nn.Linear(3, 3), untouched) is untouched
    assert not parametrize.is_parametrized(untouched)
