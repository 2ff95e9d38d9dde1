"""Norms against torch 2.13: vector/matrix norms, linalg.norm, torch.norm, dist, svdvals, with gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

INF = math.inf
_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((3, 4))
ZERO_ROW = X.copy()
ZERO_ROW[1] = 0.0
TIES = np.round(X)


@pytest.mark.parametrize("x", [X, ZERO_ROW, TIES, X.astype(np.float32)], ids=["plain", "zero", "ties", "f32"])
@pytest.mark.parametrize("ord", [2, 1, INF, -INF, 0, 3, 0.5])
def test_vector_norm_matches_torch_with_gradients(x, ord):
    run_both(lambda lib, t: lib.linalg.vector_norm(t, ord, dim=1), x)
    run_both(lambda lib, t: lib.linalg.vector_norm(t, ord, dim=(0, 1), keepdim=True), x)


@pytest.mark.parametrize("x", [X, X.astype(np.float32), X.T.copy()], ids=["wide", "f32", "tall"])
@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, INF, -INF])
def test_matrix_norm_matches_torch_with_gradients(x, ord):
    run_both(lambda lib, t: lib.linalg.matrix_norm(t, ord), x)
    run_both(lambda lib, t: lib.linalg.matrix_norm(t, ord, dim=(1, 0), keepdim=True), x)


@pytest.mark.parametrize("x", [X, ZERO_ROW, X.astype(np.float32)], ids=["plain", "zero", "f32"])
def test_norm_linalg_norm_and_dist_match_torch(x):
    run_both(lambda lib, t: lib.norm(t), x)
    run_both(lambda lib, t: t.norm(1), x)
    run_both(lambda lib, t: lib.norm(t, dim=1, keepdim=True), x)
    run_both(lambda lib, t: lib.linalg.norm(t), x)
    run_both(lambda lib, t: lib.linalg.norm(t, 2), x)
    run_both(lambda lib, t: lib.linalg.norm(t, INF, dim=0), x)
    run_both(lambda lib, t, u: lib.dist(t, u, 3), x, x[::-1].copy())


def test_svdvals_and_batched_nuclear_norm_match_torch():
    y = _RNG.standard_normal((2, 3, 4))
    run_both(lambda lib, t: lib.linalg.svdvals(t), y)
    run_both(lambda lib, t: lib.linalg.matrix_norm(t, "nuc", dim=(0, 2)), y)


@pytest.mark.parametrize("call", [
    lambda lib: lib.linalg.matrix_norm(lib.randn(3)),
    lambda lib: lib.linalg.matrix_norm(lib.randn(2, 3), "abc"),
    lambda lib: lib.linalg.norm(lib.randn(2, 3), 3),
    lambda lib: lib.linalg.norm(lib.randn(2, 3), "fro", dim=0),
    lambda lib: lib.linalg.vector_norm(lib.randn(2).long()),
    lambda lib: lib.linalg.norm(lib.randn(2, 2, 2), 1),
])
def test_norm_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))
