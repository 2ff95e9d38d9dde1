"""Adam and AdamW against torch 2.13: 20-step trajectories, state, defaults and errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _optim_twins import TOL, make_twin, run_both  # noqa: E402

import mininn  # noqa: E402
import mininn.optim as optim  # noqa: E402
from mininn import nn  # noqa: E402

ADAM_OPTIONS = [
    {},
    {"lr": 0.01},
    {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6},
    {"lr": 0.01, "weight_decay": 0.1},
    {"lr": 0.01, "amsgrad": True},
    {"lr": 0.01, "amsgrad": True, "weight_decay": 0.05},
    {"lr": 0.005, "maximize": True},
    {"lr": 0.005, "maximize": True, "amsgrad": True, "weight_decay": 0.01, "betas": (0.5, 0.9)},
]

PAIRS = [(torch.optim.Adam, optim.Adam), (torch.optim.AdamW, optim.AdamW)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("options", ADAM_OPTIONS, ids=str)
@pytest.mark.parametrize("classes", PAIRS, ids=["Adam", "AdamW"])
def test_trajectory_matches_torch_for_20_steps(classes, options, dtype):
    t_cls, m_cls = classes
    twin = make_twin(dtype, seed=1)
    run_both(twin, t_cls(twin.torch_params, **options), m_cls(twin.mininn_params, **options),
             steps=20, tol=TOL[dtype])


def test_adam_with_decoupled_weight_decay_equals_adamw():
    twin = make_twin(np.float64, seed=2)
    t_opt = torch.optim.AdamW(twin.torch_params, lr=0.01, weight_decay=0.2)
    m_opt = optim.Adam(twin.mininn_params, lr=0.01, weight_decay=0.2, decoupled_weight_decay=True)
    run_both(twin, t_opt, m_opt, steps=5, tol=1e-12)


@pytest.mark.parametrize("classes", PAIRS, ids=["Adam", "AdamW"])
def test_param_group_defaults_match_torch(classes):
    t_cls, m_cls = classes
    t_opt = t_cls([torch.nn.Parameter(torch.ones(2))])
    m_opt = m_cls([nn.Parameter(mininn.ones(2))])
    t_group = {k: v for k, v in t_opt.param_groups[0].items() if k != "params"}
    m_group = {k: v for k, v in m_opt.param_groups[0].items() if k != "params"}
    assert m_group == t_group
    assert list(m_group) == list(t_group)
    assert repr(m_opt) == repr(t_opt)


def test_state_holds_a_float32_step_count_and_moments_like_the_parameter():
    twin = make_twin(np.float64)
    opt = optim.Adam(twin.mininn_params, lr=0.01, amsgrad=True)
    for _ in range(3):
        opt.zero_grad()
        twin.mininn_loss().backward()
        opt.step()
    state = opt.state[twin.mininn_params[0]]
    assert list(state) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    assert state["step"].dtype == mininn.float32 and state["step"].shape == ()
    assert state["step"].item() == 3.0
    assert state["exp_avg"].dtype == mininn.float64
    assert state["exp_avg"].shape == twin.mininn_params[0].shape


def test_parameters_stay_the_same_objects():
    twin = make_twin()
    ids = [(id(p), p.data_ptr()) for p in twin.mininn_params]
    aliases = [p.detach() for p in twin.mininn_params]  # share the storage: they see in-place updates
    opt = optim.AdamW(twin.mininn_params)
    twin.mininn_loss().backward()
    opt.step()
    assert [(id(p), p.data_ptr()) for p in twin.mininn_params] == ids
    assert all(mininn.equal(a, p) for a, p in zip(aliases, twin.mininn_params))


def _error(fn, *args, **kwargs):
    with pytest.raises(Exception) as err:
        fn(*args, **kwargs)
    return type(err.value), str(err.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": -1.0},
        {"eps": -1e-8},
        {"betas": (1.0, 0.999)},
        {"betas": (0.9, -0.1)},
        {"weight_decay": -0.1},
        {"betas": (0.9, 1)},
    ],
    ids=str,
)
@pytest.mark.parametrize("classes", PAIRS, ids=["Adam", "AdamW"])
def test_invalid_hyper_parameters_raise_torchs_errors(classes, kwargs):
    t_cls, m_cls = classes
    expected = _error(t_cls, [torch.nn.Parameter(torch.ones(1))], **kwargs)
    assert _error(m_cls, [nn.Parameter(mininn.ones(1))], **kwargs) == expected
