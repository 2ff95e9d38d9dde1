"""scatter, scatter_add, scatter_reduce, index_add/copy/fill, masked_scatter, take_along_dim vs torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

FLOATS = [np.float32, np.float64]
_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((3, 4))
SRC = _RNG.standard_normal((2, 4))
INDEX = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])
DISTINCT = np.array([[0, 1, 2, 0], [2, 0, 1, 2]])  # scatter with repeats is nondeterministic in torch


@pytest.mark.parametrize("dtype", FLOATS)
def test_scatter_and_scatter_add_match_torch_with_gradients(dtype):
    x, src = X.astype(dtype), SRC.astype(dtype)
    run_both(lambda lib, a, s, i: a.scatter(0, i, s), x, src, DISTINCT)
    run_both(lambda lib, a, i: a.scatter(1, i, 2.5), x, DISTINCT[:, :2].T.copy())
    run_both(lambda lib, a, s, i: a.scatter_add(0, i, s), x, src, INDEX)
    run_both(lambda lib, a, s, i: lib.scatter_add(a, -2, i, s), x, src, INDEX)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch_including_ties_and_zeros(reduce, include_self):
    x, src = X.copy(), SRC.copy()
    src[0, 0] = src[1, 0] = x[0, 0]  # ties for amax/amin
    src[0, 1], x[1, 1] = 0.0, 0.0  # zeros for prod
    run_both(lambda lib, a, s, i: a.scatter_reduce(0, i, s, reduce, include_self=include_self), x, src, INDEX)


@pytest.mark.parametrize("dtype", FLOATS)
def test_index_ops_and_masked_scatter_match_torch_with_gradients(dtype):
    x = X.astype(dtype)
    run_both(lambda lib, a, s, i: a.index_add(1, i, s, alpha=2), x, x[:, :3] * 3, np.array([0, 2, 0]))
    run_both(lambda lib, a, s, i: lib.index_copy(a, 1, i, s), x, x[:, :2] * 2, np.array([3, 1]))
    run_both(lambda lib, a, i, v: a.index_fill(1, i, v), x, np.array([3, 1]), np.array(2.0, dtype))
    run_both(lambda lib, a, m, s: a.masked_scatter(m, s), x, x > 0, _RNG.standard_normal(20).astype(dtype))
    run_both(lambda lib, a, m, s: lib.masked_scatter(a, m, s), x, np.array([True, False, True, False]),
             _RNG.standard_normal(7).astype(dtype))


@pytest.mark.parametrize("index, dim", [
    (np.array([[0, 0], [1, 3], [2, 2]]), 1), (np.array([[0, 0, 3]]), 1), (np.array([0, 5, 5, 11]), None),
])
def test_take_along_dim_matches_torch_with_broadcasting(index, dim):
    run_both(lambda lib, a, i: lib.take_along_dim(a, i, dim), X, index)


def test_in_place_forms_write_into_the_tensor_and_stay_differentiable():
    leaf = mininn.tensor(X, requires_grad=True)
    t_leaf = torch.tensor(X, requires_grad=True)
    results = []
    for lib, x in ((mininn, leaf), (torch, t_leaf)):
        out = x * 1
        out.scatter_(0, lib.tensor(DISTINCT), lib.tensor(SRC))
        out.index_add_(1, lib.tensor([0]), lib.ones(3, 1, dtype=lib.float64))
        results.append(out)
    ours, theirs = results
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy())
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), t_leaf.grad.numpy())
    plain = mininn.zeros(3)
    assert plain.scatter_add_(0, mininn.tensor([0, 0]), mininn.ones(2)) is plain
    assert plain.tolist() == [2.0, 0.0, 0.0]
    plain.index_fill_(0, mininn.tensor([2]), 5.0).masked_scatter_(plain == 0, mininn.tensor([7.0]))
    assert plain.tolist() == [2.0, 7.0, 5.0]


@pytest.mark.parametrize("call", [
    lambda lib, x, s: x.scatter(0, lib.tensor([0, 1]), s),
    lambda lib, x, s: x.scatter(0, lib.tensor([[5]]), s),
    lambda lib, x, s: x.scatter(0, lib.tensor([[-1]]), s),
    lambda lib, x, s: x.scatter(0, lib.zeros(4, 5, dtype=lib.int64), s),
    lambda lib, x, s: x.scatter(0, lib.tensor([[0]]), s.double()),
    lambda lib, x, s: x.scatter_add(0, lib.tensor([[0]]), 2.0),
    lambda lib, x, s: x.index_add(0, lib.tensor([0, 5]), lib.ones(2, 4)),
    lambda lib, x, s: x.index_add(0, lib.tensor([0, 1]), lib.ones(3, 4)),
    lambda lib, x, s: x.index_add(0, lib.tensor([0, 1]), lib.ones(2, 5)),
    lambda lib, x, s: x.index_add(0, lib.tensor([[0, 1]]), lib.ones(2, 4)),
    lambda lib, x, s: x.index_add(0, lib.tensor([0.0, 1.0]), lib.ones(2, 4)),
    lambda lib, x, s: x.index_add(0, lib.tensor([0, 1]), lib.ones(2, 4).double()),
    lambda lib, x, s: x.index_fill(0, lib.tensor([0, 5]), 1.0),
    lambda lib, x, s: x.index_fill(0, lib.tensor([0, 1]), lib.ones(2)),
    lambda lib, x, s: x.index_copy(0, lib.tensor([0, 1]), lib.ones(3, 4)),
    lambda lib, x, s: x.masked_scatter(lib.ones(3, 4, dtype=lib.bool), lib.ones(2)),
    lambda lib, x, s: x.masked_scatter(lib.ones(3, 4), lib.ones(12)),
    lambda lib, x, s: x.masked_scatter(lib.ones(3, 4, dtype=lib.bool), lib.ones(12).double()),
    lambda lib, x, s: lib.take_along_dim(x, lib.tensor([[0], [1]]), 1),
    lambda lib, x, s: lib.take_along_dim(x, lib.tensor([[0.0]]), 1),
    lambda lib, x, s: lib.take_along_dim(x, lib.tensor([[0, 1, 2]]), 0),
])
def test_scatter_family_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch, torch.zeros(3, 4), torch.ones(3, 4)),
               lambda: call(mininn, mininn.zeros(3, 4), mininn.ones(3, 4)))
