"""Distances against torch 2.13: PairwiseDistance, CosineSimilarity and F.pdist (values, gradients,
broadcasting, torch's gradient conventions at zero norms and ties, reprs and errors)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, state_layout, to_numpy, tol

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]


def _pair(shape1, shape2, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape1).astype(dtype), rng.standard_normal(shape2).astype(dtype)


def _both(fn_torch, fn_ours, arrays, seed=1):
    """Outputs and input gradients of both libraries for the same inputs and cotangent."""
    results = []
    for lib, fn in ((torch, fn_torch), (mininn, fn_ours)):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*inputs)
        cot = np.random.default_rng(seed).standard_normal(tuple(out.shape)).astype(arrays[0].dtype)
        out.backward(lib.tensor(cot))
        # torch leaves no gradient at all through a 0-norm; ours is zero
        results.append((to_numpy(out), [np.zeros_like(a) if t.grad is None else to_numpy(t.grad)
                                        for a, t in zip(arrays, inputs)]))
    return results


def _assert_same(results, dtype, **overrides):
    t = {**tol(dtype), **overrides}
    (ty, tgrads), (my, mgrads) = results
    assert my.shape == ty.shape and my.dtype == ty.dtype
    np.testing.assert_allclose(my, ty, **t, err_msg="output")
    for k, (mg, tg) in enumerate(zip(mgrads, tgrads)):
        np.testing.assert_allclose(mg, tg, **t, err_msg=f"grad {k}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf, -math.inf, 0.0, -1.0])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance_module_matches_torch(p, keepdim, dtype):
    x1, x2 = _pair((5, 7), (5, 7), dtype)
    tm, mm = torch.nn.PairwiseDistance(p, 1e-6, keepdim), nn.PairwiseDistance(p, 1e-6, keepdim)
    _assert_same(_both(tm, mm, [x1, x2]), dtype)


@pytest.mark.parametrize("shapes", [((4, 6), (6,)), ((6,), (6,)), ((3, 1, 5), (4, 5)), ((), ())], ids=str)
def test_pairwise_distance_broadcasts_like_torch(shapes):
    x1, x2 = _pair(*shapes, np.float64)
    _assert_same(_both(TF.pairwise_distance, F.pairwise_distance, [x1, x2]), np.float64)


@pytest.mark.parametrize("p", [math.inf, -math.inf, 2.0, 0.5])
def test_pairwise_distance_gradient_at_ties_and_zeros_follows_torch(p):
    x1 = np.array([[2.0, -2.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.5, -1.0]])
    x2 = np.zeros((3, 3))
    call = lambda lib: lambda a, b: lib.nn.functional.pairwise_distance(a, b, p, eps=0.0)  # noqa: E731
    _assert_same(_both(call(torch), call(mininn), [x1, x2]), np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [1, 0, -1])
def test_cosine_similarity_module_matches_torch(dim, dtype):
    x1, x2 = _pair((4, 5, 3), (4, 5, 3), dtype)
    tm, mm = torch.nn.CosineSimilarity(dim), nn.CosineSimilarity(dim)
    _assert_same(_both(tm, mm, [x1, x2]), dtype)


@pytest.mark.parametrize("shapes,dim", [(((4, 6), (6,)), -1), (((3, 1, 5), (4, 5)), 1), (((6,), (6,)), 0),
                                        (((), ()), 0)], ids=str)
def test_cosine_similarity_broadcasts_like_torch(shapes, dim):
    x1, x2 = _pair(*shapes, np.float64)
    def call(f):
        return lambda a, b: f.cosine_similarity(a, b, dim)

    _assert_same(_both(call(TF), call(F), [x1, x2]), np.float64)


def test_cosine_similarity_clamps_small_and_zero_norms_like_torch():
    x1, x2 = _pair((4, 5), (4, 5), np.float64)
    x1[0] *= 1e-9  # below eps: the clamp takes over, the gradient still sees the true norm
    x2[1] = 0.0  # a zero vector: its norm's gradient is zero
    x1[2] = x2[2] = 0.0
    _assert_same(_both(TF.cosine_similarity, F.cosine_similarity, [x1, x2]), np.float64, rtol=1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf, 0.0])
def test_pdist_matches_torch_including_repeated_rows(p, dtype):
    x = np.random.default_rng(0).standard_normal((6, 4)).astype(dtype)
    x[3] = x[1]  # a zero distance: its gradient is zero
    x[5] = x[0] + np.array([1.0, -1.0, 1.0, 0.5], dtype)  # ties of the max-norm: not shared in pdist
    _assert_same(_both(lambda a: TF.pdist(a, p), lambda a: F.pdist(a, p), [x]), dtype)


@pytest.mark.parametrize("rows", [0, 1])
def test_pdist_of_fewer_than_two_rows_is_empty(rows):
    assert tuple(F.pdist(mininn.ones(rows, 3)).shape) == tuple(TF.pdist(torch.ones(rows, 3)).shape) == (0,)


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.PairwiseDistance(), lambda lib: lib.nn.PairwiseDistance(1, 1e-3, True),
    lambda lib: lib.nn.CosineSimilarity(), lambda lib: lib.nn.CosineSimilarity(0, 1e-4),
])
def test_distance_layer_reprs_attributes_and_state_dicts_match_torch(make):
    tm, mm = make(torch), make(mininn)
    assert repr(mm) == repr(tm)
    assert state_layout(mm) == state_layout(tm) == []
    names = set(vars(tm)) - set(vars(torch.nn.Module()))
    assert {k: getattr(mm, k) for k in names} == {k: getattr(tm, k) for k in names}


@pytest.mark.parametrize("call", [
    lambda lib, f: f.cosine_similarity(lib.ones(2, 3), lib.ones(3, 3)),
    lambda lib, f: f.cosine_similarity(lib.ones(2, 3), lib.ones(2, 3), dim=2),
    lambda lib, f: f.cosine_similarity(lib.ones(2, 3, dtype=lib.int64), lib.ones(2, 3, dtype=lib.int64)),
    lambda lib, f: f.pairwise_distance(lib.ones(2, 3), lib.ones(3, 3)),
    lambda lib, f: f.pairwise_distance(lib.ones(4, 2, 3), lib.ones(5, 1, 3)),
    lambda lib, f: f.pdist(lib.ones(3)),
    lambda lib, f: f.pdist(lib.ones(3, 2), p=-1),
    lambda lib, f: f.pdist(lib.ones(3, 2, dtype=lib.int64)),
])
def test_distance_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))
