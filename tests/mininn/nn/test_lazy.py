"""Lazy modules against torch 2.13: placeholders, shapes inferred at the first call, the class
swap to the eager layer, state-dict loading into an uninitialised module, init and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn.parameter import is_lazy
from tests.mininn.nn._layer_parity import assert_parity, same_error, state_layout, to_numpy

torch = pytest.importorskip("torch")

# (class name, constructor args, kwargs, input shape, eager twin for checkpoints)
CASES = [
    ("LazyLinear", (3,), {}, (2, 5), ("Linear", (5, 3))),
    ("LazyLinear", (3,), {"bias": False}, (2, 4, 5), ("Linear", (5, 3), {"bias": False})),
    ("LazyConv1d", (4, 2), {}, (2, 3, 6), ("Conv1d", (3, 4, 2))),
    ("LazyConv2d", (4, 3), {"groups": 2, "padding": 1}, (1, 6, 5, 5),
     ("Conv2d", (6, 4, 3), {"groups": 2, "padding": 1})),
    ("LazyConv3d", (2, 2), {"bias": False}, (1, 3, 3, 4, 4), ("Conv3d", (3, 2, 2), {"bias": False})),
    ("LazyConvTranspose1d", (4, 2), {"stride": 2}, (2, 3, 5), ("ConvTranspose1d", (3, 4, 2), {"stride": 2})),
    ("LazyConvTranspose2d", (4, 3), {}, (3, 5, 5), ("ConvTranspose2d", (3, 4, 3))),
    ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 3, 3, 3), ("ConvTranspose3d", (3, 2, 2))),
    ("LazyBatchNorm1d", (), {}, (4, 3), ("BatchNorm1d", (3,))),
    ("LazyBatchNorm2d", (), {"affine": False}, (2, 3, 4, 4), ("BatchNorm2d", (3,), {"affine": False})),
    ("LazyBatchNorm3d", (), {"bias": False}, (2, 3, 2, 2, 2), ("BatchNorm3d", (3,), {"bias": False})),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 5),
     ("InstanceNorm1d", (3,), {"affine": True, "track_running_stats": True})),
    ("LazyInstanceNorm2d", (), {"track_running_stats": False}, (2, 3, 4, 4),
     ("InstanceNorm2d", (3,), {"affine": True})),
    ("LazyInstanceNorm3d", (), {"affine": False}, (2, 3, 2, 3, 3),
     ("InstanceNorm3d", (3,), {"track_running_stats": True})),
]
IDS = [f"{c[0]}-{c[2]}" for c in CASES]


def _pair(name, args, kwargs):
    return getattr(torch.nn, name)(*args, **kwargs), getattr(nn, name)(*args, **kwargs)


def _placeholders(module):
    return {k: repr(v) for k, v in module.state_dict().items() if is_lazy(v) or "Uninitialized" in repr(v)}


@pytest.mark.parametrize("name, args, kwargs, shape, eager", CASES, ids=IDS)
def test_lazy_module_holds_placeholders_then_becomes_the_eager_layer_like_torch(name, args, kwargs, shape,
                                                                                 eager):
    t, m = _pair(name, args, kwargs)
    assert repr(m) == repr(t)
    assert list(m.state_dict()) == list(t.state_dict())
    assert _placeholders(m) == _placeholders(t) != {}
    assert m.has_uninitialized_params() and t.has_uninitialized_params()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    t(torch.tensor(x))
    m(mininn.tensor(x))
    assert type(m).__name__ == type(t).__name__ == eager[0]
    assert isinstance(m, getattr(nn, eager[0]))
    assert repr(m) == repr(t)
    assert state_layout(m) == state_layout(t)
    assert not m._forward_pre_hooks and not m._load_state_dict_pre_hooks
    assert all(type(p) is nn.Parameter for p in m.parameters())


@pytest.mark.filterwarnings("ignore:input's size at dim=1 does not match num_features:UserWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, args, kwargs, shape, eager", CASES, ids=IDS)
def test_a_checkpoint_of_the_eager_layer_loads_into_a_fresh_lazy_module(name, args, kwargs, shape, eager,
                                                                         dtype):
    torch.manual_seed(0)
    t_eager = getattr(torch.nn, eager[0])(*eager[1], **(eager[2] if len(eager) > 2 else {}))
    t_lazy, m = _pair(name, args, kwargs)
    if dtype == np.float64:
        t_eager.double()
        t_lazy.double()
        m.double()
    with torch.no_grad():
        for p in t_eager.parameters():
            p.add_(torch.randn_like(p))
    state = t_eager.state_dict()
    t_lazy.load_state_dict(state)
    result = m.load_state_dict({k: mininn.tensor(to_numpy(v)) for k, v in state.items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert state_layout(m) == state_layout(t_lazy) and repr(m) == repr(t_lazy)
    assert type(m).__name__ == name  # still lazy until the first call
    x = np.random.default_rng(1).standard_normal(shape).astype(dtype)
    if name.startswith("LazyInstanceNorm") and kwargs.get("affine", True):
        # torch keeps num_features at 0, so the first call fails (affine) or warns
        same_error(lambda: t_lazy(torch.tensor(x)), lambda: m(mininn.tensor(x)))
        return
    assert_parity(t_eager, m, x, training=True)
    t_lazy(torch.tensor(x))
    assert type(m).__name__ == eager[0] and repr(m) == repr(t_lazy)


@pytest.mark.parametrize("name, args, kwargs, shape", [c[:4] for c in CASES[:8]], ids=IDS[:8])
def test_lazy_weights_are_initialised_like_the_eager_layer(name, args, kwargs, shape):
    mininn.manual_seed(0)
    m = getattr(nn, name)(*args, **kwargs)
    m(mininn.zeros(*shape))
    weight = m.weight.detach().numpy()
    transposed = name.startswith("LazyConvTranspose")
    fan_in = weight.shape[1] * weight[0, 0].size if transposed else weight[0].size
    bound = 1 / math.sqrt(fan_in)
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.5 * bound
    if m.bias is not None:
        assert np.abs(m.bias.detach().numpy()).max() <= bound


def test_lazy_norm_layers_start_at_one_zero_and_the_unit_running_stats():
    m = nn.LazyBatchNorm1d()
    m.eval()
    m(mininn.zeros(2, 3))
    for name, value in [("weight", 1.0), ("bias", 0.0), ("running_mean", 0.0), ("running_var", 1.0)]:
        np.testing.assert_array_equal(getattr(m, name).detach().numpy(), np.full(3, value, np.float32))
    assert m.num_batches_tracked.item() == 0


def test_dtype_conversion_before_the_first_call_is_kept():
    m = nn.LazyLinear(3).double()
    assert m.weight.dtype == mininn.float64 and is_lazy(m.weight)
    m(mininn.zeros(2, 4, dtype=mininn.float64))
    assert m.weight.dtype == mininn.float64 and tuple(m.weight.shape) == (3, 4)


def test_uninitialized_parameter_and_buffer_match_torch():
    t, m = torch.nn.UninitializedParameter(), nn.UninitializedParameter()
    assert (repr(m), m.requires_grad, m.dtype.name) == (repr(t), t.requires_grad, "float32")
    same_error(lambda: t.shape, lambda: m.shape)
    tb, mb = torch.nn.UninitializedBuffer(), nn.UninitializedBuffer()
    assert (repr(mb), mb.requires_grad) == (repr(tb), tb.requires_grad)
    m.materialize((2, 3))
    assert type(m) is nn.Parameter and tuple(m.shape) == (2, 3) and m.requires_grad


@pytest.mark.parametrize("name, args, x_shape", [("LazyConv2d", (4, 3), (3, 5)),
                                                 ("LazyConv1d", (4, 2), (1, 2, 3, 4)),
                                                 ("LazyConv2d", (4, 3, 1, 0, 1, 2), (1, 3, 5, 5))])
def test_lazy_conv_rejects_bad_inputs_like_torch(name, args, x_shape):
    t, m = _pair(name, args, {})
    x = np.ones(x_shape, np.float32)
    same_error(lambda: t(torch.tensor(x)), lambda: m(mininn.tensor(x)))
    assert type(m).__name__ == name and m.has_uninitialized_params()


def test_lazy_linear_loaded_from_a_checkpoint_checks_the_first_input_like_torch():
    state = torch.nn.Linear(4, 3).state_dict()
    t, m = _pair("LazyLinear", (3,), {})
    t.load_state_dict(state)
    m.load_state_dict({k: mininn.tensor(to_numpy(v)) for k, v in state.items()})
    same_error(lambda: t(torch.ones(1, 5)), lambda: m(mininn.ones(1, 5)))
    m(mininn.ones(1, 4))
    assert m.in_features == 4 and type(m) is nn.Linear


def test_a_partial_checkpoint_reports_missing_keys_like_torch():
    t, m = _pair("LazyLinear", (3,), {})
    weight = torch.ones(3, 4)
    same_error(lambda: t.load_state_dict({"weight": weight}),
               lambda: m.load_state_dict({"weight": mininn.ones(3, 4)}))


def test_an_optimizer_built_before_the_first_call_trains_the_materialized_parameters():
    mininn.manual_seed(0)
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(1))
    opt = mininn.optim.Adam(model.parameters(), lr=0.1)
    model(mininn.ones(4, 5)).sum().backward()
    before = model[0].weight.detach().numpy().copy()
    opt.step()
    assert [type(layer).__name__ for layer in model] == ["Linear", "ReLU", "Linear"]
    assert tuple(model[0].weight.shape) == (3, 5)
    assert not np.array_equal(model[0].weight.detach().numpy(), before)
