"""Shared by the weight/spectral-norm tests: torch and mininn layers with the same weights."""

from __future__ import annotations

from typing import Any

import numpy as np

import mininn
from tests.mininn.nn._layer_parity import to_numpy

LAYERS = [("Linear", (3, 4), (2, 3)), ("Conv1d", (3, 4, 2), (2, 3, 5)),
          ("ConvTranspose1d", (3, 4, 2), (2, 3, 5)), ("Conv2d", (2, 3, (2, 3)), (1, 2, 4, 5))]


def build(name: str, args: tuple[Any, ...], dtype: Any = np.float32) -> tuple[Any, Any]:
    import torch

    torch.manual_seed(0)
    t = getattr(torch.nn, name)(*args)
    m = getattr(mininn.nn, name)(*args)
    if dtype == np.float64:
        t.double()
        m.double()
    return t, m


def load_from(t: Any, m: Any) -> None:
    result = m.load_state_dict({k: mininn.tensor(to_numpy(v)) for k, v in t.state_dict().items()})
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []


def assert_steps_match(t: Any, m: Any, x: np.ndarray, steps: tuple[bool, ...] = (True, True, False),
                       tol: float = 1e-5) -> None:
    """Forward/backward in each mode of ``steps`` (True: train); outputs, grads, buffers agree."""
    import torch

    for training in steps:
        t.train(training)
        m.train(training)
        tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
        ty, my = t(tx), m(mx)
        cot = np.random.default_rng(0).standard_normal(tuple(ty.shape)).astype(x.dtype)
        ty.backward(torch.tensor(cot))
        my.backward(mininn.tensor(cot))
        np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=tol, atol=tol)
        np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), rtol=tol, atol=tol)
        m_params = dict(m.named_parameters())
        assert list(m_params) == [n for n, _ in t.named_parameters()]
        for n, tp in t.named_parameters():
            np.testing.assert_allclose(to_numpy(m_params[n].grad), to_numpy(tp.grad), rtol=tol, atol=tol,
                                       err_msg=n)
        for (n, tb), mb in zip(t.named_buffers(), m.buffers()):
            np.testing.assert_allclose(to_numpy(mb), to_numpy(tb), rtol=tol, atol=tol, err_msg=n)
