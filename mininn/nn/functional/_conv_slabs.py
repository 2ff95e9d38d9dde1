"""Convolution of images whose columns are too big to gather whole (3-D volumes, large 2-D
maps): one image at a time, a slab of rows of the first output axis at a time, every slab
gathered into one reused buffer that stays in cache. The backward gathers the slabs again
rather than keeping them.

A slab's columns are gathered in one of two layouts. Channels-first, ``(K, L_slab)`` with
``K`` ordered ``(C, *kernel)``: its copy reads runs along the output width, and
``(O, K) @ (K, L_slab)`` suits BLAS when there are many output channels. Channels-last,
``(L_slab, K)`` with ``K`` ordered ``(*kernel, C)``: its copy reads runs of ``kw * C``
values, and ``(L_slab, K) @ (K, O)`` is about 1.3x faster when ``O`` is small (32), at the
price of a transposed copy of the input and the output.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from mininn.nn.functional._im2col import Dims, Pads, col2im_add, interior, tap, taps, windows
from mininn.nn.functional._utils import as_strided, xp_of

__all__ = ["conv_in_slabs", "conv_backward_in_slabs"]


def _channels_last(c: int, o: int, kw: int) -> bool:
    """Few output channels and runs of at least 32 input values: the channels-last layout."""
    return o <= 64 and c * kw >= 32


def _slab_rows(k: int, out_sz: Dims, itemsize: int, block_bytes: int) -> int:
    """How many rows of the first output axis one slab of ``block_bytes`` columns holds."""
    return max(1, block_bytes // (k * math.prod(out_sz[1:]) * itemsize))


def _weight_channels_last(w: Any) -> Any:
    """``(O, K)`` with ``K`` ordered ``(*kernel, C)``, the order of channels-last columns."""
    return xp_of(w).moveaxis(w, 1, -1).reshape(w.shape[0], -1)


def _slab_columns(x: Any, kernel: Dims, stride: Dims, pads: Pads, dilation: Dims, out_sz: Dims,
                  channels_last: bool, block_bytes: int) -> Iterator[tuple[int, int, Any]]:
    """``(image, first row, columns)`` per slab: ``(L_slab, K)`` channels-last, else ``(K, L_slab)``."""
    xpm, c, nd = xp_of(x), x.shape[1], len(kernel)
    k = c * math.prod(kernel)
    rows = _slab_rows(k, out_sz, x.itemsize, block_bytes)
    buf = xpm.empty(min(rows, out_sz[0]) * math.prod(out_sz[1:]) * k, dtype=x.dtype)
    padded_sp = tuple(s + a + b for s, (a, b) in zip(x.shape[2:], pads))
    inside = interior(pads, x.shape[2:])
    # one padded image whose borders stay zero: each image only overwrites the interior
    if channels_last:
        padded = xpm.zeros(padded_sp + (c,), dtype=x.dtype)
        *s_sp, s_c = padded.strides
        views = as_strided(padded, out_sz + kernel + (c,), tuple(s * st for s, st in zip(s_sp, stride))
                           + tuple(s * d for s, d in zip(s_sp, dilation)) + (s_c,))  # (*out, *kernel, C)
        rows_at: tuple[slice, ...] = ()
    else:
        padded = xpm.zeros((1, c) + padded_sp, dtype=x.dtype)
        views = windows(padded, kernel, stride, dilation, out_sz)[0]  # (C, *kernel, *out)
        rows_at = (slice(None),) * (1 + nd)
    for i in range(x.shape[0]):
        if channels_last:
            padded[inside[2:]] = xpm.moveaxis(x[i], 0, -1)
        else:
            padded[inside] = x[i : i + 1]
        for r0 in range(0, out_sz[0], rows):
            part = views[rows_at + (slice(r0, r0 + rows),)]
            cols = buf[: part.size].reshape(part.shape)
            xpm.copyto(cols, part)
            yield i, r0, cols.reshape(-1, k) if channels_last else cols.reshape(k, -1)


def conv_in_slabs(x: Any, w: Any, b: Any, stride: Dims, pads: Pads, dilation: Dims, out_sz: Dims, out: Any,
                  block_bytes: int) -> None:
    """Fill ``out (N, O, L)`` with the ``groups=1`` convolution of ``x`` by ``w`` (plus bias ``b`` or
    None), a slab at a time."""
    xpm = xp_of(x)
    o, c, kernel = w.shape[0], w.shape[1], w.shape[2:]
    row = math.prod(out_sz[1:])
    last = _channels_last(c, o, kernel[-1])
    slabs = _slab_columns(x, kernel, stride, pads, dilation, out_sz, last, block_bytes)
    bias = b[:, None] if b is not None else x.dtype.type(0)
    if not last:
        w2 = w.reshape(o, -1)
        for i, r0, cols in slabs:
            part = xpm.matmul(w2, cols, out=out[i, :, r0 * row : r0 * row + cols.shape[1]])
            if b is not None:
                part += bias
        return
    wt = xpm.ascontiguousarray(_weight_channels_last(w).T)  # (K, O)
    res = xpm.empty((_slab_rows(wt.shape[0], out_sz, x.itemsize, block_bytes) * row, o), dtype=x.dtype)
    for i, r0, cols in slabs:
        part = xpm.matmul(cols, wt, out=res[: len(cols)])
        xpm.add(part.T, bias, out=out[i, :, r0 * row : r0 * row + len(cols)])  # the transpose adds the bias


def conv_backward_in_slabs(x: Any, x_shape: Dims, w: Any, g: Any, stride: Dims, pads: Pads, dilation: Dims,
                           need: tuple[bool, bool, bool], block_bytes: int) -> tuple[Any, Any]:
    """Input and weight gradients of ``conv_in_slabs`` (``x``, for the weight's only, may be None)."""
    o, c, kernel = w.shape[0], x_shape[1], w.shape[2:]
    last = _channels_last(c, o, kernel[-1])
    gw = _weight_grad(x, w, g, stride, pads, dilation, last, block_bytes) if need[1] else None
    gx = _input_grad(x_shape, w, g, stride, pads, dilation, last, block_bytes) if need[0] else None
    return gx, gw


def _weight_grad(x: Any, w: Any, g: Any, stride: Dims, pads: Pads, dilation: Dims, last: bool,
                 block_bytes: int) -> Any:
    """The sum over slabs of ``(O, L_slab) @ (L_slab, K)``."""
    xpm = xp_of(g)
    o, c, kernel = w.shape[0], w.shape[1], w.shape[2:]
    out_sz, row = g.shape[2:], math.prod(g.shape[3:])
    g3 = g.reshape(g.shape[0], o, -1)
    acc = xpm.zeros((o, c * math.prod(kernel)), dtype=g.dtype)
    for i, r0, cols in _slab_columns(x, kernel, stride, pads, dilation, out_sz, last, block_bytes):
        length = len(cols) if last else cols.shape[1]
        acc += g3[i, :, r0 * row : r0 * row + length] @ (cols if last else cols.T)
    if not last:
        return acc.reshape(w.shape)
    return xpm.ascontiguousarray(xpm.moveaxis(acc.reshape((o,) + kernel + (c,)), -1, 1))


def _input_grad(x_shape: Dims, w: Any, g: Any, stride: Dims, pads: Pads, dilation: Dims, last: bool,
                block_bytes: int) -> Any:
    """Each slab's column gradients scattered back into its image (col2im), channels-last or not."""
    xpm = xp_of(g)
    n, c, o, kernel = x_shape[0], x_shape[1], w.shape[0], w.shape[2:]
    out_sz, row = g.shape[2:], math.prod(g.shape[3:])
    g3 = g.reshape(n, o, -1)
    padded_sp = tuple(s + a + b for s, (a, b) in zip(x_shape[2:], pads))
    inside = interior(pads, x_shape[2:])
    w_k = _weight_channels_last(w) if last else w.reshape(o, -1).T  # (O, K) or (K, O)
    step = _slab_rows(c * math.prod(kernel), out_sz, g.itemsize, block_bytes)
    gx = xpm.empty(x_shape, dtype=g.dtype)
    for i in range(n):
        gxp = xpm.zeros(padded_sp + (c,) if last else (1, c) + padded_sp, dtype=g.dtype)
        for r0 in range(0, out_sz[0], step):
            gs = g3[i, :, r0 * row : min(r0 + step, out_sz[0]) * row]  # (O, L_slab)
            if last:
                gcols = (gs.T @ w_k).reshape((-1,) + out_sz[1:] + kernel + (c,))  # (*slab, *kernel, C)
                _col2im_add_channels_last(gcols, gxp[r0 * stride[0] :], stride, dilation)
            else:
                gcols = (w_k @ gs).reshape((1, c) + kernel + (-1,) + out_sz[1:])  # (1, C, *kernel, *slab)
                col2im_add(gcols, gxp[:, :, r0 * stride[0] :], stride, dilation)
        gx[i] = xpm.moveaxis(gxp[inside[2:]], -1, 0) if last else gxp[inside][0]
    return gx


def _col2im_add_channels_last(cols: Any, out: Any, stride: Dims, dilation: Dims) -> None:
    """Add ``(*slab, *kernel, C)`` columns into a channels-last ``(*padded, C)`` array."""
    nd = out.ndim - 1
    slab, kernel = cols.shape[:nd], cols.shape[nd : 2 * nd]
    for offsets in taps(kernel):
        out[tap(offsets, slab, stride, dilation)[2:]] += cols[(slice(None),) * nd + offsets]
