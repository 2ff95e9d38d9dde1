"""The hook-based nn.utils.weight_norm against torch 2.13: keys weight_g/weight_v, outputs,
gradients, removal, errors and torch checkpoints."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, state_layout, to_numpy
from tests.mininn.nn.utils._norm_twins import LAYERS, assert_steps_match, build, load_from

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated:FutureWarning")


DIM_CASES = [(LAYERS[0], 0), (LAYERS[0], None), (LAYERS[1], 1), (LAYERS[1], -1), (LAYERS[2], 0),
             (LAYERS[3], 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layer, dim", DIM_CASES, ids=[f"{layer[0]}-dim{dim}" for layer, dim in DIM_CASES])
def test_weight_norm_keys_outputs_and_grads_match_torch(layer, dim, dtype):
    name, args, x_shape = layer
    t, m = build(name, args, dtype)
    torch.nn.utils.weight_norm(t, dim=dim)
    nn.utils.weight_norm(m, dim=dim)
    assert state_layout(m) == state_layout(t)
    load_from(t, m)
    x = np.random.default_rng(1).standard_normal(x_shape).astype(dtype)
    assert_steps_match(t, m, x, steps=(True, False), tol=1e-5 if dtype == np.float32 else 1e-10)


def test_weight_norm_starts_from_the_weight_and_warns_like_torch():
    m = nn.Linear(3, 4)
    weight = m.weight.detach().numpy().copy()
    with pytest.warns(FutureWarning) as m_rec:
        nn.utils.weight_norm(m)
    with pytest.warns(FutureWarning) as t_rec:
        torch.nn.utils.weight_norm(torch.nn.Linear(3, 4))
    assert str(m_rec[0].message) == str(t_rec[0].message)
    np.testing.assert_allclose(m.weight.detach().numpy(), weight, rtol=1e-6)
    np.testing.assert_allclose(m.weight_g.detach().numpy()[:, 0], np.linalg.norm(weight, axis=1), rtol=1e-6)
    assert "weight" not in m._parameters and not isinstance(m.weight, nn.Parameter)


def test_remove_weight_norm_restores_a_plain_parameter_with_the_current_weight():
    t, m = build("Linear", (3, 4))
    torch.nn.utils.weight_norm(t)
    nn.utils.weight_norm(m)
    load_from(t, m)
    with torch.no_grad():
        t.weight_g.mul_(2)
    m.weight_g.data = m.weight_g.data * 2
    torch.nn.utils.remove_weight_norm(t)
    nn.utils.remove_weight_norm(m)
    assert state_layout(m) == state_layout(t)
    assert isinstance(m.weight, nn.Parameter) and not m._forward_pre_hooks
    np.testing.assert_allclose(to_numpy(m.weight), to_numpy(t.weight), rtol=1e-6)


def test_weight_norm_errors_match_torch():
    t, m = torch.nn.Linear(3, 4), nn.Linear(3, 4)
    same_error(lambda: torch.nn.utils.remove_weight_norm(t), lambda: nn.utils.remove_weight_norm(m))
    torch.nn.utils.weight_norm(t)
    nn.utils.weight_norm(m)
    same_error(lambda: torch.nn.utils.weight_norm(t), lambda: nn.utils.weight_norm(m))


def test_a_weight_normed_torch_checkpoint_loads_into_a_fresh_module():
    t, _ = build("Conv1d", (3, 4, 2))
    torch.nn.utils.weight_norm(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = nn.utils.weight_norm(nn.Conv1d(3, 4, 2))
    sd = {k: mininn.tensor(to_numpy(v)) for k, v in t.state_dict().items()}
    m.load_state_dict(sd)
    x = np.ones((1, 3, 4), np.float32)
    np.testing.assert_allclose(to_numpy(m(mininn.tensor(x))), to_numpy(t(torch.tensor(x))), rtol=1e-5)
