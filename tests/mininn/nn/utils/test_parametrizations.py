"""nn.utils.parametrizations.weight_norm and spectral_norm against torch 2.13: keys
(original0/original1, original with 0._u/0._v), outputs, gradients, power iteration,
old weight_norm checkpoints and errors."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn.utils import parametrizations
from tests.mininn.nn._layer_parity import same_error, state_layout, to_numpy
from tests.mininn.nn.utils._norm_twins import LAYERS, assert_steps_match, build, load_from

torch = pytest.importorskip("torch")
TP = torch.nn.utils.parametrizations


DIM_CASES = [(LAYERS[0], 0), (LAYERS[0], None), (LAYERS[1], 1), (LAYERS[2], 0), (LAYERS[3], 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layer, dim", DIM_CASES, ids=[f"{layer[0]}-dim{dim}" for layer, dim in DIM_CASES])
def test_weight_norm_keys_outputs_and_grads_match_torch(layer, dim, dtype):
    name, args, x_shape = layer
    t, m = build(name, args, dtype)
    TP.weight_norm(t, dim=dim)
    parametrizations.weight_norm(m, dim=dim)
    assert state_layout(m) == state_layout(t)
    assert repr(m) == repr(t)
    load_from(t, m)
    x = np.random.default_rng(1).standard_normal(x_shape).astype(dtype)
    assert_steps_match(t, m, x, steps=(True,), tol=1e-5 if dtype == np.float32 else 1e-10)


@pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated:FutureWarning")
def test_weight_norm_loads_a_checkpoint_of_the_old_hook_based_weight_norm():
    t, _ = build("Conv1d", (3, 4, 2))
    torch.nn.utils.weight_norm(t)
    m = parametrizations.weight_norm(nn.Conv1d(3, 4, 2))
    result = m.load_state_dict({k: mininn.tensor(to_numpy(v)) for k, v in t.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = np.ones((1, 3, 4), np.float32)
    np.testing.assert_allclose(to_numpy(m(mininn.tensor(x))), to_numpy(t(torch.tensor(x))), rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_power_iterations", [1, 2])
@pytest.mark.parametrize("name, args, x_shape", LAYERS, ids=[layer[0] for layer in LAYERS])
def test_spectral_norm_keys_outputs_grads_and_buffers_match_torch(name, args, x_shape, n_power_iterations,
                                                                  dtype):
    t, m = build(name, args, dtype)
    TP.spectral_norm(t, n_power_iterations=n_power_iterations)
    parametrizations.spectral_norm(m, n_power_iterations=n_power_iterations)
    assert state_layout(m) == state_layout(t)
    assert repr(m) == repr(t)
    load_from(t, m)
    x = np.random.default_rng(1).standard_normal(x_shape).astype(dtype)
    assert_steps_match(t, m, x, tol=1e-5 if dtype == np.float32 else 1e-10)


def test_spectral_norm_of_a_vector_normalizes_it_and_init_runs_15_power_steps():
    t, m = build("BatchNorm1d", (3,))
    TP.spectral_norm(t)
    parametrizations.spectral_norm(m)
    load_from(t, m)
    np.testing.assert_allclose(to_numpy(m.weight), to_numpy(t.weight), rtol=1e-6)
    mininn.manual_seed(0)
    m = nn.Linear(6, 5)
    gapped = np.diag([3.0, 1.0, 0.5, 0.2, 0.1]) @ np.eye(5, 6) + 0.01
    m.weight.data = mininn.tensor(gapped.astype(np.float32))
    parametrizations.spectral_norm(m)  # 15 power steps at registration: a clear gap converges
    sigma = np.linalg.svd(m.parametrizations.weight.original.detach().numpy(), compute_uv=False)[0]
    u = m.parametrizations.weight[0]._u.numpy()
    w = m.parametrizations.weight.original.detach().numpy()
    v = m.parametrizations.weight[0]._v.numpy()
    assert u @ w @ v == pytest.approx(sigma, rel=1e-2)


def test_spectral_norm_errors_match_torch():
    same_error(lambda: TP.spectral_norm(torch.nn.Linear(3, 3), dim=3),
               lambda: parametrizations.spectral_norm(nn.Linear(3, 3), dim=3))
    same_error(lambda: TP.spectral_norm(torch.nn.Linear(3, 3), name="x"),
               lambda: parametrizations.spectral_norm(nn.Linear(3, 3), name="x"))
    same_error(lambda: TP.spectral_norm(torch.nn.Linear(3, 3), n_power_iterations=0),
               lambda: parametrizations.spectral_norm(nn.Linear(3, 3), n_power_iterations=0))


ORTHOGONAL_CASES = [((4, 4), None, True), ((4, 4), "cayley", True), ((5, 3), None, True),
                    ((3, 5), "matrix_exp", True), ((5, 3), "cayley", True), ((5, 3), "householder", False),
                    ((3, 5), "householder", False), ((4, 4), None, False)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, orthogonal_map, use_trivialization", ORTHOGONAL_CASES, ids=str)
def test_orthogonal_keys_outputs_and_grads_match_torch(shape, orthogonal_map, use_trivialization, dtype):
    t, m = build("Linear", (shape[1], shape[0]), dtype)
    TP.orthogonal(t, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    parametrizations.orthogonal(m, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    assert state_layout(m) == state_layout(t) and repr(m) == repr(t)
    with torch.no_grad():
        original = t.parametrizations.weight.original
        original.add_(0.1 * torch.randn_like(original))
    load_from(t, m)
    x = np.random.default_rng(1).standard_normal((2, shape[1])).astype(dtype)
    assert_steps_match(t, m, x, steps=(True,), tol=1e-5 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("shape, orthogonal_map",
                         [((4, 4), None), ((5, 3), "cayley"), ((3, 5), "householder")], ids=str)
def test_orthogonal_weight_is_orthogonal_and_assignment_sets_the_base(shape, orthogonal_map):
    m = parametrizations.orthogonal(nn.Linear(shape[1], shape[0]).double(), orthogonal_map=orthogonal_map)
    small = min(shape)
    w = m.weight.detach().numpy()
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-12)
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((max(shape), small)))[0]
    q = q if shape[0] >= shape[1] else q.T
    m.weight = mininn.tensor(q)
    np.testing.assert_allclose(m.weight.detach().numpy(), q, atol=1e-12)


def test_orthogonal_errors_match_torch():
    same_error(lambda: TP.orthogonal(torch.nn.Linear(3, 3), name="x"),
               lambda: parametrizations.orthogonal(nn.Linear(3, 3), name="x"))
    same_error(lambda: TP.orthogonal(torch.nn.Linear(3, 3), name="bias"),
               lambda: parametrizations.orthogonal(nn.Linear(3, 3), name="bias"))
    same_error(lambda: TP.orthogonal(torch.nn.Linear(3, 3), orthogonal_map="qr"),
               lambda: parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="qr"))
    t = TP.orthogonal(torch.nn.Linear(3, 3), use_trivialization=False)
    m = parametrizations.orthogonal(nn.Linear(3, 3), use_trivialization=False)
    same_error(lambda: setattr(t, "weight", torch.eye(3)), lambda: setattr(m, "weight", mininn.eye(3)))
    t = TP.orthogonal(torch.nn.Linear(3, 3))
    m = parametrizations.orthogonal(nn.Linear(3, 3))
    same_error(lambda: setattr(t, "weight", torch.eye(2)), lambda: setattr(m, "weight", mininn.eye(2)))


@pytest.mark.parametrize("orthogonal_map", ["householder", "matrix_exp"])
def test_orthogonal_of_a_batch_of_matrices_matches_torch(orthogonal_map):
    t, m = build("Conv1d", (3, 4, 3), np.float64)
    TP.orthogonal(t, orthogonal_map=orthogonal_map)
    parametrizations.orthogonal(m, orthogonal_map=orthogonal_map)
    with torch.no_grad():
        original = t.parametrizations.weight.original
        original.add_(0.1 * torch.randn_like(original))
    load_from(t, m)
    x = np.random.default_rng(1).standard_normal((2, 3, 5))
    assert_steps_match(t, m, x, steps=(True,), tol=1e-10)
