"""Convolutions: ``conv1d/2d/3d``, ``conv_transpose1d/2d/3d`` and ``conv_tbc``.

One N-d kernel serves every rank (a 1-D input gets a height of 1). The
forward gathers every receptive field with one strided copy (im2col, laid
out ``(N, C, *kernel, *out)``; the building blocks are in ``_im2col``) and
multiplies it by the weight with one batched GEMM, over the groups too.
Without a weight gradient (inference) the columns are gathered a block of
images at a time into one reused, cache-sized buffer and never kept; a 1x1
kernel at stride 1 gathers nothing; a batch whose columns are small (a small
image at batch 1) is gathered in one copy and multiplied in one GEMM, with no
buffers to set up. Under ``no_grad`` a batched 2-D/3-D call reaches these
kernels without the autograd wrapper, its arguments parsed once per distinct
set. An image whose columns are too big to gather whole (3-D volumes, large
maps) goes a slab of output rows at a time, in training too (``_conv_slabs``).
The backward is two more GEMMs; the input gradient scatters the columns back
with one vectorised add per kernel position (col2im). A transposed convolution
runs the same pieces in the other order.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mininn.autograd.grad_mode import is_grad_enabled as grad_enabled
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._conv_slabs import conv_backward_in_slabs, conv_in_slabs
from mininn.nn.functional._im2col import (
    Dims,
    Pads,
    col2im,
    im2col,
    interior,
    out_size,
    pad_zeros,
    tap,
    taps,
    windows,
)
from mininn.nn.functional._utils import c_name, per_dim, requires, scalar_name, xp_of
from mininn.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "conv_tbc"]

# ---- forward convolution without a weight gradient: columns in blocks ------------------------


def _reduce_dims(g: Any) -> tuple[int, ...]:
    """The batch and spatial axes of an ``(N, C, *spatial)`` gradient (a bias gradient sums them)."""
    return (0,) + tuple(range(2, g.ndim))


# Without a weight gradient the columns need not outlive the forward, so they are
# built a few images at a time into one reused buffer that stays in cache. Large
# feature maps take one batched GEMM per block of images (columns ``(m, K, L)``, the
# output already ``(m, O, L)``); small ones (``L < _BLOCK_COLS``) put the images side by
# side (columns ``(K, m * L)``) so that the one GEMM is not too thin for BLAS. An image
# whose columns alone exceed ``_BLOCK_BYTES`` is done in slabs of its output rows
# (``_conv_slabs``), with or without a weight gradient.
_BLOCK_COLS = 512
_BLOCK_BYTES = 4 << 20
# A batch whose columns all together take at most ``_SMALL_BYTES`` (a small image at
# batch 1, where the per-call work of the blocks above would dominate) is gathered in one
# copy, multiplied in one GEMM and gets its bias in the copy out, with no buffers to set up.
_SMALL_BYTES = 256 << 10


def _in_slabs(k: int, pix: int, itemsize: int) -> bool:
    """Whether one image's ``(K, L)`` columns are too big to build whole (see above)."""
    return pix >= _BLOCK_COLS and k * pix * itemsize > _BLOCK_BYTES


def _pointwise(kernel: Dims, stride: Dims, pads: Pads) -> bool:
    """A 1x1 kernel at stride 1 without padding: the input is its own column matrix."""
    return all(v == 1 for v in kernel + stride) and not any(a or b for a, b in pads)


