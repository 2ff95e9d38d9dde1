"""Shared machinery of the loss parity tests: run a torch loss and its mininn twin on the same arrays.

``check_loss(torch_fn, mininn_fn, arrays, grad_idx, **kwargs)`` wraps each
array for both libraries (``requires_grad`` for the positions in
``grad_idx``), calls both with the same keyword arguments (NumPy arrays among
them become tensors), backpropagates the same random cotangent and compares
the output's shape, dtype and values and every requested gradient within the
tolerance of the first array's dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import mininn
from tests.mininn.nn._layer_parity import raised, to_numpy, tol


def as_torch(value: Any) -> Any:
    import torch

    return torch.tensor(value) if isinstance(value, np.ndarray) else value


def as_mininn(value: Any) -> Any:
    return mininn.tensor(value) if isinstance(value, np.ndarray) else value


def check_loss(torch_fn: Any, mininn_fn: Any, arrays: list[np.ndarray], grad_idx: tuple[int, ...] = (0,),
               seed: int = 0, **kwargs: Any) -> None:
    """Value, shape, dtype and the gradients of ``arrays[i]`` for ``i`` in ``grad_idx`` agree."""
    import torch

    t_args = [torch.tensor(a, requires_grad=i in grad_idx) for i, a in enumerate(arrays)]
    m_args = [mininn.tensor(a, requires_grad=i in grad_idx) for i, a in enumerate(arrays)]
    t_out = torch_fn(*t_args, **{k: as_torch(v) for k, v in kwargs.items()})
    m_out = mininn_fn(*m_args, **{k: as_mininn(v) for k, v in kwargs.items()})
    t = tol(arrays[0].dtype)
    assert tuple(m_out.shape) == tuple(t_out.shape)
    assert m_out.dtype.name == str(t_out.dtype).removeprefix("torch.")
    np.testing.assert_allclose(to_numpy(m_out), to_numpy(t_out), **t, err_msg="output")
    cot = np.random.default_rng(seed).standard_normal(tuple(t_out.shape)).astype(to_numpy(t_out).dtype)
    t_out.backward(torch.tensor(cot))
    m_out.backward(mininn.tensor(cot))
    for i in grad_idx:
        np.testing.assert_allclose(to_numpy(m_args[i].grad), to_numpy(t_args[i].grad), **t,
                                   err_msg=f"grad {i}")


def same_loss_error(torch_fn: Any, mininn_fn: Any, arrays: list[np.ndarray],
                    **kwargs: Any) -> tuple[str, str]:
    """Both raise the same exception type and message on the same arrays and arguments."""
    import torch

    expected = raised(lambda: torch_fn(*[torch.tensor(a) for a in arrays],
                                       **{k: as_torch(v) for k, v in kwargs.items()}))
    got = raised(lambda: mininn_fn(*[mininn.tensor(a) for a in arrays],
                                   **{k: as_mininn(v) for k, v in kwargs.items()}))
    assert got == expected, f"\nmininn: {got!r}\ntorch:  {expected!r}"
    return expected
