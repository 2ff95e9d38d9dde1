"""``dropout``: zero each element with probability ``p`` in training, scale the rest by ``1/(1-p)``."""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

from mininn import _factories
from mininn.autograd.function import Context, Function
from mininn.nn.functional._utils import run_inplace, xp_of
from mininn.tensor import Tensor

__all__ = ["dropout"]


class _Dropout(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, mask: Any) -> Any:
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (mask,) = ctx.saved_tensors
        return g * mask, None


def _scaled_mask(x: Any, p: float) -> Any:
    """Keep-mask times ``1/(1-p)`` in ``x``'s dtype, drawn from the global generator."""
    gen = _factories.default_generator
    with gen._lock:
        draws = gen.rng.random(x.shape, dtype="float32" if x.dtype.itemsize <= 4 else "float64")
    xp = xp_of(x)
    keep = xp.asarray(draws >= p)
    mask = keep.astype(x.dtype)
    mask *= x.dtype.type(1.0 / (1.0 - p))
    return mask


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Randomly zero elements of ``input`` with probability ``p`` while ``training``.

    Survivors are scaled by ``1/(1-p)`` so the expectation is unchanged; outside
    training (or with ``p == 0``) the input is returned as is. Reproducible
    under ``mininn.manual_seed``.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        mask = xp_of(input._data).zeros(input.shape, dtype=input._data.dtype)
    else:
        mask = _scaled_mask(input._data, p)
    if inplace:
        return run_inplace(input, lambda: _Dropout.apply(input, Tensor(mask)))
    return _Dropout.apply(input, Tensor(mask))
