"""The hook-based nn.utils.spectral_norm against torch 2.13: keys weight_orig/weight_u/weight_v,
power iteration in training, outputs, gradients, metadata, removal and old checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, state_layout, to_numpy
from tests.mininn.nn.utils._norm_twins import LAYERS, assert_steps_match, build, load_from

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_power_iterations", [1, 3])
@pytest.mark.parametrize("name, args, x_shape", LAYERS, ids=[layer[0] for layer in LAYERS])
def test_spectral_norm_keys_outputs_grads_and_power_iteration_match_torch(name, args, x_shape,
                                                                          n_power_iterations, dtype):
    t, m = build(name, args, dtype)
    torch.nn.utils.spectral_norm(t, n_power_iterations=n_power_iterations)
    nn.utils.spectral_norm(m, n_power_iterations=n_power_iterations)
    assert state_layout(m) == state_layout(t)
    assert m.state_dict()._metadata == t.state_dict()._metadata
    load_from(t, m)
    x = np.random.default_rng(1).standard_normal(x_shape).astype(dtype)
    assert_steps_match(t, m, x, tol=1e-5 if dtype == np.float32 else 1e-10)


def test_spectral_norm_starts_unscaled_and_converges_to_unit_spectral_norm():
    mininn.manual_seed(0)
    m = nn.Linear(5, 4)
    m.weight.data = mininn.tensor((np.diag([2.0, 1.0, 0.5, 0.1]) @ np.eye(4, 5) + 0.01).astype(np.float32))
    nn.utils.spectral_norm(m)
    np.testing.assert_allclose(np.linalg.norm(m.weight_u.numpy()), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(m.weight_v.numpy()), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(m.weight.numpy(), m.weight_orig.detach().numpy())
    for _ in range(30):  # power iteration converges over training forwards
        m(mininn.ones(1, 5))
    assert np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)[0] == pytest.approx(1.0, rel=1e-3)


def test_remove_spectral_norm_keeps_the_normalized_weight_and_drops_the_hooks():
    t, m = build("Linear", (3, 4))
    torch.nn.utils.spectral_norm(t)
    nn.utils.spectral_norm(m)
    load_from(t, m)
    t(torch.ones(1, 3))
    m(mininn.ones(1, 3))
    torch.nn.utils.remove_spectral_norm(t)
    nn.utils.remove_spectral_norm(m)
    assert state_layout(m) == state_layout(t)
    assert not m._forward_pre_hooks and not m._state_dict_hooks and not m._load_state_dict_pre_hooks
    assert "spectral_norm" not in m.state_dict()._metadata[""]
    np.testing.assert_allclose(to_numpy(m.weight), to_numpy(t.weight), rtol=1e-5)


def test_spectral_norm_errors_match_torch():
    t, m = torch.nn.Linear(3, 4), nn.Linear(3, 4)
    same_error(lambda: torch.nn.utils.remove_spectral_norm(t), lambda: nn.utils.remove_spectral_norm(m))
    same_error(lambda: torch.nn.utils.spectral_norm(t, n_power_iterations=0),
               lambda: nn.utils.spectral_norm(m, n_power_iterations=0))
    torch.nn.utils.spectral_norm(t)
    nn.utils.spectral_norm(m)
    same_error(lambda: torch.nn.utils.spectral_norm(t), lambda: nn.utils.spectral_norm(m))


def test_a_version_less_checkpoint_with_weight_instead_of_weight_v_is_converted_like_torch():
    t, m = build("Linear", (3, 4))
    torch.nn.utils.spectral_norm(t)
    nn.utils.spectral_norm(m)
    t(torch.ones(1, 3))
    old = {k: v.clone() for k, v in t.state_dict().items() if k != "weight_v"}
    old["weight"] = t.weight.detach().clone()
    t_fresh, m_fresh = build("Linear", (3, 4))
    torch.nn.utils.spectral_norm(t_fresh)
    nn.utils.spectral_norm(m_fresh)
    t_fresh.load_state_dict(old)
    m_fresh.load_state_dict({k: mininn.tensor(to_numpy(v)) for k, v in old.items()})
    np.testing.assert_allclose(to_numpy(m_fresh.weight_v), to_numpy(t_fresh.weight_v), rtol=1e-4, atol=1e-5)
    t_fresh.eval()
    m_fresh.eval()
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(to_numpy(m_fresh(mininn.tensor(x))), to_numpy(t_fresh(torch.tensor(x))),
                               rtol=1e-4, atol=1e-5)
