"""Smoke tests of the autograd core against torch (the Tensor issue's suite grows beside it)."""

import numpy as np
import pytest

import mininn

torch = pytest.importorskip("torch")


def test_mlp_expression_matches_torch_values_and_grads():
    rng = np.random.default_rng(0)
    xa, wa = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    x, w = mininn.tensor(xa, requires_grad=True), mininn.tensor(wa, requires_grad=True)
    tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    y = ((x @ w).relu() * 2 + 1).sum()
    ty = ((tx @ tw).relu() * 2 + 1).sum()
    y.backward()
    ty.backward()
    np.testing.assert_allclose(y.item(), ty.item())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy())


def test_ten_thousand_deep_chain_backpropagates_without_recursion():
    a = mininn.tensor(2.0, dtype=mininn.float64, requires_grad=True)
    b = a
    for _ in range(10_000):
        b = b * 1.0001
    b.backward()
    assert a.grad.shape == ()
    np.testing.assert_allclose(a.grad.item(), 1.0001**10_000, rtol=1e-4)


def test_second_backward_through_freed_graph_raises_torch_message():
    a = mininn.tensor([1.0, 2.0], requires_grad=True)
    y = (a * a).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_tensor_from_python_scalars_uses_torch_default_dtypes():
    assert mininn.tensor(1.5).dtype is mininn.float32
    assert mininn.tensor([1, 2]).dtype is mininn.int64
    assert mininn.tensor(True).dtype is mininn.bool
