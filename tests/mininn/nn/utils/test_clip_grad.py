"""clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_ and the
parameter-vector helpers against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, to_numpy

torch = pytest.importorskip("torch")


def _twin_params(grads, dtype=np.float32):
    """Parameters (torch and mininn) whose ``.grad`` are the given arrays."""
    t_params, m_params = [], []
    for g in grads:
        g = np.asarray(g, dtype=dtype)
        tp = torch.nn.Parameter(torch.zeros(g.shape, dtype=getattr(torch, np.dtype(dtype).name)))
        mp = nn.Parameter(mininn.zeros(*g.shape, dtype=getattr(mininn, np.dtype(dtype).name)))
        tp.grad = torch.tensor(g)
        mp.grad = mininn.tensor(g.copy())
        t_params.append(tp)
        m_params.append(mp)
    return t_params, m_params


GRADS = [[[3.0, -4.0], [0.5, 1.0]], [12.0, -0.25, 0.0]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, float("inf"), "inf", 0.0, -float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_scales_grads_in_place_and_returns_the_total_norm_like_torch(dtype, norm_type,
                                                                                    max_norm):
    t_params, m_params = _twin_params(GRADS, dtype)
    m_grads = [p.grad for p in m_params]
    t_total = torch.nn.utils.clip_grad_norm_(t_params, max_norm, norm_type)
    m_total = nn.utils.clip_grad_norm_(m_params, max_norm, norm_type)
    assert m_total.dtype.name == str(t_total.dtype).removeprefix("torch.") and m_total.shape == ()
    np.testing.assert_allclose(to_numpy(m_total), to_numpy(t_total), rtol=1e-6)
    for tp, mp, g in zip(t_params, m_params, m_grads):
        assert mp.grad is g
        np.testing.assert_allclose(to_numpy(mp.grad), to_numpy(tp.grad), rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_clips_the_parameters_of_a_generator():
    m = nn.Linear(3, 2)
    m(mininn.ones(4, 3)).sum().backward()
    total = nn.utils.clip_grad_norm_(m.parameters(), 0.1)
    assert total.item() > 0.1
    assert nn.utils.get_total_norm([p.grad for p in m.parameters()]).item() == pytest.approx(0.1, rel=1e-4)


def test_clip_grad_norm_accepts_a_single_tensor_skips_missing_grads_and_mixed_dtypes():
    t_params, m_params = _twin_params([[3.0, 4.0]])
    t_params.append(torch.nn.Parameter(torch.ones(2)))
    m_params.append(nn.Parameter(mininn.ones(2)))
    t64, m64 = _twin_params([[1.0, 1.0]], np.float64)
    for ts, ms in [(t_params[0], m_params[0]), (t_params + t64, m_params + m64)]:
        t_total = torch.nn.utils.clip_grad_norm_(ts, 1.0)
        m_total = nn.utils.clip_grad_norm_(ms, 1.0)
        assert m_total.dtype.name == str(t_total.dtype).removeprefix("torch.")
        np.testing.assert_allclose(to_numpy(m_total), to_numpy(t_total), rtol=1e-6)
    assert m_params[1].grad is None
    assert nn.utils.clip_grad_norm_([], 1.0).item() == torch.nn.utils.clip_grad_norm_([], 1.0).item() == 0.0


@pytest.mark.parametrize("foreach", [None, False, True])
def test_clip_grad_norm_accepts_foreach(foreach):
    t_params, m_params = _twin_params(GRADS)
    torch.nn.utils.clip_grad_norm_(t_params, 1.0, foreach=foreach)
    nn.utils.clip_grad_norm_(m_params, 1.0, foreach=foreach)
    np.testing.assert_allclose(to_numpy(m_params[1].grad), to_numpy(t_params[1].grad), rtol=1e-6)


def test_clip_grad_norm_raises_on_a_non_finite_norm_only_when_asked():
    t_params, m_params = _twin_params([[np.inf, 1.0]])
    same_error(lambda: torch.nn.utils.clip_grad_norm_(t_params, 1.0, error_if_nonfinite=True),
               lambda: nn.utils.clip_grad_norm_(m_params, 1.0, error_if_nonfinite=True))
    assert np.isinf(nn.utils.clip_grad_norm_(m_params, 1.0).item())


def test_get_total_norm_and_clip_grads_with_norm_are_the_two_halves():
    t_params, m_params = _twin_params(GRADS)
    t_total = torch.nn.utils.get_total_norm([p.grad for p in t_params], 3.0)
    m_total = nn.utils.get_total_norm([p.grad for p in m_params], 3.0)
    np.testing.assert_allclose(to_numpy(m_total), to_numpy(t_total), rtol=1e-6)
    torch.nn.utils.clip_grads_with_norm_(t_params, 2.0, t_total)
    nn.utils.clip_grads_with_norm_(m_params, 2.0, m_total)
    for tp, mp in zip(t_params, m_params):
        np.testing.assert_allclose(to_numpy(mp.grad), to_numpy(tp.grad), rtol=1e-6)


def test_deprecated_clip_grad_norm_warns_like_torch():
    t_params, m_params = _twin_params(GRADS)
    with pytest.warns(FutureWarning) as t_rec:
        torch.nn.utils.clip_grad_norm(t_params, 1.0)
    with pytest.warns(FutureWarning) as m_rec:
        nn.utils.clip_grad_norm(m_params, 1.0)
    assert str(m_rec[0].message) == str(t_rec[0].message)


@pytest.mark.parametrize("clip_value", [0.5, 3])
def test_clip_grad_value_clamps_in_place_like_torch(clip_value):
    t_params, m_params = _twin_params(GRADS)
    assert torch.nn.utils.clip_grad_value_(t_params, clip_value) is None
    assert nn.utils.clip_grad_value_(m_params, clip_value) is None
    for tp, mp in zip(t_params, m_params):
        np.testing.assert_array_equal(to_numpy(mp.grad), to_numpy(tp.grad))


def test_parameters_to_vector_and_back_match_torch():
    torch.manual_seed(0)
    t = torch.nn.Conv1d(2, 3, 2)
    m = nn.Conv1d(2, 3, 2)
    m.load_state_dict({k: mininn.tensor(to_numpy(v)) for k, v in t.state_dict().items()})
    t_vec = torch.nn.utils.parameters_to_vector(t.parameters())
    m_vec = nn.utils.parameters_to_vector(m.parameters())
    np.testing.assert_array_equal(to_numpy(m_vec), to_numpy(t_vec))
    (m_vec * mininn.arange(m_vec.shape[0], dtype=mininn.float32)).sum().backward()
    np.testing.assert_array_equal(to_numpy(m.bias.grad), np.arange(12, 15, dtype=np.float32))
    new = np.arange(15, dtype=np.float32)
    weight = m.weight
    torch.nn.utils.vector_to_parameters(torch.tensor(new), t.parameters())
    nn.utils.vector_to_parameters(mininn.tensor(new), m.parameters())
    assert m.weight is weight and m.weight.requires_grad
    for name, tp in t.named_parameters():
        np.testing.assert_array_equal(to_numpy(getattr(m, name)), to_numpy(tp))


def test_vector_to_parameters_rejects_what_torch_rejects():
    t, m = torch.nn.Linear(3, 2), nn.Linear(3, 2)
    same_error(lambda: torch.nn.utils.vector_to_parameters([1.0], t.parameters()),
               lambda: nn.utils.vector_to_parameters([1.0], m.parameters()))
    same_error(lambda: torch.nn.utils.vector_to_parameters(torch.ones(3), t.parameters()),
               lambda: nn.utils.vector_to_parameters(mininn.ones(3), m.parameters()))
