"""mininn.linalg solvers against torch 2.13: inv, det, slogdet, logdet, solve, matrix_power, cholesky."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

FLOATS = [np.float32, np.float64]
_RNG = np.random.default_rng(0)
A = _RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
SPD = A @ np.swapaxes(A, -1, -2) + np.eye(3)


@pytest.mark.parametrize("dtype", FLOATS)
def test_inverse_and_determinants_match_torch_with_gradients(dtype):
    a = A.astype(dtype)
    run_both(lambda lib, x: lib.linalg.inv(x), a)
    run_both(lambda lib, x: (lib.linalg.det(x), x.inverse()), a)
    run_both(lambda lib, x: tuple(lib.linalg.slogdet(x)), a)
    run_both(lambda lib, x: (lib.logdet(x), x.det()), SPD.astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("b_shape, left", [((2, 3, 2), True), ((2, 3), True), ((3,), True), ((3, 4), True),
                                           ((4, 3), False)])
def test_solve_matches_torch_for_matrices_vectors_and_broadcasting(dtype, b_shape, left):
    b = _RNG.standard_normal(b_shape).astype(dtype)
    run_both(lambda lib, x, y: lib.linalg.solve(x, y, left=left), A.astype(dtype), b)


@pytest.mark.parametrize("n", [0, 1, 2, 3, -2])
def test_matrix_power_matches_torch(n):
    run_both(lambda lib, x: lib.linalg.matrix_power(x, n), A)
    run_both(lambda lib, x: x.matrix_power(n), A.astype(np.float32))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_matches_torch_with_gradients(dtype, upper):
    run_both(lambda lib, x: lib.linalg.cholesky(x, upper=upper), SPD.astype(dtype),
             scale=10 if dtype == np.float32 else 1)


@pytest.mark.parametrize("call", [
    lambda lib: lib.linalg.inv(lib.randn(2, 3)),
    lambda lib: lib.linalg.inv(lib.zeros(2, 2)),
    lambda lib: lib.linalg.inv(lib.tensor([[1.0, 2.0], [2.0, 4.0]])),
    lambda lib: lib.linalg.inv(lib.randn(3)),
    lambda lib: lib.linalg.inv(lib.ones(2, 2, dtype=lib.int64)),
    lambda lib: lib.linalg.det(lib.randn(2, 3)),
    lambda lib: lib.linalg.solve(lib.randn(2, 2), lib.randn(3)),
    lambda lib: lib.linalg.solve(lib.zeros(2, 2), lib.randn(2)),
    lambda lib: lib.linalg.cholesky(lib.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda lib: lib.linalg.matrix_power(lib.randn(2, 3), 2),
])
def test_linalg_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


def test_linalg_error_is_a_runtime_error_named_like_torchs():
    with pytest.raises(RuntimeError):
        mininn.linalg.inv(mininn.zeros(2, 2))
    assert issubclass(mininn.linalg.LinAlgError, RuntimeError)
    assert repr(mininn.linalg.slogdet(mininn.tensor([[1.0, 2.0], [3.0, 4.0]]))).startswith(
        "mininn.return_types.linalg_slogdet(")


FACTOR = np.linalg.cholesky(SPD)
RHS = _RNG.standard_normal((2, 3, 2))


@pytest.mark.parametrize("upper", [True, False])
def test_triangular_and_cholesky_solvers_match_torch_with_gradients(upper):
    run_both(lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=upper), A, RHS)
    run_both(lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=upper, unitriangular=True), A, RHS)
    run_both(lambda lib, a, b: lib.linalg.solve_triangular(a, b.mT, upper=upper, left=False), A, RHS)
    factor = np.swapaxes(FACTOR, -1, -2).copy() if upper else FACTOR
    run_both(lambda lib, b, f: lib.cholesky_solve(b, f, upper), RHS, factor)
    run_both(lambda lib, f: lib.cholesky_inverse(f, upper), factor[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_both(lambda lib, b, a: tuple(lib.triangular_solve(b, a, upper, False)), RHS, A)
        run_both(lambda lib, b, a: tuple(lib.triangular_solve(b, a, upper, True)), RHS, A)
        run_both(lambda lib, a: lib.cholesky(a, upper), SPD)


_DEPRECATION_TEXT = {  # torch warns once per process, so its text is recorded here (from torch 2.13)
    "cholesky": (
        "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
        "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
        "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
        "This transform will produce equivalent results for all valid (symmetric positive definite) inputs."
    ),
    "triangular_solve": (
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed "
        "in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not "
        "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced "
        "with\nX = torch.linalg.solve_triangular(A, B)."
    ),
}


@pytest.mark.parametrize("name, call", [
    ("cholesky", lambda lib: lib.cholesky(lib.tensor([[4.0, 2.0], [2.0, 3.0]]))),
    ("triangular_solve", lambda lib: lib.triangular_solve(lib.ones(2, 1), lib.eye(2))),
])
def test_deprecated_solvers_warn_like_torch(name, call):
    for lib in (torch, mininn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(lib)
        texts = [str(w.message).split(" (Triggered")[0] for w in caught]
        expected = [_DEPRECATION_TEXT[name]]
        assert texts in (expected, []) if lib is torch else texts == expected


def _svd_invariants(lib, a, full_matrices=False):
    """Sign-independent functions of the SVD (singular vectors are unique only up to sign)."""
    u, s, vh = lib.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    u, vh = u[..., :k], vh[..., :k, :]
    return s, (u * s.unsqueeze(-2)) @ vh, u[..., :1] @ vh[..., :1, :], u @ u.mT * 2 + 1, vh.mT @ vh


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2)])
def test_svd_and_pinv_match_torch_with_gradients(shape):
    a = _RNG.standard_normal(shape)
    run_both(lambda lib, t: _svd_invariants(lib, t), a)
    run_both(lambda lib, t: _svd_invariants(lib, t, full_matrices=True), a)
    run_both(lambda lib, t: (lib.linalg.pinv(t), lib.pinverse(t), t.pinverse()), a)
    ours, theirs = mininn.svd(mininn.tensor(a)), torch.svd(torch.tensor(a))
    assert [tuple(x.shape) for x in ours] == [tuple(x.shape) for x in theirs]
    np.testing.assert_allclose((ours.U * ours.S.unsqueeze(-2) @ ours.V.mT).numpy(), a, atol=1e-12)
