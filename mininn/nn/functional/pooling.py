"""Pooling: ``max_pool1d/2d/3d`` (and ``_with_indices``), ``avg_pool1d/2d/3d``, ``lp_pool1d/2d/3d``.

Windows are visited with one vectorised step per kernel position (no loop
over pixels): the max keeps a running maximum and the winning kernel
position, which the backward uses to route each gradient to its source.
Without autograd the max is separable (one axis after the other) and never
pads. The average sums shifted views and divides by a separable divisor
table. A 1-D pool is a 2-D one over an image of height 1. Power-average
(LP) pooling is an average pool of ``x ** p``, composed from tensor ops.

The pools whose windows vary (adaptive and fractional max pooling) and max
unpooling share the flat-index helpers at the end: ``window_argmax`` finds
each window's winner, ``ValuesAt`` reads values at flat indices and routes
their gradients back.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._im2col import tap, taps
from mininn.nn.functional._utils import needs_grad, xp_of
from mininn.nn.functional.activation import relu
from mininn.tensor import Tensor

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
]

Dims = tuple[int, ...]  # one int per spatial dim
_AXES = {2: ("H", "W"), 3: ("T", "H", "W")}
_COUNT = {1: "one", 2: "two", 3: "three"}


# ---- geometry -------------------------------------------------------------------------------


def _out_len(size: int, k: int, s: int, pad: int, d: int, ceil_mode: bool) -> int:
    """torch's ``pooling_output_shape``, its checks included."""
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if pad < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {pad}")
    if pad > ((k - 1) * d + 1) // 2:
        raise RuntimeError(
            f"pad should be at most half of effective kernel size, but got pad={pad}, kernel_size={k} "
            f"and dilation={d}"
        )
    span = size + 2 * pad - d * (k - 1) - 1 + ((s - 1) if ceil_mode else 0)
    out = span // s + 1
    if ceil_mode and (out - 1) * s >= size + pad:
        out -= 1
    return out


def _named(prefix: str, values: Dims, axes: tuple[str, ...]) -> str:
    return " ".join(f"{prefix}{a}: {v}" for a, v in zip(axes, values))


# (input's channels and spatial size, kernel, stride, padding, dilation, ceil_mode, check_input_size)
# -> the output's spatial size, for geometries that passed ``_checked_geometry``'s checks
_GEOMETRY: dict[tuple[Any, ...], Dims] = {}


def _geometry(x: Any, kernel: Dims, stride: Dims, padding: Dims, dilation: Dims, ceil_mode: bool,
              check_input_size: bool = False) -> Dims:
    """The output's spatial size, with torch's 2-D / 3-D pooling shape checks (cached once passed)."""
    key = (x.shape[-len(kernel) - 1 :], kernel, stride, padding, dilation, bool(ceil_mode), check_input_size)
    try:
        out = _GEOMETRY.get(key)
    except TypeError:  # an unhashable argument: checked every time
        return _checked_geometry(x, kernel, stride, padding, dilation, ceil_mode, check_input_size)
    if out is None:
        out = _checked_geometry(x, kernel, stride, padding, dilation, ceil_mode, check_input_size)
        if len(_GEOMETRY) >= 1024:
            _GEOMETRY.clear()
        _GEOMETRY[key] = out
    return out


