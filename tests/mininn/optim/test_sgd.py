"""SGD against torch 2.13: 20-step trajectories for every option, groups, errors, repr."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _optim_twins import TOL, make_twin, run_both  # noqa: E402

import mininn  # noqa: E402
import mininn.optim as optim  # noqa: E402
from mininn import nn  # noqa: E402

SGD_OPTIONS = [
    {"lr": 0.1},
    {"lr": 0.05, "momentum": 0.9},
    {"lr": 0.05, "momentum": 0.9, "dampening": 0.5},
    {"lr": 0.05, "momentum": 0.9, "nesterov": True},
    {"lr": 0.1, "weight_decay": 0.05},
    {"lr": 0.05, "momentum": 0.8, "weight_decay": 0.1, "nesterov": True},
    {"lr": 0.01, "momentum": 0.7, "dampening": 0.2, "weight_decay": 0.01, "maximize": True},
    {"lr": 0.02, "maximize": True},
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("options", SGD_OPTIONS, ids=str)
def test_sgd_trajectory_matches_torch_for_20_steps(options, dtype):
    twin = make_twin(dtype)
    t_opt = torch.optim.SGD(twin.torch_params, **options)
    m_opt = optim.SGD(twin.mininn_params, **options)
    run_both(twin, t_opt, m_opt, steps=20, tol=TOL[dtype])


def test_param_groups_use_their_own_hyper_parameters():
    twin = make_twin(np.float64, seed=3)
    tw, tb, tw2 = twin.torch_params
    mw, mb, mw2 = twin.mininn_params
    t_opt = torch.optim.SGD([{"params": [tw, tb]}, {"params": [tw2], "lr": 0.01, "momentum": 0.5}],
                            lr=0.1, momentum=0.9)
    m_opt = optim.SGD([{"params": [mw, mb]}, {"params": [mw2], "lr": 0.01, "momentum": 0.5}],
                      lr=0.1, momentum=0.9)
    run_both(twin, t_opt, m_opt, steps=10, tol=1e-12)
    assert m_opt.param_groups[1]["lr"] == 0.01
    assert m_opt.param_groups[0]["momentum"] == 0.9


def test_parameters_are_updated_in_place_and_keep_their_identity():
    twin = make_twin()
    before = [(id(p), p.data_ptr()) for p in twin.mininn_params]
    aliases = [p.detach() for p in twin.mininn_params]  # share the storage: they see in-place updates
    opt = optim.SGD(twin.mininn_params, lr=0.1, momentum=0.9)
    twin.mininn_loss().backward()
    opt.step()
    after = [(id(p), p.data_ptr()) for p in twin.mininn_params]
    assert after == before
    assert all(mininn.equal(a, p) for a, p in zip(aliases, twin.mininn_params))
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in twin.mininn_params)
    assert all(p.grad_fn is None for p in twin.mininn_params)


def test_parameters_without_grad_are_skipped_and_get_no_state():
    a = nn.Parameter(mininn.ones(3))
    b = nn.Parameter(mininn.ones(3))
    opt = optim.SGD([a, b], lr=0.5, momentum=0.9)
    a.grad = mininn.ones(3)
    opt.step()
    np.testing.assert_array_equal(a.detach().numpy(), [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0, 1.0])
    assert b not in opt.state
    assert list(opt.state[a]) == ["momentum_buffer"]


def test_plain_sgd_keeps_no_momentum_state():
    twin = make_twin()
    opt = optim.SGD(twin.mininn_params, lr=0.1)
    twin.mininn_loss().backward()
    opt.step()
    assert len(opt.state) == 0


def test_zero_grad_sets_none_by_default_or_fills_zeros():
    p = nn.Parameter(mininn.ones(2))
    opt = optim.SGD([p], lr=0.1)
    p.grad = mininn.ones(2)
    opt.zero_grad()
    assert p.grad is None
    p.grad = mininn.ones(2)
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad
    np.testing.assert_array_equal(p.grad.numpy(), [0.0, 0.0])


def test_step_evaluates_the_closure_with_grad_enabled_and_returns_its_loss():
    twin = make_twin()
    opt = optim.SGD(twin.mininn_params, lr=0.1)
    seen = []

    def closure():
        opt.zero_grad()
        loss = twin.mininn_loss()
        seen.append(mininn.is_grad_enabled())
        loss.backward()
        return loss

    with mininn.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert loss.item() == pytest.approx(twin.torch_loss().item(), rel=1e-5)


def test_step_hooks_run_around_the_update_in_registration_order():
    p = nn.Parameter(mininn.ones(1))
    opt = optim.SGD([p], lr=1.0)
    calls = []
    opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", p.item())))
    handle = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", p.item())))
    p.grad = mininn.ones(1)
    opt.step()
    handle.remove()
    opt.step()
    assert calls == [("pre", 1.0), ("post", 0.0), ("pre", 0.0)]


def test_repr_matches_torch():
    t = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1, momentum=0.9)
    m = optim.SGD([nn.Parameter(mininn.ones(1))], lr=0.1, momentum=0.9)
    assert repr(m) == repr(t)


def _error(fn, *args, **kwargs):
    with pytest.raises(Exception) as err:
        fn(*args, **kwargs)
    return type(err.value), str(err.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"lr": -0.1},
        {"lr": 0.1, "momentum": -0.5},
        {"lr": 0.1, "weight_decay": -1.0},
        {"lr": 0.1, "nesterov": True},
        {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True},
    ],
    ids=str,
)
def test_invalid_hyper_parameters_raise_torchs_errors(kwargs):
    expected = _error(torch.optim.SGD, [torch.nn.Parameter(torch.ones(1))], **kwargs)
    assert _error(optim.SGD, [nn.Parameter(mininn.ones(1))], **kwargs) == expected


def test_invalid_params_raise_torchs_errors():
    tp, mp = torch.nn.Parameter(torch.ones(1)), nn.Parameter(mininn.ones(1))
    assert _error(optim.SGD, [], lr=0.1) == _error(torch.optim.SGD, [], lr=0.1)
    assert _error(optim.SGD, [1], lr=0.1) == _error(torch.optim.SGD, [1], lr=0.1)
    assert _error(optim.SGD, [{"params": {mp}}], lr=0.1) == _error(
        torch.optim.SGD, [{"params": {tp}}], lr=0.1)
    assert _error(optim.SGD, [mp * 2], lr=0.1) == _error(torch.optim.SGD, [tp * 2], lr=0.1)
    assert _error(optim.SGD, [{"params": [mp]}, {"params": [mp]}], lr=0.1) == _error(
        torch.optim.SGD, [{"params": [tp]}, {"params": [tp]}], lr=0.1)
    kind, message = _error(torch.optim.SGD, tp, lr=0.1)
    assert _error(optim.SGD, mp, lr=0.1) == (
        kind, message.replace("torch.FloatTensor", "mininn.FloatTensor"))


def test_add_param_group_fills_defaults_and_accepts_named_params():
    a, b = nn.Parameter(mininn.ones(1)), nn.Parameter(mininn.ones(1))
    opt = optim.SGD([("a", a)], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": [("b", b)], "lr": 0.5})
    group = opt.param_groups[1]
    assert group["lr"] == 0.5 and group["momentum"] == 0.9
    assert group["param_names"] == ["b"]
    with pytest.raises(ValueError, match="cannot add param group without names to the optimizer"):
        opt.add_param_group({"params": [nn.Parameter(mininn.ones(1))]})
