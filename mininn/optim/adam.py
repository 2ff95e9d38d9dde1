"""Adam and AdamW, with torch's step counting, bias correction and AMSGrad."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from mininn.optim.optimizer import Optimizer
from mininn.tensor import Tensor

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """``torch.optim.Adam``: the same update, operation for operation.

    For each parameter with a gradient ``g`` (negated when ``maximize``), with
    ``t`` the per-parameter step count (a float32 scalar tensor, as in torch)::

        p = p * (1 - lr * weight_decay)      (decoupled, AdamW)
        g = g + weight_decay * p             (otherwise)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
        v_hat = max(v_hat, v) (amsgrad) | v
        p = p - lr / (1 - beta1**t) * m / (sqrt(v_hat) / sqrt(1 - beta2**t) + eps)

    Args:
        params: Tensors or parameter groups to optimize.
        lr: Learning rate. Default: 1e-3.
        betas: Decay rates of the first and second moment. Default: (0.9, 0.999).
        eps: Added to the denominator. Default: 1e-8.
        weight_decay: Weight decay (L2 penalty, or decoupled for AdamW). Default: 0.
        amsgrad: Use the maximum of past second moments. Default: False.
        maximize: Maximize the objective instead of minimizing. Default: False.
        foreach, capturable, differentiable, fused: Kept for torch's state-dict
            format; they have no effect here.
        decoupled_weight_decay: Decay the weights directly (AdamW). Default: False.
    """

    _group_fallbacks = {
        "amsgrad": False,
        "maximize": False,
        "foreach": None,
        "capturable": False,
        "differentiable": False,
        "decoupled_weight_decay": False,
        "fused": None,
    }

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        _check_hyper_parameters(lr, betas, eps, weight_decay)
        defaults = {
            "lr": lr,
            "betas": (float(betas[0]), float(betas[1])),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _fill_group_defaults(self) -> None:
        super()._fill_group_defaults()
        for state in self.state.values():
            step = state.get("step")
            if step is not None and not isinstance(step, Tensor):
                state["step"] = Tensor(np.array(float(step), dtype=np.float32))

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        return self._run_step(closure, self._update)

    def _update(self) -> None:
        for p, group in self._params_with_grad():
            state = self.state[p]
            if len(state) == 0:
                _init_state(state, p, group["amsgrad"])
            _adam_param(p, p.grad._data, state, group)


class AdamW(Adam):
    """``torch.optim.AdamW``: Adam with decoupled weight decay (default 1e-2).

    Takes :class:`Adam`'s arguments but ``decoupled_weight_decay``, which is always on;
    ``weight_decay`` is the decoupled coefficient. Default: 1e-2.
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

    def _fill_group_defaults(self) -> None:
        super()._fill_group_defaults()
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def _check_hyper_parameters(
    lr: float, betas: tuple[float, float], eps: float, weight_decay: float
) -> None:
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if not (isinstance(betas[0], float) and isinstance(betas[1], float)):
        raise ValueError("betas must be either both floats or both Tensors")


def _init_state(state: dict[str, Any], p: Tensor, amsgrad: bool) -> None:
    """torch's lazy state: a float32 step on cpu and zeroed moments like ``p``."""
    state["step"] = Tensor(np.array(0.0, dtype=np.float32))
    state["exp_avg"] = Tensor(p._data * 0)
    state["exp_avg_sq"] = Tensor(p._data * 0)
    if amsgrad:
        state["max_exp_avg_sq"] = Tensor(p._data * 0)


def _adam_param(p: Tensor, grad: Any, state: dict[str, Any], group: dict[str, Any]) -> None:
    """One parameter's update, in place on ``p._data`` and the state arrays."""
    lr, eps, weight_decay = float(group["lr"]), group["eps"], group["weight_decay"]
    beta1, beta2 = group["betas"]
    g = -grad if group["maximize"] else grad
    step_t = state["step"]
    step_t._data = step_t._data + 1
    if weight_decay != 0:
        if group["decoupled_weight_decay"]:
            p._data *= 1 - lr * weight_decay
        else:
            g = g + weight_decay * p._data
    exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
    _lerp_(exp_avg, g, 1 - beta1)
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * g * g
    step = float(step_t._data)
    bias_correction1 = 1 - beta1**step
    bias_correction2_sqrt = (1 - beta2**step) ** 0.5
    second = exp_avg_sq
    if group["amsgrad"]:
        second = state["max_exp_avg_sq"]._data
        np.maximum(second, exp_avg_sq, out=second)
    denom = np.sqrt(second) / bias_correction2_sqrt + eps
    # torch's addcdiv computes (value * t1) / t2
    p._data += (-(lr / bias_correction1) * exp_avg) / denom


def _lerp_(start: Any, end: Any, weight: float) -> None:
    """torch's ``lerp_`` with a scalar weight, in place on ``start``."""
    if abs(weight) < 0.5:
        start += weight * (end - start)
    else:
        start[...] = end - (end - start) * (1 - weight)