def _conv_streamed(x: Any, w: Any, b: Any, stride: Dims, pads: Pads, dilation: Dims, out_sz: Dims) -> Any:
    """``(N, O, *out)`` of an ``(N, C, *spatial)`` input with ``groups=1``, plus bias ``b`` (or None)."""
    n, o, k, pix = x.shape[0], w.shape[0], math.prod(w.shape[1:]), math.prod(out_sz)
    pointwise = _pointwise(w.shape[2:], stride, pads)
    slabs = _in_slabs(k, pix, x.itemsize) and not pointwise  # never small with the default sizes
    if not slabs and not pointwise and _small(n * k * pix * x.itemsize):
        return _conv_small(x, w, b, stride, pads, dilation, out_sz)
    out = xp_of(x).empty((n, o, pix), dtype=x.dtype)
    if slabs:
        conv_in_slabs(x, w, b, stride, pads, dilation, out_sz, out, _BLOCK_BYTES)  # adds the bias too
    else:
        _conv_blocks(x, w.reshape(o, -1), w.shape[2:], stride, pads, dilation, out_sz, out)
        if b is not None:
            out += b.reshape(1, o, 1)
    return out.reshape((n, o) + out_sz)


def _small(cols_bytes: int) -> bool:
    """Whether a whole batch's columns are small enough for ``_conv_small``."""
    return cols_bytes <= _SMALL_BYTES


def _pixels_major(o: int, k: int) -> bool:
    """Whether ``_conv_small`` multiplies ``(N * L, K) @ (K, O)`` rather than ``(O, K) @ (K, N * L)``.

    With few output channels and a deep enough K, OpenBLAS's float32 GEMM was measured up to 2.4x
    faster the first way round (at ``O=32, K=144, L=196`` in a process that has run no larger
    GEMM) and at most 1.15x slower otherwise; the ``(N, O, L)`` output then costs one transposing
    copy, which also adds the bias.
    """
    return o <= 32 and k >= 64


def _conv_small(x: Any, w: Any, b: Any, stride: Dims, pads: Pads, dilation: Dims, out_sz: Dims) -> Any:
    """``(N, O, *out)`` from one gather of the whole batch's columns and one GEMM (see ``_SMALL_BYTES``)."""
    xpm = xp_of(x)
    n, o, pix = x.shape[0], w.shape[0], math.prod(out_sz)
    views = windows(pad_zeros(x, pads), w.shape[2:], stride, dilation, out_sz, channels_first=True)
    cols = xpm.ascontiguousarray(views).reshape(-1, n * pix)  # (K, N * L)
    w2 = w.reshape(o, -1)
    if _pixels_major(o, cols.shape[0]):
        by_image = (cols.T @ w2.T).reshape(n, pix, o).swapaxes(1, 2)  # (N * L, O) viewed as (N, O, L)
    else:
        res = w2 @ cols  # (O, N * L)
        if n == 1:  # already (1, O, L)
            if b is not None:
                res += b[:, None]
            return res.reshape((1, o) + out_sz)
        by_image = res.reshape(o, n, pix).swapaxes(0, 1)
    out = xpm.empty((n, o, pix), dtype=x.dtype)
    if b is None:
        xpm.copyto(out, by_image)
    else:  # the bias is added by the copy into batch-major order
        xpm.add(by_image, b[:, None], out=out)
    return out.reshape((n, o) + out_sz)


