"""``pad``: constant, reflect, replicate and circular padding of the trailing dims.

Constant padding (negative amounts crop) copies the input into a filled
array. The other modes gather along each padded dim through an index map
(negative amounts crop there too), and their backward sums the gradient
back through the same map, one sorted segment sum per dim.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import xp_of
from mininn.tensor import Tensor

__all__ = ["pad"]

_MODES = ("reflect", "replicate", "circular")
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


class _ConstantPad(ArrayFunction):
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


class _IndexPad(ArrayFunction):
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
        for axis, idx in reversed(maps.items()):
            g = _scatter_add(g, idx, axis, shape[axis])
        return g, None


def _scatter_add(g: Any, idx: Any, axis: int, n: int) -> Any:
    """``gx`` of length ``n`` along ``axis`` with ``gx[idx[j]] += g[j]``: segment sums over sorted ``idx``."""
    xp = xp_of(g)
    if xp is not np:  # no reduceat on every array module: a one-hot product instead
        onehot = (idx[:, None] == np.arange(n)[None, :]).astype(g.dtype)
        return xp.moveaxis(xp.moveaxis(g, axis, -1) @ xp.asarray(onehot), -1, axis)
    shape = list(g.shape)
    shape[axis] = n
    gx = np.zeros(shape, dtype=g.dtype)
    if idx.size == 0:
        return gx
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    starts = np.flatnonzero(np.r_[True, sorted_idx[1:] != sorted_idx[:-1]])
    sums = np.add.reduceat(np.take(g, order, axis=axis), starts, axis=axis)
    target = [slice(None)] * g.ndim
    target[axis] = sorted_idx[starts]
    gx[tuple(target)] = sums
    return gx


def _index_map(n: int, before: int, after: int, mode: str) -> Any:
    """Which input position each output position along one dim reads (negative amounts crop)."""
    if mode == "circular":  # crop first, then wrap around what is left
        kept = np.arange(max(-before, 0), n - max(-after, 0))
        return kept[np.arange(-max(before, 0), kept.size + max(after, 0)) % kept.size]
    j = np.arange(-before, n + after)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    j = np.abs(j)  # reflect: amounts are below n, so one fold on each side suffices
    return np.where(j >= n, 2 * (n - 1) - j, j)


def _check_non_constant(input: Tensor, pad: tuple[int, ...], mode: str) -> None:
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n{_SUPPORTED}"
        )
    if mode == "circular":
        _check_circular(input, pad)
    else:
        _check_reflect_replicate(input, pad, mode)


def _check_circular(input: Tensor, pad: tuple[int, ...]) -> None:
    for i in reversed(range(len(pad) // 2)):  # the outermost padded dim first
        n = input.shape[input.ndim - 1 - i]
        a, b = pad[2 * i], pad[2 * i + 1]
        if a > n or b > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + a + b < 0 or (n + min(a, 0) + min(b, 0) <= 0 < n + a + b):
            # torch reads uninitialised memory when the crop leaves nothing to wrap; refuse that
            raise RuntimeError("Negative padding value is resulting in an empty dimension")


def _check_reflect_replicate(input: Tensor, pad: tuple[int, ...], mode: str) -> None:
    k = len(pad) // 2
    shape = list(input.shape)
    inner = shape[1:] if input.ndim == k + 2 else shape
    if any(n == 0 for n in inner):
        raise RuntimeError(
            f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {shape}"
        )
    if mode == "reflect":
        for i in range(k):
            dim = input.ndim - 1 - i
            a, b = pad[2 * i], pad[2 * i + 1]
            if a >= shape[dim] or b >= shape[dim]:
                raise RuntimeError(
                    f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                    f"dimension, but got: padding ({a}, {b}) at dimension {dim} of input {shape}"
                )
    sizes = shape[input.ndim - k:]
    outs = [n + pad[2 * (k - 1 - j)] + pad[2 * (k - 1 - j) + 1] for j, n in enumerate(sizes)]
    if all(o < 1 for o in outs):
        raise RuntimeError(_too_small(sizes, outs, mode))
    if any(o < 0 for o in outs):
        out_shape = shape[: input.ndim - k] + outs
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(outs)}: {out_shape}")


def _too_small(sizes: list[int], outs: list[int], mode: str) -> str:
    """torch's message for an output with no element left (its spacing differs per kernel)."""
    if len(sizes) == 1:
        return f"input (W: {sizes[0]}) is too small. Calculated output W: {outs[0]}"
    if len(sizes) == 2:
        gap = " " if mode == "replicate" else ""
        return (
            f"input (H: {sizes[0]}, W: {sizes[1]}{gap}) is too small. Calculated output H: {outs[0]} "
            f"W: {outs[1]}"
        )
    return (
        f"input (D: {sizes[0]} H: {sizes[1]}, W: {sizes[2]}) is too small. Calculated output D: {outs[0]} "
        f"H: {outs[1]} W: {outs[2]}"
    )


def _as_ints(pad: Any) -> tuple[int, ...]:
    out = []
    for i, p in enumerate(pad):
        if isinstance(p, (bool, float)) or not hasattr(p, "__index__"):
            raise TypeError(
                "pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                f"{type(p).__name__} at pos {i}"
            )
        out.append(int(p))
    return tuple(out)


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the trailing dims: ``pad = (last_before, last_after, second_last_before, ...)``.

    ``mode`` is ``'constant'`` (fill with ``value``, default 0), ``'reflect'``,
    ``'replicate'`` or ``'circular'`` (the last three pad the last 1, 2 or 3
    dims of a batched or unbatched input). Negative amounts crop.
    """
    pad = _as_ints(pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {input.ndim}"
        )
    if mode == "constant":
        return _ConstantPad.apply(input, _pairs(pad, input.ndim), 0.0 if value is None else value)
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_non_constant(input, pad, mode)
    maps = {
        dim: _index_map(input.shape[dim], a, b, mode)
        for dim, (a, b) in enumerate(_pairs(pad, input.ndim))
        if a or b
    }
    return _IndexPad.apply(input, maps)
