"""``pad``: constant, reflect, replicate and circular padding of the trailing dims.

Constant padding (negative amounts crop) copies the input into a filled
array. The other modes gather along each padded dim with an index map, and
their backward sums the gradient back through the same map as one small
matrix product per dim.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.function import Context, Function
from mininn.nn.functional._utils import xp_of
from mininn.tensor import Tensor

__all__ = ["pad"]

_NP_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}
_SUPPORTED = (
    "Supported combinations for non-constant padding:\n"
    "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
    "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
    "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
)


def _pairs(pad: tuple[int, ...], ndim: int) -> list[tuple[int, int]]:
    """Per-dim ``(before, after)`` for every dim of an ``ndim`` input (``pad`` starts at the last dim)."""
    out = [(0, 0)] * ndim
    for i in range(len(pad) // 2):
        out[ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return out


class _ConstantPad(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, pairs: list[tuple[int, int]], value: float) -> Any:
        out_shape = tuple(n + a + b for n, (a, b) in zip(x.shape, pairs))
        if any(n < 0 for n in out_shape):
            raise RuntimeError("narrow(): length must be non-negative.")
        src = tuple(slice(max(-a, 0), n - max(-b, 0)) for n, (a, b) in zip(x.shape, pairs))
        dst = tuple(slice(max(a, 0), m - max(b, 0)) for m, (a, b) in zip(out_shape, pairs))
        out = xp_of(x).full(out_shape, value, dtype=x.dtype)
        out[dst] = x[src]
        ctx.meta = (x.shape, src, dst)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, src, dst = ctx.meta
        gx = xp_of(g).zeros(shape, dtype=g.dtype)
        gx[src] = g[dst]
        return gx, None, None


class _IndexPad(Function):
    """Gather along each padded dim through an index map (reflect, replicate, circular)."""

    @staticmethod
    def forward(ctx: Context, x: Any, maps: dict[int, Any]) -> Any:
        xp = xp_of(x)
        out = x
        for axis, idx in maps.items():
            out = xp.take(out, xp.asarray(idx), axis=axis)
        ctx.meta = (x.shape, maps)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, maps = ctx.meta
        xp = xp_of(g)
        for axis, idx in reversed(maps.items()):
            onehot = (idx[:, None] == np.arange(shape[axis])[None, :]).astype(g.dtype)
            g = xp.moveaxis(xp.moveaxis(g, axis, -1) @ xp.asarray(onehot), -1, axis)
        return g, None


def _index_map(n: int, before: int, after: int, mode: str) -> Any:
    return np.pad(np.arange(n), (before, after), mode=_NP_MODES[mode])


def _check_non_constant(input: Tensor, pad: tuple[int, ...], mode: str) -> None:
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n{_SUPPORTED}"
        )
    if mode == "reflect":
        for i in range(k):
            dim = input.ndim - 1 - i
            a, b = pad[2 * i], pad[2 * i + 1]
            if a >= input.shape[dim] or b >= input.shape[dim]:
                raise RuntimeError(
                    f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                    f"got: padding ({a}, {b}) at dimension {dim} of input {list(input.shape)}"
                )
    if mode == "circular" and any(p > input.shape[input.ndim - 1 - i // 2] for i, p in enumerate(pad)):
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if any(p < 0 for p in pad):
        raise NotImplementedError(f"negative padding is not supported in mode '{mode}'; pad={list(pad)}")


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the trailing dims: ``pad = (last_before, last_after, second_last_before, ...)``.

    ``mode`` is ``'constant'`` (fill with ``value``, default 0; negative
    amounts crop), ``'reflect'``, ``'replicate'`` or ``'circular'``.
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {input.ndim}"
        )
    if mode == "constant":
        return _ConstantPad.apply(input, _pairs(pad, input.ndim), 0.0 if value is None else value)
    if mode not in _NP_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_non_constant(input, pad, mode)
    maps = {
        dim: _index_map(input.shape[dim], a, b, mode)
        for dim, (a, b) in enumerate(_pairs(pad, input.ndim))
        if a or b
    }
    return _IndexPad.apply(input, maps)
