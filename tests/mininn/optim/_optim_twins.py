"""A small regression problem built twice, in torch and in mininn, from the same numbers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn

torch = pytest.importorskip("torch")



@dataclass
class Twin:
    """Matching parameters and a step function (zero_grad, loss, backward) for each library."""

    torch_params: list[Any]
    mininn_params: list[Any]
    data: tuple[np.ndarray, ...]

    def torch_loss(self) -> Any:
        w, b, w2 = self.torch_params
        x, y = (torch.tensor(a) for a in self.data)
        hidden = torch.tanh(torch.nn.functional.linear(x, w, b))
        return torch.nn.functional.mse_loss(torch.nn.functional.linear(hidden, w2), y)

    def mininn_loss(self) -> Any:
        w, b, w2 = self.mininn_params
        x, y = (mininn.tensor(a) for a in self.data)
        hidden = F.linear(x, w, b).tanh()
        return F.mse_loss(F.linear(hidden, w2), y)

    def assert_close(self, tol: float) -> None:
        for t, m in zip(self.torch_params, self.mininn_params):
            np.testing.assert_allclose(m.detach().numpy(), t.detach().numpy(), rtol=0, atol=tol)


def make_twin(dtype: Any = np.float32, seed: int = 0) -> Twin:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in [(6, 4), (6,), (3, 6)]]
    data = (rng.standard_normal((8, 4)).astype(dtype), rng.standard_normal((8, 3)).astype(dtype))
    t_params = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    m_params = [nn.Parameter(mininn.tensor(a.copy())) for a in arrays]
    return Twin(t_params, m_params, data)


def run_both(twin: Twin, t_opt: Any, m_opt: Any, steps: int, tol: float,
             after_step: Callable[[int], None] | None = None) -> None:
    """Train both for ``steps`` steps, comparing all parameters after each one."""
    for i in range(steps):
        t_opt.zero_grad()
        twin.torch_loss().backward()
        t_opt.step()
        m_opt.zero_grad()
        twin.mininn_loss().backward()
        m_opt.step()
        twin.assert_close(tol)
        if after_step is not None:
            after_step(i)


TOL = {np.float32: 1e-6, np.float64: 1e-12}