def _conv_blocks(x: Any, w2: Any, kernel: Dims, stride: Dims, pads: Pads, dilation: Dims, out_sz: Dims,
                 out: Any) -> None:
    """Fill ``out (N, O, L)`` a block of images at a time (see above)."""
    xpm = xp_of(x)
    n, k, pix = x.shape[0], w2.shape[1], out.shape[2]
    if _pointwise(kernel, stride, pads):
        xpm.matmul(w2, x.reshape(n, -1, pix), out=out)
        return
    wide = pix < _BLOCK_COLS
    per = -(-_BLOCK_COLS // pix) if wide else _BLOCK_BYTES // (k * pix * x.itemsize)
    per = max(1, min(n, per))
    padded_shape = x.shape[1:2] + tuple(s + a + b for s, (a, b) in zip(x.shape[2:], pads))
    # the borders of this zero buffer stay zero: each block only overwrites the interior
    padded = xpm.zeros((per,) + padded_shape, dtype=x.dtype) if any(a or b for a, b in pads) else None
    buf = xpm.empty(per * k * pix, dtype=x.dtype)
    for start in range(0, n, per):
        src = x[start : start + per]
        if padded is not None:
            padded[(slice(len(src)),) + interior(pads, x.shape[2:])[1:]] = src
            src = padded[: len(src)]
        views = windows(src, kernel, stride, dilation, out_sz, channels_first=wide)
        cols = buf[: views.size].reshape(views.shape)
        xpm.copyto(cols, views)
        _block_gemm(w2, cols, out[start : start + per], wide)


def _block_gemm(w2: Any, cols: Any, out: Any, wide: bool) -> None:
    """``out (m, O, L) = w2 (O, K) @ cols``, ``cols`` being ``(K, m, L)`` if ``wide`` else ``(m, K, L)``."""
    m, o, pix = out.shape
    if wide:  # (O, m, L) -> (m, O, L), in contiguous runs of L
        out[...] = (w2 @ cols.reshape(-1, m * pix)).reshape(o, m, pix).swapaxes(0, 1)
    else:
        xp_of(out).matmul(w2, cols.reshape(m, -1, pix), out=out)


# ---- the autograd functions ---------------------------------------------------------------------

# Layout: activations stay batch-major. With ``g`` groups, columns are
# ``(N, g, K, L)`` (``K = C/g * prod(kernel)``, ``L = prod(out)``) and the weight is
# ``(g, O/g, K)``: one broadcasting ``matmul`` gives ``(N, g, O/g, L)``, which
# is already the ``(N, O, *out)`` output, with no transpose copy.


class _Conv(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, stride: Dims, pads: Pads, dilation: Dims, groups: int,
                need: tuple[bool, bool, bool]) -> Any:
        n = x.shape[0]
        o, cg, kernel = w.shape[0], w.shape[1], w.shape[2:]
        padded = tuple(s + a + b for s, (a, b) in zip(x.shape[2:], pads))
        out_sz = tuple(out_size(p, 0, k, s, d) for p, k, s, d in zip(padded, kernel, stride, dilation))
        w3 = w.reshape(groups, o // groups, cg * math.prod(kernel))
        cols = None
        slabs = groups == 1 and _in_slabs(w3.shape[2], math.prod(out_sz), x.itemsize)
        if groups == 1 and (slabs or not need[1]):
            out = _conv_streamed(x, w, b, stride, pads, dilation, out_sz)
        else:
            cols = im2col(pad_zeros(x, pads), kernel, stride, dilation, out_sz)
            cols = cols.reshape(n, groups, w3.shape[2], math.prod(out_sz))
            out = (w3 @ cols).reshape((n, o) + out_sz)
            if b is not None:
                out += b.reshape((1, o) + (1,) * len(kernel))
        if any(need):
            kept = x if slabs else cols  # slabs keep the input and gather its columns again
            ctx.save_for_backward(kept if need[1] else None, w if slabs else w3 if need[0] else None)
            ctx.meta = (x.shape, padded, pads, stride, dilation, kernel, groups, need, slabs)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        cols, w3 = ctx.saved_tensors
        x_shape, padded, pads, stride, dilation, kernel, groups, need, slabs = ctx.meta
        gb = g.sum(axis=_reduce_dims(g)) if need[2] else None
        if slabs:  # ``cols`` holds the input, ``w3`` the weight
            gx, gw = conv_backward_in_slabs(cols, x_shape, w3, g, stride, pads, dilation, need, _BLOCK_BYTES)
            return gx, gw, gb, None, None, None, None, None
        n, o, out_sz = g.shape[0], g.shape[1], g.shape[2:]
        g4 = g.reshape(n, groups, o // groups, math.prod(out_sz))
        gw = gx = None
        if need[1]:  # sum over the batch of (O/g, L) @ (L, K)
            gw = (g4 @ cols.swapaxes(-1, -2)).sum(axis=0).reshape((o, -1) + kernel)
        if need[0]:
            gcols = (w3.swapaxes(-1, -2) @ g4).reshape((n, x_shape[1]) + kernel + out_sz)
            gx = col2im(gcols, padded, stride, dilation)[interior(pads, x_shape[2:])]
        return gx, gw, gb, None, None, None, None, None


class _Conv2d(_Conv):
    """A 1-D or 2-D convolution (a 1-D input is an image of height 1)."""


class _Conv3d(_Conv):
    """A 3-D convolution."""


class _DepthwiseConv(ArrayFunction):
    """A depthwise convolution (one input and one output channel per group).

    Its per-group GEMMs would be ``1 x prod(kernel)`` by ``prod(kernel) x L``, far
    too thin for BLAS, so it multiply-adds one shifted view of the input per
    kernel position instead.
    """

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, stride: Dims, pads: Pads, dilation: Dims, groups: int,
                need: tuple[bool, bool, bool]) -> Any:
        xp = pad_zeros(x, pads)
        c, kernel = w.shape[0], w.shape[2:]
        nd = len(kernel)
        out_sz = tuple(out_size(p, 0, k, s, d) for p, k, s, d in zip(xp.shape[2:], kernel, stride, dilation))
        per_tap = w.reshape(c, -1).T.reshape((-1, 1, c) + (1,) * nd)  # (k, 1, C, 1, ...)
        offsets = list(taps(kernel))
        out = xp[tap(offsets[0], out_sz, stride, dilation)] * per_tap[0]
        term = xp_of(out).empty_like(out)
        for k in range(1, len(offsets)):
            xp_of(out).multiply(xp[tap(offsets[k], out_sz, stride, dilation)], per_tap[k], out=term)
            out += term
        if b is not None:
            out += b.reshape((1, c) + (1,) * nd)
        if any(need):
            ctx.save_for_backward(xp if need[1] else None, per_tap)
            ctx.meta = (x.shape, xp.shape, pads, stride, dilation, kernel, need)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        xp, per_tap = ctx.saved_tensors
        x_shape, padded_shape, pads, stride, dilation, kernel, need = ctx.meta
        out_sz = g.shape[2:]
        offsets = list(taps(kernel))
        gx = gw = gb = None
        if need[0]:
            gxp = xp_of(g).zeros(padded_shape, dtype=g.dtype)
            for k, offs in enumerate(offsets):
                gxp[tap(offs, out_sz, stride, dilation)] += g * per_tap[k]
            gx = gxp[interior(pads, x_shape[2:])]
        if need[1]:
            axes = _reduce_dims(g)
            sums = [(g * xp[tap(offs, out_sz, stride, dilation)]).sum(axis=axes) for offs in offsets]
            gw = xp_of(g).stack(sums, axis=1).reshape((g.shape[1], 1) + kernel)
        if need[2]:
            gb = g.sum(axis=_reduce_dims(g))
        return gx, gw, gb, None, None, None, None, None


class _DepthwiseConv2d(_DepthwiseConv):
    """A 1-D or 2-D depthwise convolution."""


class _DepthwiseConv3d(_DepthwiseConv):
    """A 3-D depthwise convolution."""


class _ConvTranspose(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, stride: Dims, padding: Dims, output_padding: Dims,
                dilation: Dims, groups: int, need: tuple[bool, bool, bool]) -> Any:
        n, cin, spatial = x.shape[0], x.shape[1], x.shape[2:]
        cog, kernel = w.shape[1], w.shape[2:]
        full = tuple(
            (size - 1) * s + d * (k - 1) + 1 + op
            for size, s, d, k, op in zip(spatial, stride, dilation, kernel, output_padding)
        )
        x4 = x.reshape(n, groups, cin // groups, math.prod(spatial))
        w3 = w.reshape(groups, cin // groups, cog * math.prod(kernel))
        cols = (w3.swapaxes(-1, -2) @ x4).reshape((n, groups * cog) + kernel + spatial)
        buf = col2im(cols, full, stride, dilation)
        out = buf[(slice(None), slice(None)) + tuple(slice(p, f - p) for p, f in zip(padding, full))]
        if b is not None:
            out = out + b.reshape((1, -1) + (1,) * len(kernel))
        if any(need):
            ctx.save_for_backward(x4 if need[1] else None, w3)
            ctx.meta = (x.shape, full, padding, stride, dilation, kernel, need)
        return xp_of(out).ascontiguousarray(out)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x4, w3 = ctx.saved_tensors
        x_shape, full, padding, stride, dilation, kernel, need = ctx.meta
        groups = w3.shape[0]
        n, cin, spatial = x_shape[0], x_shape[1], x_shape[2:]
        pads = tuple((p, f - p - s) for p, f, s in zip(padding, full, g.shape[2:]))
        gcols = im2col(pad_zeros(g, pads), kernel, stride, dilation, spatial)
        gcols = gcols.reshape(n, groups, -1, math.prod(spatial))
        gx = gw = gb = None
        if need[0]:
            gx = (w3 @ gcols).reshape(x_shape)
        if need[1]:
            gw = (x4 @ gcols.swapaxes(-1, -2)).sum(axis=0).reshape((cin, -1) + kernel)
        if need[2]:
            gb = g.sum(axis=_reduce_dims(g))
        return gx, gw, gb, None, None, None, None, None, None


class _ConvTranspose2d(_ConvTranspose):
    """A 1-D or 2-D transposed convolution."""


class _ConvTranspose3d(_ConvTranspose):
    """A 3-D transposed convolution."""


# ---- argument handling -----------------------------------------------------------------------


def _expand(name: str, value: Any, nd: int) -> Dims:
    values = per_dim(value, nd)
    if len(values) != nd:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {nd} values to match the "
            f"convolution dimensions, but got {name}={list(values)}"
        )
    return values


def _as_batch(input: Tensor, nd: int, name: str) -> tuple[Tensor, bool]:
    """Validate the rank; return the input with a batch dim and whether it lacked one."""
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
            f"of size: {list(input.shape)}"
        )
    unbatched = input.ndim == nd + 1
    return (input.unsqueeze(0) if unbatched else input), unbatched


def _unbatch(out: Tensor, nd: int, unbatched: bool) -> Tensor:
    """Undo the height-1 image of a 1-D convolution and ``_as_batch``'s batch dim."""
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def _check_dtypes(input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(
            f"Input type ({c_name(input)}) and bias type ({c_name(bias)}) should be the same"
        )
    if weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(input)} but found {scalar_name(weight)}")


def _check_params(stride: Dims, padding: Dims, dilation: Dims) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")


def _check_weight(input: Tensor, weight: Tensor, bias: Tensor | None, groups: int, transposed: bool) -> None:
    w_in = weight.shape[0] if transposed else weight.shape[1] * groups
    if input.shape[1] != w_in:
        prefix = "Given transposed=1" if transposed else f"Given groups={groups}"
        raise RuntimeError(
            f"{prefix}, weight of size {list(weight.shape)}, expected input{list(input.shape)} to have "
            f"{w_in} channels, but got {input.shape[1]} channels instead"
        )
    out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_channels):
        raise RuntimeError(
            f"Given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
            f"{out_channels} elements, but got bias of size {list(bias.shape)} instead"
        )


def _same_pads(kernel: Dims, dilation: Dims) -> list[tuple[int, int]]:
    """torch's ``'same'``: total ``d * (k - 1)``, the odd extra element on the far side."""
    out = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        out.append((total // 2, total - total // 2))
    return out


def _padding_pairs(padding: Any, stride: Dims, kernel: Dims, dilation: Dims) -> list[tuple[int, int]]:
    """``(before, after)`` per spatial dim from an int, a tuple, ``'valid'`` or ``'same'``."""
    nd = len(kernel)
    if not isinstance(padding, str):
        padding_t = _expand("padding", padding, nd)
        _check_params(stride, padding_t, dilation)
        return [(p, p) for p in padding_t]
    if padding == "valid":
        pairs = [(0, 0)] * nd
    elif padding == "same":
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pairs = _same_pads(kernel, dilation)
    else:
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    _check_params(stride, (0,), dilation)
    return pairs


# ---- inference: the common call without the argument parsing and the autograd wrapper ----------

# (stride, padding, dilation, kernel, their types) -> (stride, pads, dilation), parsed and checked
_PARSED: dict[tuple[Any, ...], tuple[Dims, Pads, Dims]] = {}


def _parsed(stride: Any, padding: Any, dilation: Any, kernel: Dims) -> tuple[Dims, Pads, Dims] | None:
    """The checked ``(stride, pads, dilation)`` of a batched 2-D or 3-D convolution, cached by its
    arguments (None for unhashable ones, which ``_conv``'s own parsing handles)."""
    key = (stride, padding, dilation, kernel, type(stride), type(padding), type(dilation))
    try:
        return _PARSED[key]
    except KeyError:
        pass
    except TypeError:  # a list argument
        return None
    nd = len(kernel)
    stride_t, dilation_t = _expand("stride", stride, nd), _expand("dilation", dilation, nd)
    parsed = (stride_t, tuple(_padding_pairs(padding, stride_t, kernel, dilation_t)), dilation_t)
    if len(_PARSED) >= 256:
        _PARSED.clear()
    _PARSED[key] = parsed
    return parsed


def _conv_inference(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
                    dilation: Any, groups: int, nd: int) -> Tensor | None:
    """The output of a batched 2-D or 3-D convolution with grad mode off, all arrays in NumPy, or
    None when anything is out of the ordinary (``_conv`` then parses, checks and raises)."""
    x, w = input._data, weight._data
    b = None if bias is None else bias._data
    if (type(x) is not np.ndarray or type(w) is not np.ndarray or x.ndim != nd + 2 or w.ndim != nd + 2
            or x.dtype != w.dtype or (b is not None and (type(b) is not np.ndarray or b.dtype != x.dtype
                                                        or b.shape != w.shape[:1]))
            or x.shape[1] != w.shape[1] * groups or w.shape[0] % groups):
        return None
    kernel = w.shape[2:]
    parsed = _parsed(stride, padding, dilation, kernel)
    if parsed is None:
        return None
    stride_t, pads, dilation_t = parsed
    out_sz = tuple(out_size(s + a + c, 0, k, st, d)
                   for s, (a, c), k, st, d in zip(x.shape[2:], pads, kernel, stride_t, dilation_t))
    if min(out_sz) < 1 or 0 in x.shape:
        return None
    if groups == 1:
        return Tensor(_conv_streamed(x, w, b, stride_t, pads, dilation_t, out_sz))
    kernel_fn = _DepthwiseConv if w.shape[:2] == (groups, 1) else _Conv
    return Tensor(kernel_fn.forward(Context(), x, w, b, stride_t, pads, dilation_t, groups, (False,) * 3))


def _conv(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any, dilation: Any,
          groups: int, nd: int) -> Tensor:
    if nd > 1 and not grad_enabled():
        out = _conv_inference(input, weight, bias, stride, padding, dilation, groups, nd)
        if out is not None:
            return out
    input, unbatched = _as_batch(input, nd, f"conv{nd}d")
    stride_t = _expand("stride", stride, nd)
    dilation_t = _expand("dilation", dilation, nd)
    kernel = tuple(weight.shape[2:])
    pairs = _padding_pairs(padding, stride_t, kernel, dilation_t)
    _check_dtypes(input, weight, bias)
    _check_weight(input, weight, bias, groups, transposed=False)
    spatial = tuple(input.shape[2:])
    padded = tuple(s + a + b for s, (a, b) in zip(spatial, pairs))
    dilated = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation_t))
    if any(p < k for p, k in zip(padded, dilated)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
            f"({' x '.join(map(str, dilated))}). Kernel size can't be greater than actual input size"
        )
    if nd == 1:  # a height-1 image
        input, weight = input.unsqueeze(2), weight.unsqueeze(2)
        stride_t, dilation_t, pairs = (1,) + stride_t, (1,) + dilation_t, [(0, 0)] + pairs
    need = (requires(input), requires(weight), requires(bias))
    depthwise = groups > 1 and weight.shape[:2] == (groups, 1)
    if nd == 3:
        kernel_fn: type[ArrayFunction] = _DepthwiseConv3d if depthwise else _Conv3d
    else:
        kernel_fn = _DepthwiseConv2d if depthwise else _Conv2d
    out = kernel_fn.apply(input, weight, bias, stride_t, tuple(pairs), dilation_t, groups, need)
    return _unbatch(out, nd, unbatched)


def _conv_transpose(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
                    output_padding: Any, groups: int, dilation: Any, nd: int) -> Tensor:
    input, unbatched = _as_batch(input, nd, f"conv_transpose{nd}d")
    stride_t = _expand("stride", stride, nd)
    padding_t = _expand("padding", padding, nd)
    dilation_t = _expand("dilation", dilation, nd)
    out_pad_t = _expand("output_padding", output_padding, nd)
    _check_params(stride_t, padding_t, dilation_t)
    _check_dtypes(input, weight, bias)
    _check_weight(input, weight, bias, groups, transposed=True)
    if nd == 1:  # a height-1 image: stride and dilation 1, no padding along the height
        input, weight = input.unsqueeze(2), weight.unsqueeze(2)
        stride_t, dilation_t = (1,) + stride_t, (1,) + dilation_t
        padding_t, out_pad_t = (0,) + padding_t, (0,) + out_pad_t
    if any(op >= s and op >= d for op, s, d in zip(out_pad_t, stride_t, dilation_t)):
        raise RuntimeError(_output_padding_message(out_pad_t, stride_t, dilation_t))
    need = (requires(input), requires(weight), requires(bias))
    kernel_fn = _ConvTranspose3d if nd == 3 else _ConvTranspose2d
    out = kernel_fn.apply(input, weight, bias, stride_t, padding_t, out_pad_t, dilation_t, groups, need)
    return _unbatch(out, nd, unbatched)


def _output_padding_message(op: Dims, stride: Dims, dilation: Dims) -> str:
    dims = ("depth", "height", "width")[-len(op) :]
    parts = [f"{what}_{dim}: {v}" for what, values in (("output_padding", op), ("stride", stride),
                                                         ("dilation", dilation))
             for dim, v in zip(dims, values)]
    return "output padding must be smaller than either stride or dilation, but got " + " ".join(parts)


# ---- public API ------------------------------------------------------------------------------


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D cross-correlation of ``(N, C_in, L)`` (or ``(C_in, L)``) with ``(C_out, C_in/groups, k)``.

    ``padding`` is an int, a 1-tuple, ``'valid'`` or ``'same'`` (stride 1 only).
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D cross-correlation of ``(N, C_in, H, W)`` (or ``(C_in, H, W)``) with ``(C_out, C_in/g, kh, kw)``.

    ``padding`` is an int, a pair, ``'valid'`` or ``'same'`` (stride 1 only).
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D cross-correlation of ``(N, C_in, D, H, W)`` (or unbatched) with ``(C_out, C_in/g, kd, kh, kw)``.

    ``padding`` is an int, a triple, ``'valid'`` or ``'same'`` (stride 1 only).
    """
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-D transposed convolution; ``weight`` is ``(C_in, C_out/groups, k)``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution (``conv2d``'s gradient); ``weight`` is ``(C_in, C_out/groups, kh, kw)``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """3-D transposed convolution (``conv3d``'s gradient); ``weight`` is ``(C_in, C_out/g, kd, kh, kw)``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution in time-batch-channel layout: ``(T, B, C_in)`` with a ``(k, C_in, C_out)`` weight.

    The output is ``(T + 2 * pad - k + 1, B, C_out)``.
    """
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)  # (B, C_out, T')
    return out.permute(2, 0, 1)
