"""``linear``: ``y = x @ weight.T + bias`` as one fused op (one GEMM forward, two backward)."""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions._util import unbroadcast
from mininn.autograd.function import Context, Function
from mininn.nn.functional._utils import c_name, requires, scalar_name
from mininn.tensor import Tensor

__all__ = ["linear"]


class _Linear(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, need: tuple[bool, bool, bool]) -> Any:
        x2 = x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x
        out = x2 @ w.T
        if b is not None:
            out += b
        if any(need):
            ctx.save_for_backward(x2 if need[1] else None, w if need[0] else None)
            ctx.meta = (x.shape, need, None if b is None else b.shape)
        return out.reshape(x.shape[:-1] + (w.shape[0],))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x2, w = ctx.saved_tensors
        x_shape, need, b_shape = ctx.meta
        g2 = g.reshape(-1, g.shape[-1])
        gx = (g2 @ w).reshape(x_shape) if need[0] else None
        gw = g2.T @ x2 if need[1] else None
        gb = unbroadcast(g2.sum(axis=0), b_shape) if need[2] else None
        return gx, gw, gb, None


def _check_dtypes(input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """torch's checks: with a bias as ``addmm(bias, input, weight.T)``, else as ``matmul``."""
    if bias is None:
        if weight.dtype != input.dtype:
            raise RuntimeError(
                f"expected m1 and m2 to have the same dtype, but got: {c_name(input)} != {c_name(weight)}"
            )
        return
    for name, first in (("self", bias), ("mat1", input)):
        if first.dtype != weight.dtype:
            raise RuntimeError(
                f"{name} and mat2 must have the same dtype, but got {scalar_name(first)} and "
                f"{scalar_name(weight)}"
            )


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Apply ``input @ weight.T + bias``; ``input`` is ``(*, in_features)``."""
    in_features = input.shape[-1] if input.ndim else 1
    if weight.ndim != 2 or weight.shape[1] != in_features:
        rows = int(np.prod(input.shape[:-1])) if input.ndim > 1 else 1
        w_shape = tuple(weight.shape) + (1,) * (2 - weight.ndim)
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{in_features} and "
            f"{w_shape[1]}x{w_shape[0]})"
        )
    if bias is not None and bias.ndim == 1 and bias.shape[0] not in (1, weight.shape[0]):
        target = list(input.shape[:-1]) + [weight.shape[0]]
        raise RuntimeError(
            f"The expanded size of the tensor ({weight.shape[0]}) must match the existing size "
            f"({bias.shape[0]}) at non-singleton dimension {len(target) - 1}.  Target sizes: "
            f"{target}.  Tensor sizes: [{bias.shape[0]}]"
        )
    _check_dtypes(input, weight, bias)
    need = (requires(input), requires(weight), requires(bias))
    return _Linear.apply(input, weight, bias, need)
