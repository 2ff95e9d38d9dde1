"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from mininn.optim.optimizer import Optimizer
from mininn.tensor import Tensor

__all__ = ["SGD"]


class SGD(Optimizer):
    """``torch.optim.SGD``: the same update, operation for operation.

    For each parameter with a gradient ``g`` (negated when ``maximize``)::

        g = g + weight_decay * p
        buf = g (first step) | momentum * buf + (1 - dampening) * g
        g = g + momentum * buf (nesterov) | buf
        p = p - lr * g

    Args:
        params: Tensors or parameter groups to optimize.
        lr: Learning rate. Default: 1e-3.
        momentum: Momentum factor. Default: 0.
        dampening: Dampening of the momentum. Default: 0.
        weight_decay: L2 penalty. Default: 0.
        nesterov: Use Nesterov momentum. Default: False.
        maximize: Maximize the objective instead of minimizing. Default: False.
        foreach: Kept for torch's state-dict format; has no effect.
        differentiable: Kept for torch's state-dict format; must stay False.
        fused: Kept for torch's state-dict format; has no effect.
    """

    _group_fallbacks = {
        "nesterov": False,
        "maximize": False,
        "foreach": None,
        "differentiable": False,
        "fused": False,
    }

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        return self._run_step(closure, self._update)

    def _update(self) -> None:
        for p, group in self._params_with_grad():
            buf = self.state[p].get("momentum_buffer") if group["momentum"] != 0 else None
            buf = _sgd_param(p, p.grad._data, buf, group)
            if buf is not None:
                self.state[p]["momentum_buffer"] = buf


def _sgd_param(p: Tensor, grad: Any, buf: Tensor | None, group: dict[str, Any]) -> Tensor | None:
    """One parameter's update, in place on ``p._data``; returns the momentum buffer."""
    lr, momentum, dampening = float(group["lr"]), group["momentum"], group["dampening"]
    weight_decay = group["weight_decay"]
    g = -grad if group["maximize"] else grad
    if weight_decay != 0:
        g = g + weight_decay * p._data
    if momentum != 0:
        if buf is None:
            buf = Tensor(g.copy())
        else:
            b = buf._data
            b *= momentum
            b += (1 - dampening) * g
        g = g + momentum * buf._data if group["nesterov"] else buf._data
    p._data -= lr * g
    return buf
