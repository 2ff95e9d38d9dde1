"""StepLR and CosineAnnealingLR against torch 2.13: schedules, state dicts, warnings."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

import mininn  # noqa: E402
import mininn.optim as optim  # noqa: E402
from mininn import nn  # noqa: E402
from mininn.optim import lr_scheduler  # noqa: E402

T_SCHED = torch.optim.lr_scheduler


def _optimizers(lrs=(0.1, 0.02)):
    t_groups = [{"params": [torch.nn.Parameter(torch.ones(1))], "lr": lr} for lr in lrs]
    m_groups = [{"params": [nn.Parameter(mininn.ones(1))], "lr": lr} for lr in lrs]
    return torch.optim.SGD(t_groups, lr=1.0), optim.SGD(m_groups, lr=1.0)


SCHEDULES = [
    ("StepLR", {"step_size": 3}),
    ("StepLR", {"step_size": 2, "gamma": 0.5}),
    ("CosineAnnealingLR", {"T_max": 5}),
    ("CosineAnnealingLR", {"T_max": 4, "eta_min": 0.005}),
]


@pytest.mark.parametrize("name, kwargs", SCHEDULES, ids=str)
def test_schedule_matches_torch_over_several_periods(name, kwargs):
    t_opt, m_opt = _optimizers()
    t_sched = getattr(T_SCHED, name)(t_opt, **kwargs)
    m_sched = getattr(lr_scheduler, name)(m_opt, **kwargs)
    assert m_sched.get_last_lr() == t_sched.get_last_lr()
    for _ in range(13):
        t_opt.step()
        m_opt.step()
        t_sched.step()
        m_sched.step()
        assert m_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12, abs=1e-15)
        assert [g["lr"] for g in m_opt.param_groups] == pytest.approx(
            [g["lr"] for g in t_opt.param_groups], rel=1e-12, abs=1e-15)
    m_state, t_state = m_sched.state_dict(), t_sched.state_dict()
    assert list(m_state) == list(t_state)
    assert m_state["_last_lr"] == pytest.approx(t_state.pop("_last_lr"), rel=1e-12)
    assert {k: v for k, v in m_state.items() if k != "_last_lr"} == t_state
    assert [g["initial_lr"] for g in m_opt.param_groups] == [0.1, 0.02]


@pytest.mark.parametrize("name, kwargs", SCHEDULES, ids=str)
def test_stepping_to_an_epoch_uses_the_closed_form_with_torchs_warning(name, kwargs):
    t_opt, m_opt = _optimizers()
    t_sched = getattr(T_SCHED, name)(t_opt, **kwargs)
    m_sched = getattr(lr_scheduler, name)(m_opt, **kwargs)
    t_opt.step()
    m_opt.step()
    with pytest.warns(UserWarning) as t_rec:
        t_sched.step(7)
    with pytest.warns(UserWarning) as m_rec:
        m_sched.step(7)
    assert [str(r.message) for r in m_rec] == [str(r.message) for r in t_rec]
    assert m_sched.get_last_lr() == pytest.approx(t_sched.get_last_lr(), rel=1e-12)


def test_scheduler_state_dict_resumes_the_schedule_like_torch():
    def run(sched_mod, opts):
        opt, fresh = opts
        sched = sched_mod.StepLR(opt, step_size=2, gamma=0.5)
        for _ in range(3):
            opt.step()
            sched.step()
        fresh.load_state_dict(opt.state_dict())
        resumed = sched_mod.StepLR(fresh, step_size=2, gamma=0.5)
        resumed.load_state_dict(sched.state_dict())
        lrs = []
        for _ in range(4):
            fresh.step()
            resumed.step()
            opt.step()
            sched.step()
            assert resumed.get_last_lr() == sched.get_last_lr()
            lrs.append(resumed.get_last_lr())
        return lrs

    t_opts, m_opts = zip(_optimizers(), _optimizers())
    assert run(lr_scheduler, m_opts) == run(T_SCHED, t_opts)


def test_stepping_the_scheduler_first_warns_like_torch():
    t_opt, m_opt = _optimizers()
    t_sched = T_SCHED.StepLR(t_opt, 2)
    m_sched = lr_scheduler.StepLR(m_opt, 2)
    with pytest.warns(UserWarning) as t_rec:
        t_sched.step()
    with pytest.warns(UserWarning) as m_rec:
        m_sched.step()
    assert [str(r.message) for r in m_rec] == [str(r.message) for r in t_rec]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, opt = _optimizers()
        sched = lr_scheduler.CosineAnnealingLR(opt, 3)
        opt.step()
        sched.step()


def test_get_lr_outside_step_warns_like_torch():
    t_opt, m_opt = _optimizers()
    with pytest.warns(UserWarning) as t_rec:
        T_SCHED.StepLR(t_opt, 2).get_lr()
    with pytest.warns(UserWarning) as m_rec:
        lr_scheduler.StepLR(m_opt, 2).get_lr()
    assert [str(r.message) for r in m_rec] == [str(r.message) for r in t_rec]


def test_scheduler_errors_match_torch():
    t_opt, m_opt = _optimizers()
    with pytest.raises(TypeError) as t_err:
        T_SCHED.StepLR(object(), 2)
    with pytest.raises(TypeError) as m_err:
        lr_scheduler.StepLR(object(), 2)
    assert str(m_err.value) == str(t_err.value)
    with pytest.raises(KeyError) as t_err:
        T_SCHED.StepLR(t_opt, 2, last_epoch=3)
    with pytest.raises(KeyError) as m_err:
        lr_scheduler.StepLR(m_opt, 2, last_epoch=3)
    assert str(m_err.value) == str(t_err.value)
