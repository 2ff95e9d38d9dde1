"""Matrix products."""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions._util import unbroadcast
from mininn.autograd.function import Context, Function


class MatMul(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        if a.ndim == 0 or b.ndim == 0:
            raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                               f"{a.ndim}D and {b.ndim}D")
        _check_shapes(a, b)
        ctx.save_for_backward(a, b)
        return np.matmul(a, b)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g2 = g
        if a.ndim == 1:
            g2 = np.expand_dims(g2, -2)
        if b.ndim == 1:
            g2 = np.expand_dims(g2, -1)
        ga = np.matmul(g2, np.swapaxes(b2, -1, -2))
        gb = np.matmul(np.swapaxes(a2, -1, -2), g2)
        if a.ndim == 1:
            ga = ga.reshape(ga.shape[:-2] + ga.shape[-1:])
        if b.ndim == 1:
            gb = gb.reshape(gb.shape[:-1])
        return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)


def _check_shapes(a: Any, b: Any) -> None:
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a == k_b:
        return
    if a.ndim == 2 and b.ndim == 2:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
            f"{b.shape[0]}x{b.shape[1]})"
        )
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError(
            "inconsistent tensor size, expected tensor [%d] and src [%d] to have the same "
            "number of elements, but got %d and %d elements respectively"
            % (a.shape[0], b.shape[0], a.shape[0], b.shape[0])
        )
    raise RuntimeError(
        f"Expected size for first two dimensions of batch2 tensor to be: "
        f"[{a.shape}] but got: [{b.shape}]."
    )