def _checked_geometry(x: Any, kernel: Dims, stride: Dims, padding: Dims, dilation: Dims, ceil_mode: bool,
                      check_input_size: bool) -> Dims:
    """``_geometry`` without the cache."""
    nd = len(kernel)
    axes = _AXES[nd]
    in_sz = tuple(x.shape[-nd:])
    out = tuple(_out_len(*args, ceil_mode) for args in zip(in_sz, kernel, stride, padding, dilation))
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got {_named('k', kernel, axes)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got {_named('d', stride, axes)}")
    if any(d <= 0 for d in dilation):
        named = _named("dilation", dilation, axes)
        raise RuntimeError(f"dilation should be greater than zero, but got {named}")
    if any(k // 2 < p for k, p in zip(kernel, padding)):
        if nd == 2:
            raise RuntimeError(
                "pad should be smaller than or equal to half of kernel size, but got "
                f"padW = {padding[1]}, padH = {padding[0]}, kW = {kernel[1]}, kH = {kernel[0]}"
            )
        order = (0, 2, 1)  # torch prints T, W, H here
        raise RuntimeError(
            "pad should be smaller than or equal to half of kernel size, but got "
            + " ".join(f"k{axes[i]}: {kernel[i]}" for i in order) + " "
            + " ".join(f"pad{axes[i]}: {padding[i]}" for i in order)
        )
    if check_input_size and any(s < k for s, k in zip(in_sz, kernel)):
        raise RuntimeError(
            f"input image ({' '.join(f'{a}: {s}' for a, s in zip(axes, in_sz))}) smaller than kernel size "
            f"({_named('k', kernel, axes)})"
        )
    if any(o < 1 for o in out):
        c = x.shape[-nd - 1]
        raise RuntimeError(
            f"Given input size: ({'x'.join(map(str, (c,) + in_sz))}). "
            f"Calculated output size: ({'x'.join(map(str, (c,) + out))}). Output size is too small"
        )
    return out


def _padded(x: Any, padding: Dims, out_sz: Dims, kernel: Dims, stride: Dims, dilation: Dims,
            fill: Any) -> Any:
    """``x`` padded by ``padding`` plus whatever the last (ceil-mode) windows reach past the edge."""
    in_sz = x.shape[2:]
    need = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(out_sz, stride, dilation, kernel)]
    full = tuple(max(s + 2 * p, n) for s, p, n in zip(in_sz, padding, need))
    if full == in_sz:
        return x
    out = xp_of(x).full(x.shape[:2] + full, fill, dtype=x.dtype)
    out[_inside(padding, in_sz)] = x
    return out


def _inside(padding: Dims, in_sz: Dims) -> tuple[slice, ...]:
    """The index of the input inside its padded copy."""
    return (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, in_sz))


def _fill_value(dtype: Any) -> Any:
    if np.issubdtype(dtype, np.floating):
        return -np.inf
    return np.iinfo(dtype).min


# ---- max --------------------------------------------------------------------------------------


class _MaxPool(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, kernel: Dims, stride: Dims, padding: Dims, dilation: Dims,
                out_sz: Dims, winners: _Winners) -> Any:
        xp = xp_of(x)
        padded = _padded(x, padding, out_sz, kernel, stride, dilation, _fill_value(x.dtype))
        offsets = list(taps(kernel))
        best = padded[tap(offsets[0], out_sz, stride, dilation)].copy()
        arg = xp.zeros(best.shape, dtype=np.int32)
        for k in range(1, len(offsets)):
            v = padded[tap(offsets[k], out_sz, stride, dilation)]
            take = (v > best) | (v != v)  # torch: a NaN wins
            xp.copyto(best, v, where=take)
            xp.copyto(arg, k, where=take)
        ctx.save_for_backward(arg)
        ctx.meta = (x.shape, padded.shape, kernel, stride, padding, dilation, out_sz)
        winners.arg = arg
        return best

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (arg,) = ctx.saved_tensors
        x_shape, padded_shape, kernel, stride, padding, dilation, out_sz = ctx.meta
        gxp = xp_of(g).zeros(padded_shape, dtype=g.dtype)
        zero = g.dtype.type(0)
        for k, offsets in enumerate(taps(kernel)):
            gxp[tap(offsets, out_sz, stride, dilation)] += np.where(arg == k, g, zero)
        return gxp[_inside(padding, x_shape[2:])], None, None, None, None, None, None


def _max_values(x: Any, kernel: Dims, stride: Dims, padding: Dims, dilation: Dims, out_sz: Dims) -> Any:
    """Window maxima only (NaN propagates, as in torch), separably: one spatial axis after the other.

    Each axis is a running ``maximum`` over its taps, every tap clipped to the
    outputs whose source lies inside the input, so the padding (which never wins)
    is never built. About 3x faster than ``prod(kernel)`` passes over a padded
    copy; a ``max`` over a strided window view is slower still (its inner loop
    is one short window).
    """
    out = x
    for axis, geometry in enumerate(zip(out_sz, kernel, stride, padding, dilation)):
        out = _max_along(out, 2 + axis, *geometry)
    return out.copy() if out is x else out


