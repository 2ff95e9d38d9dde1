"""Optimizer state dicts: torch's structure, round trips, resuming, and torch interop."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _optim_twins import make_twin, run_both  # noqa: E402

import mininn  # noqa: E402
import mininn.optim as optim  # noqa: E402
from mininn import nn  # noqa: E402

CASES = [
    (torch.optim.SGD, optim.SGD, {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    (torch.optim.Adam, optim.Adam, {"lr": 0.01, "amsgrad": True}),
    (torch.optim.AdamW, optim.AdamW, {"lr": 0.01, "weight_decay": 0.1}),
]
IDS = ["SGD", "Adam", "AdamW"]


def _groups(twin, which):
    params = twin.torch_params if which == "torch" else twin.mininn_params
    return [{"params": params[:2]}, {"params": params[2:], "lr": 0.003}]


def _train(twin, t_opt, m_opt, steps):
    run_both(twin, t_opt, m_opt, steps=steps, tol=1e-12)


def _to_mininn(value):
    """A torch state dict with every tensor turned into a mininn tensor (as a checkpoint load)."""
    if isinstance(value, torch.Tensor):
        return mininn.tensor(value.numpy().copy())
    if isinstance(value, dict):
        return {k: _to_mininn(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_mininn(v) for v in value]
    return value


@pytest.mark.parametrize("t_cls, m_cls, options", CASES, ids=IDS)
def test_state_dict_has_torchs_structure_keys_and_values(t_cls, m_cls, options):
    twin = make_twin(np.float64)
    t_opt = t_cls(_groups(twin, "torch"), **options)
    m_opt = m_cls(_groups(twin, "mininn"), **options)
    _train(twin, t_opt, m_opt, 3)
    t_sd, m_sd = t_opt.state_dict(), m_opt.state_dict()
    assert list(m_sd) == ["state", "param_groups"]
    assert m_sd["param_groups"] == t_sd["param_groups"]
    assert [list(g) for g in m_sd["param_groups"]] == [list(g) for g in t_sd["param_groups"]]
    assert list(m_sd["state"]) == list(t_sd["state"]) == [0, 1, 2]
    for index, t_state in t_sd["state"].items():
        m_state = m_sd["state"][index]
        assert list(m_state) == list(t_state)
        for key, t_value in t_state.items():
            assert isinstance(m_state[key], mininn.Tensor)
            assert m_state[key].dtype.name == str(t_value.dtype).removeprefix("torch.")
            np.testing.assert_allclose(m_state[key].numpy(), t_value.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("t_cls, m_cls, options", CASES, ids=IDS)
def test_resuming_from_a_saved_state_dict_continues_the_same_trajectory(t_cls, m_cls, options):
    twin = make_twin(np.float64, seed=4)
    t_opt = t_cls(_groups(twin, "torch"), **options)
    m_opt = m_cls(_groups(twin, "mininn"), **options)
    _train(twin, t_opt, m_opt, 10)
    saved = copy.deepcopy(m_opt.state_dict())
    resumed = m_cls(_groups(twin, "mininn"), lr=123.0)
    resumed.load_state_dict(saved)
    assert resumed.param_groups[1]["lr"] == 0.003
    _train(twin, t_opt, resumed, 10)


@pytest.mark.parametrize("t_cls, m_cls, options", CASES, ids=IDS)
def test_a_torch_optimizer_state_dict_loads_and_continues_like_torch(t_cls, m_cls, options):
    twin = make_twin(np.float64, seed=5)
    t_opt = t_cls(_groups(twin, "torch"), **options)
    for _ in range(4):
        t_opt.zero_grad()
        twin.torch_loss().backward()
        t_opt.step()
    for t, m in zip(twin.torch_params, twin.mininn_params):
        m.data = mininn.tensor(t.detach().numpy().copy())
    m_opt = m_cls(_groups(twin, "mininn"), **options)
    m_opt.load_state_dict(_to_mininn(t_opt.state_dict()))
    _train(twin, t_opt, m_opt, 6)
    # and back: mininn's state dict loads into torch after conversion
    back = t_cls(_groups(twin, "torch"), **options)
    sd = m_opt.state_dict()
    back.load_state_dict({
        "state": {i: {k: torch.tensor(v.numpy()) for k, v in s.items()} for i, s in sd["state"].items()},
        "param_groups": copy.deepcopy(sd["param_groups"]),
    })
    assert back.state_dict()["param_groups"] == t_opt.state_dict()["param_groups"]


def test_state_dict_tensors_are_live_references_as_in_torch():
    p = nn.Parameter(mininn.ones(2))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = mininn.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert sd["state"][0]["momentum_buffer"] is opt.state[p]["momentum_buffer"]


def test_loading_casts_floating_state_to_the_parameter_dtype_but_keeps_step():
    p = nn.Parameter(mininn.ones(2, dtype=mininn.float64))
    opt = optim.Adam([p])
    state = {0: {"step": mininn.tensor(2.0), "exp_avg": mininn.ones(2),
                 "exp_avg_sq": mininn.ones(2)}}
    groups = copy.deepcopy(opt.state_dict()["param_groups"])
    opt.load_state_dict({"state": state, "param_groups": groups})
    assert opt.state[p]["exp_avg"].dtype == mininn.float64
    assert opt.state[p]["step"].dtype == mininn.float32


def test_loading_numpy_arrays_and_old_float_steps():
    p = nn.Parameter(mininn.ones(2))
    opt = optim.Adam([p])
    groups = copy.deepcopy(opt.state_dict()["param_groups"])
    del groups[0]["decoupled_weight_decay"]  # state dicts of older torch releases lack it
    state = {0: {"step": 3, "exp_avg": np.zeros(2, np.float32), "exp_avg_sq": np.ones(2, np.float32)}}
    opt.load_state_dict({"state": state, "param_groups": groups})
    assert opt.param_groups[0]["decoupled_weight_decay"] is False
    assert isinstance(opt.state[p]["exp_avg"], mininn.Tensor)
    assert opt.state[p]["step"].dtype == mininn.float32 and opt.state[p]["step"].item() == 3.0
    p.grad = mininn.ones(2)
    opt.step()
    assert opt.state[p]["step"].item() == 4.0


def _error(fn, *args):
    with pytest.raises(Exception) as err:
        fn(*args)
    return type(err.value), str(err.value)


def test_mismatched_state_dicts_raise_torchs_errors():
    def build(lib_param, cls, n_groups, sizes):
        params = [lib_param() for _ in range(sum(sizes))]
        groups, start = [], 0
        for size in sizes[:n_groups]:
            groups.append({"params": params[start:start + size]})
            start += size
        return cls(groups, lr=0.1)

    for saved_sizes, target_sizes in [((1, 1), (2,)), ((2,), (1,))]:
        t_src = build(lambda: torch.nn.Parameter(torch.ones(1)), torch.optim.SGD,
                      len(saved_sizes), saved_sizes)
        t_dst = build(lambda: torch.nn.Parameter(torch.ones(1)), torch.optim.SGD,
                      len(target_sizes), target_sizes)
        m_src = build(lambda: nn.Parameter(mininn.ones(1)), optim.SGD, len(saved_sizes), saved_sizes)
        m_dst = build(lambda: nn.Parameter(mininn.ones(1)), optim.SGD, len(target_sizes),
                      target_sizes)
        expected = _error(t_dst.load_state_dict, t_src.state_dict())
        assert _error(m_dst.load_state_dict, m_src.state_dict()) == expected
