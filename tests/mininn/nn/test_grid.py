"""F.grid_sample and F.affine_grid against torch 2.13: values, input/grid/theta gradients, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from tests.mininn.nn._layer_parity import same_error, to_numpy

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-11)}
SAMPLE_CASES = [
    (rank, mode, padding)
    for rank in (2, 3)
    for mode in ("bilinear", "nearest", "bicubic")
    for padding in ("zeros", "border", "reflection")
    if not (rank == 3 and mode == "bicubic")
]


def _rand(shape, dtype, low=None, high=None, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) if low is None else rng.uniform(low, high, shape)
    return values.astype(dtype)


def _run(fn, lib, *arrays):
    """``fn`` on fresh leaves of ``lib``, backward with a fixed cotangent: (output, grads...)."""
    leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    out.backward(lib.tensor(_rand(tuple(out.shape), arrays[0].dtype, seed=9)))
    return [to_numpy(out)] + [to_numpy(t.grad) for t in leaves]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("rank,mode,padding", SAMPLE_CASES, ids=str)
def test_grid_sample_matches_torch_values_and_input_and_grid_gradients(rank, mode, padding, align_corners,
                                                                       dtype):
    shape, grid_shape = ((2, 3, 5, 6), (2, 4, 3, 2)) if rank == 2 else ((2, 3, 4, 5, 3), (2, 3, 2, 4, 3))
    x, grid = _rand(shape, dtype), _rand(grid_shape, dtype, -1.6, 1.6, seed=1)  # some points lie outside

    def sample(f):
        return lambda a, g: f.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=align_corners)

    ours, theirs = _run(sample(F), mininn, x, grid), _run(sample(TF), torch, x, grid)
    for name, a, b in zip(("output", "input grad", "grid grad"), ours, theirs):
        np.testing.assert_allclose(a, b, **TOL[dtype], err_msg=name)
    assert ours[0].dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 4, 5, 3), (2, 1, 1, 5)], ids=str)
def test_affine_grid_matches_torch_values_and_theta_gradient(size, align_corners, dtype):
    rank = len(size) - 2
    theta = _rand((2, rank, rank + 1), dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit-size grids with align_corners warn in both
        ours = _run(lambda t: F.affine_grid(t, size, align_corners=align_corners), mininn, theta)
        theirs = _run(lambda t: TF.affine_grid(t, size, align_corners=align_corners), torch, theta)
    for name, a, b in zip(("grid", "theta grad"), ours, theirs):
        np.testing.assert_allclose(a, b, **TOL[dtype], err_msg=name)


def test_affine_identity_grid_samples_the_input_back_like_torch():
    x = _rand((1, 2, 4, 5), np.float64)
    theta = np.array([[[1.0, 0, 0], [0, 1.0, 0]]])
    grid = F.affine_grid(mininn.tensor(theta), [1, 2, 4, 5], align_corners=False)
    out = F.grid_sample(mininn.tensor(x), grid, align_corners=False)
    np.testing.assert_allclose(out.numpy(), x, atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda lib, f: f.grid_sample(lib.ones(1, 2, 5, 6), lib.zeros(1, 3, 4, 2)),
    lambda lib, f: f.affine_grid(lib.zeros(2, 2, 3), [2, 3, 4, 5]),
    lambda lib, f: f.affine_grid(lib.zeros(2, 2, 3), [2, 3, 1, 5], align_corners=True),
])
def test_unset_align_corners_and_unit_size_grids_warn_like_torch(call):
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        call(torch, TF)
    with pytest.warns(UserWarning) as ours:
        call(mininn, F)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


X4 = (1, 2, 5, 6)
G4 = (1, 3, 4, 2)


@pytest.mark.parametrize("call", [
    lambda lib, f: f.grid_sample(lib.ones(*X4), lib.zeros(*G4), mode="foo", align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(*X4), lib.zeros(*G4), padding_mode="foo", align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(2, 2, 5, 6), lib.zeros(*G4), align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(*X4), lib.zeros(1, 3, 4, 3), align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(*X4), lib.zeros(1, 3, 2), align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(1, 2, 5), lib.zeros(1, 3, 2), align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(1, 2, 5), lib.zeros(1, 3, 1), align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(1, 2, 3, 4, 5), lib.zeros(*G4), align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(1, 2, 3, 4, 5), lib.zeros(1, 2, 2, 2, 3), mode="bicubic",
                                 align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(*X4), lib.zeros(*G4, dtype=lib.float64), align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(*X4, dtype=lib.float64), lib.zeros(*G4), align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(1, 2, 0, 6), lib.zeros(*G4), align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(*X4, dtype=lib.int64), lib.zeros(*G4, dtype=lib.int64),
                                 align_corners=False),
    lambda lib, f: f.grid_sample(lib.ones(1, 2, 3, 4, 5, dtype=lib.int64),
                                 lib.zeros(1, 2, 2, 2, 3, dtype=lib.int64), align_corners=False),
    lambda lib, f: f.affine_grid(lib.zeros(2, 2, 3, dtype=lib.int64), [2, 3, 4, 5], align_corners=False),
    lambda lib, f: f.affine_grid(lib.zeros(2, 3, 3), [2, 3, 4, 5], align_corners=False),
    lambda lib, f: f.affine_grid(lib.zeros(2, 2, 3), [2, 3, 4, 5, 6], align_corners=False),
    lambda lib, f: f.affine_grid(lib.zeros(2, 3), [2, 3, 4, 5], align_corners=False),
    lambda lib, f: f.affine_grid(lib.zeros(2, 2, 3), [2, 3, 4], align_corners=False),
    lambda lib, f: f.affine_grid(lib.zeros(2, 2, 3), [2, 3, 4, 5, 6, 7], align_corners=False),
    lambda lib, f: f.affine_grid(lib.zeros(2, 2, 3), [3, 3, 4, 5], align_corners=False),
    lambda lib, f: f.affine_grid(lib.zeros(2, 3, 4), [3, 3, 4, 5, 6], align_corners=False),
    lambda lib, f: f.affine_grid(lib.zeros(2, 2, 3), [2, 3, 0, 5], align_corners=False),
])
def test_grid_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))