def _max_along(x: Any, axis: int, out_len: int, k: int, s: int, pad: int, d: int) -> Any:
    """Running maximum over the ``k`` taps of windows along ``axis`` (``x`` itself if trivial)."""
    if (k, s, pad) == (1, 1, 0):
        return x
    ranges = _tap_ranges(x.shape[axis], out_len, k, s, pad, d)
    full = next((t for t in ranges if t[:2] == (0, out_len)), None)  # a tap inside for every window
    if full is not None:
        out = x[_along(axis, full[2], s, out_len)].copy()
        ranges.remove(full)
    else:
        shape = x.shape[:axis] + (out_len,) + x.shape[axis + 1 :]
        out = xp_of(x).full(shape, _fill_value(x.dtype), dtype=x.dtype)
    for lo, hi, src in ranges:
        part = out[_along(axis, lo, 1, hi - lo)]
        xp_of(x).maximum(part, x[_along(axis, src, s, hi - lo)], out=part)
    return out


def _tap_ranges(size: int, out_len: int, k: int, s: int, pad: int, d: int) -> list[tuple[int, int, int]]:
    """``(first, end, source)`` per tap: outputs ``first:end`` read ``source``, ``source + s``, ..."""
    ranges = []
    for i in range(k):
        offset = i * d - pad  # the input index tap ``i`` reads for output 0
        first = -(offset // s) if offset < 0 else 0
        end = min(out_len, (size - 1 - offset) // s + 1)
        if end > first:
            ranges.append((first, end, first * s + offset))
    return ranges


def _along(axis: int, start: int, step: int, count: int) -> tuple[slice, ...]:
    """An index taking ``count`` elements from ``start`` every ``step`` along ``axis``."""
    return (slice(None),) * axis + (slice(start, start + step * (count - 1) + 1, step),)


class _Winners:
    """Where ``_MaxPool.forward`` leaves each window's winning kernel position."""

    arg: Any = None


def _flat_indices(arg: Any, in_sz: Dims, kernel: Dims, stride: Dims, padding: Dims, dilation: Dims) -> Any:
    """torch's ``return_indices``: the winner's position in the flattened input plane (or volume)."""
    xp = xp_of(arg)
    nd = len(kernel)
    winner = xp.unravel_index(arg, kernel)
    out_sz = arg.shape[-nd:]
    flat = 0
    for axis in range(nd):
        shape = [1] * nd
        shape[axis] = out_sz[axis]
        start = (xp.arange(out_sz[axis]) * stride[axis] - padding[axis]).reshape(shape)
        flat = flat * in_sz[axis] + start + winner[axis] * dilation[axis]
    return flat.astype(np.int64)


def _tiled_max(x: Any, kernel: Dims, out_sz: Dims) -> Any | None:
    """Window maxima when the windows tile the input (stride = kernel, no padding or dilation, every
    window inside): the elementwise ``maximum`` of the ``k`` strided views along each axis in turn,
    NaN propagating as in torch. None when the windows do not tile or the input is not in NumPy."""
    if type(x) is not np.ndarray:
        return None
    for o, k, size in zip(out_sz, kernel, x.shape[2:]):
        if o * k > size:  # a ceil-mode window past the edge
            return None
    out = x
    lead: tuple[slice, ...] = (slice(None), slice(None))
    for k, o in zip(kernel, out_sz):
        if k > 1:
            src, end = out, k * o
            out = np.maximum(src[lead + (slice(0, end, k),)], src[lead + (slice(1, end, k),)])
            for i in range(2, k):
                np.maximum(out, src[lead + (slice(i, end, k),)], out=out)
        lead += (slice(None),)
    return out.copy() if out is x else out


def _max_pool(input: Tensor, kernel: Dims, stride: Dims, padding: Dims, dilation: Dims, ceil_mode: bool,
              return_indices: bool) -> Any:
    nd = len(kernel)
    unbatched = input.ndim == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    out_sz = _geometry(x._data, kernel, stride, padding, dilation, ceil_mode)
    if (not return_indices and stride == kernel and not any(padding) and all(d == 1 for d in dilation)
            and not needs_grad(x)):
        tiled = _tiled_max(x._data, kernel, out_sz)
        if tiled is not None:
            return Tensor(tiled[0] if unbatched else tiled)
    if not return_indices and not needs_grad(x):  # inference: a running maximum, no winners
        out = Tensor(_max_values(x._data, kernel, stride, padding, dilation, out_sz))
        return out.squeeze(0) if unbatched else out
    winners = _Winners()
    out = _MaxPool.apply(x, kernel, stride, padding, dilation, out_sz, winners)
    if unbatched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    idx = _flat_indices(winners.arg, tuple(x.shape[2:]), kernel, stride, padding, dilation)
    return out, Tensor(idx[0] if unbatched else idx)


def _tuple_arg(fn: str, name: str, value: Any, nd: int, default: Any = None) -> Dims:
    """An int or an ``nd``-tuple (a 1-tuple repeats), with torch's message for other lengths."""
    if value is None or (isinstance(value, (tuple, list)) and len(value) == 0):
        value = default
    if isinstance(value, int):
        return (value,) * nd
    if len(value) == 1:
        return (int(value[0]),) * nd
    if len(value) != nd:
        count = _COUNT[nd]
        avg3d = fn == "avg_pool3d"
        if name == "stride":
            verb = "be" if avg3d else "either be"
            raise RuntimeError(f"{fn}: stride must {verb} omitted, a single int, or a tuple of {count} ints")
        verb = "be" if avg3d else "be either" if name == "dilation" else "either be"
        raise RuntimeError(f"{fn}: {name} must {verb} a single int, or a tuple of {count} ints")
    return tuple(int(v) for v in value)


def _check_input(input: Tensor, nd: int) -> None:
    if input.ndim not in (nd + 1, nd + 2) or input.numel() == 0:
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")


def _max_pool_nd(fn: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                 ceil_mode: bool, return_indices: bool) -> Any:
    kernel = _tuple_arg(fn, "kernel_size", kernel_size, nd)
    stride_t = _tuple_arg(fn, "stride", stride, nd, kernel)
    padding_t = _tuple_arg(fn, "padding", padding, nd)
    dilation_t = _tuple_arg(fn, "dilation", dilation, nd)
    _check_input(input, nd)
    return _max_pool(input, kernel, stride_t, padding_t, dilation_t, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over ``kernel_size`` windows of ``(N, C, H, W)``; ``stride`` defaults to ``kernel_size``.

    Padding counts as ``-inf``; ``return_indices=True`` also returns each winner's flat ``H * W``
    index (for ``max_unpool2d``).
    """
    return _max_pool_nd("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                        return_indices)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over ``kernel_size`` windows of ``(N, C, D, H, W)``; ``stride`` defaults to ``kernel_size``.

    Padding counts as ``-inf``; ``return_indices=True`` also returns each winner's flat ``D * H * W``
    index (for ``max_unpool3d``).
    """
    return _max_pool_nd("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode,
                        return_indices)


def _single_arg(fn: str, name: str, value: Any, default: Any = None) -> int:
    if value is None or (isinstance(value, (tuple, list)) and len(value) == 0):
        value = default
    if isinstance(value, int):
        return value
    if len(value) != 1:
        raise RuntimeError(
            f"{fn}() {name} must be an int, list of ints or tuple of ints of size 1 but got size {len(value)}"
        )
    return int(value[0])


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over windows of ``(N, C, L)`` (or ``(C, L)``); ``stride`` defaults to ``kernel_size``."""
    k = _single_arg("max_pool1d", "kernel_size", kernel_size)
    s = _single_arg("max_pool1d", "stride", stride, k)
    p = _single_arg("max_pool1d", "padding", padding)
    d = _single_arg("max_pool1d", "dilation", dilation)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
            f"input, but got:{list(input.shape)}"
        )
    for name, value in (("kernel_size", k), ("stride", s), ("dilation", d)):
        if value <= 0:
            raise RuntimeError(f"max_pool1d() {name} must be greater than zero, but got {value}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(
            "max_pool1d() padding should be at most half of kernel size, but got "
            f"padding={p} and kernel_size={k}"
        )
    out_len = _out_len(input.shape[-1], k, s, p, d, ceil_mode)
    if out_len < 1:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out_len}")
    x = input.unsqueeze(-2)
    res = _max_pool(x, (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        return res[0].squeeze(-2), res[1].squeeze(-2)
    return res.squeeze(-2)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``max_pool1d`` that always returns ``(output, indices)``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``max_pool2d`` that always returns ``(output, indices)``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                            dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    """``max_pool3d`` that always returns ``(output, indices)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


# ---- average ------------------------------------------------------------------------------------


def _divisor_axis(xp: Any, size: int, out: int, k: int, s: int, pad: int, include_pad: bool) -> Any:
    start = xp.arange(out) * s - pad
    end = xp.minimum(start + k, size + pad)
    if include_pad:
        return end - start
    return xp.minimum(end, size) - xp.maximum(start, 0)


def _divisor(x: Any, kernel: Dims, stride: Dims, padding: Dims, out_sz: Dims, include_pad: bool) -> Any:
    """The window sizes torch divides by, as an outer product of per-axis sizes."""
    xp, nd = xp_of(x), len(kernel)
    div = 1
    for axis in range(nd):
        sizes = _divisor_axis(xp, x.shape[2 + axis], out_sz[axis], kernel[axis], stride[axis], padding[axis],
                              include_pad)
        div = div * sizes.reshape([-1 if a == axis else 1 for a in range(nd)])
    return div.astype(x.dtype if x.dtype.kind == "f" else np.float64)


class _AvgPool(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, kernel: Dims, stride: Dims, padding: Dims, out_sz: Dims,
                include_pad: bool, divisor_override: int | None) -> Any:
        ones = (1,) * len(kernel)
        padded = _padded(x, padding, out_sz, kernel, stride, ones, 0)
        offsets = list(taps(kernel))
        total = padded[tap(offsets[0], out_sz, stride, ones)].copy()
        for offs in offsets[1:]:
            total += padded[tap(offs, out_sz, stride, ones)]
        div = divisor_override or _divisor(x, kernel, stride, padding, out_sz, include_pad)
        ctx.meta = (x.shape, padded.shape, kernel, stride, padding, out_sz, div)
        out = total / div
        return out if x.dtype.kind == "f" else out.astype(x.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x_shape, padded_shape, kernel, stride, padding, out_sz, div = ctx.meta
        ones = (1,) * len(kernel)
        gq = g / div
        gxp = xp_of(g).zeros(padded_shape, dtype=g.dtype)
        for offs in taps(kernel):
            gxp[tap(offs, out_sz, stride, ones)] += gq
        return gxp[_inside(padding, x_shape[2:])], None, None, None, None, None, None


def _avg_pool(input: Tensor, kernel: Dims, stride: Dims, padding: Dims, ceil_mode: bool,
              count_include_pad: bool, divisor_override: int | None,
              check_input_size: bool = False) -> Tensor:
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    unbatched = input.ndim == len(kernel) + 1
    x = input.unsqueeze(0) if unbatched else input
    ones = (1,) * len(kernel)
    out_sz = _geometry(x._data, kernel, stride, padding, ones, ceil_mode, check_input_size)
    out = _AvgPool.apply(x, kernel, stride, padding, out_sz, count_include_pad, divisor_override)
    return out.squeeze(0) if unbatched else out


def _avg_pool_nd(fn: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
                 ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> Tensor:
    kernel = _tuple_arg(fn, "kernel_size", kernel_size, nd)
    stride_t = _tuple_arg(fn, "stride", stride, nd, kernel)
    padding_t = _tuple_arg(fn, "padding", padding, nd)
    _check_input(input, nd)
    return _avg_pool(input, kernel, stride_t, padding_t, ceil_mode, count_include_pad, divisor_override,
                     check_input_size=nd == 3)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over ``kernel_size`` windows of ``(N, C, H, W)``; ``stride`` defaults to ``kernel_size``.

    Zero padding counts in the divisor when ``count_include_pad``; ``divisor_override`` replaces it.
    """
    return _avg_pool_nd("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override)


def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over ``kernel_size`` windows of ``(N, C, D, H, W)``; ``stride`` defaults to ``kernel_size``.

    Zero padding counts in the divisor when ``count_include_pad``; ``divisor_override`` replaces it.
    """
    return _avg_pool_nd("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override)


def _one_int(name: str, value: Any) -> int:
    if isinstance(value, int):
        return value
    if len(value) != 1:
        raise RuntimeError(f"avg_pool1d() argument '{name}' should contain one int (got {len(value)})")
    return int(value[0])


def _check_1d_input(input: Tensor, fn: str) -> None:
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional tensor for argument #1 'self' "
            f"(while checking arguments for {fn})"
        )


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """Mean over windows of ``(N, C, L)`` (or ``(C, L)``)."""
    k = _one_int("kernel_size", kernel_size)
    omitted = stride is None or (isinstance(stride, (tuple, list)) and not stride)
    s = k if omitted else _one_int("stride", stride)
    p = _one_int("padding", padding)
    _check_1d_input(input, "avg_pool1d")
    x = input.unsqueeze(-2)
    return _avg_pool(x, (1, k), (1, s), (0, p), ceil_mode, count_include_pad, None).squeeze(-2)


# ---- power average (LP) -------------------------------------------------------------------------


def _lp_from_mean(mean: Tensor, norm_type: float, window: int) -> Tensor:
    """``(window * mean) ** (1/p)``, with torch's ``sign * relu(abs)`` guard (so gradients match too)."""
    return (mean.sign() * relu(mean.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x ** p) ** (1/p)`` over ``(N, C, L)``; ``p = norm_type``."""
    stride = kernel_size if stride is None else stride
    mean = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_from_mean(mean, norm_type, _one_int("kernel_size", kernel_size))


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x ** p) ** (1/p)`` over ``(N, C, H, W)``; ``p = norm_type``."""
    kernel = _tuple_arg("avg_pool2d", "kernel_size", kernel_size, 2)
    mean = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_from_mean(mean, norm_type, kernel[0] * kernel[1])


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """``(sum over each window of x ** p) ** (1/p)`` over ``(N, C, D, H, W)``; ``p = norm_type``."""
    kernel = _tuple_arg("avg_pool3d", "kernel_size", kernel_size, 3)
    mean = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_from_mean(mean, norm_type, kernel[0] * kernel[1] * kernel[2])


# ---- flat indices (adaptive and fractional max pooling, max unpooling) ---------------------------


def scatter_flat(values: Any, indices: Any, size: int) -> Any:
    """``(N, C, size)``: each plane's ``values`` summed into the flat positions ``indices`` (same shape)."""
    xp = xp_of(values)
    n, c = values.shape[:2]
    planes = xp.arange(n * c).reshape(n, c, *([1] * (values.ndim - 2))) * size
    flat = (planes + indices).ravel()
    summed = xp.bincount(flat, weights=values.ravel(), minlength=n * c * size)
    return summed.astype(values.dtype).reshape(n, c, size)


def window_argmax(x: Any, positions: list[Any]) -> Any:
    """``(N, C, *out)`` flat input index of the first maximum (a NaN counts as one) of each window.

    ``positions[axis]`` is ``(N, C, out, taps)`` (or ``(1, 1, out, taps)`` for windows shared by
    every plane): the input indices along that axis that each window of that axis reads.
    """
    xp, nd = xp_of(x), len(positions)
    n, c = x.shape[:2]
    out_sz = tuple(p.shape[2] for p in positions)
    if 0 in out_sz:
        return xp.zeros((n, c) + out_sz, dtype=np.int64)
    per_plane = any(p.shape[:2] != (1, 1) for p in positions)
    index, flat = [], 0
    for axis, pos in enumerate(positions):
        shape = [1] * (2 * nd)
        shape[axis], shape[nd + axis] = pos.shape[-2:]
        idx = pos.reshape((tuple(pos.shape[:2]) if per_plane else ()) + tuple(shape))
        index.append(idx)
        flat = flat * x.shape[2 + axis] + idx
    if per_plane:
        ones = (1,) * (2 * nd)
        lead = (xp.arange(n).reshape((n, 1) + ones), xp.arange(c).reshape((1, c) + ones))
    else:
        lead = (slice(None), slice(None))
    windows = x[lead + tuple(index)]  # (N, C, *out, *taps)
    grid = windows.shape[: 2 + nd] + (-1,)
    arg = windows.reshape(grid).argmax(axis=-1)[..., None]
    flat = xp.broadcast_to(flat, windows.shape if per_plane else windows.shape[2:])
    flat = flat.reshape(grid if per_plane else (1, 1) + grid[2:])
    return xp.take_along_axis(flat, arg, axis=-1)[..., 0].astype(np.int64)


def gather_flat(array: Any, indices: Any) -> Any:
    """``array[n, c].ravel()[indices[n, c]]`` for every plane, shaped like ``indices``."""
    n, c = array.shape[:2]
    planes = array.reshape(n, c, -1)
    flat = indices.reshape(n, c, int(np.prod(indices.shape[2:])))
    return xp_of(array).take_along_axis(planes, flat, axis=2).reshape(indices.shape)


class ValuesAt(ArrayFunction):
    """The values of ``x`` at given flat per-plane ``indices``; the backward scatters back to them."""

    @staticmethod
    def forward(ctx: Context, x: Any, indices: Any) -> Any:
        ctx.meta = (x.shape, indices)
        return gather_flat(x, indices)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x_shape, indices = ctx.meta
        return scatter_flat(g, indices, int(np.prod(x_shape[2:]))).reshape(x_shape), None
