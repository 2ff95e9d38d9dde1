"""Pooling: ``max_pool1d/2d``, ``avg_pool1d/2d``, ``adaptive_avg_pool1d/2d``.

Windows are visited with one vectorised step per kernel position (no loop
over pixels): the max keeps a running maximum and the winning kernel
position, which the backward uses to route each gradient to its source.
Without autograd the max is separable (rows, then columns) and never pads.
The average sums shifted views and divides by a separable divisor table.
Adaptive average pooling is two small matrix products (``P_h @ x @ P_w^T``).
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.function import Context, Function
from mininn.nn.functional._utils import needs_grad, scalar_name, xp_of
from mininn.tensor import Tensor

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
]

Pair = tuple[int, int]


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


def _geometry(x: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, ceil_mode: bool) -> Pair:
    """Output height and width, with torch's 2-D pooling shape checks."""
    oh = _out_len(x.shape[-2], kernel[0], stride[0], padding[0], dilation[0], ceil_mode)
    ow = _out_len(x.shape[-1], kernel[1], stride[1], padding[1], dilation[1], ceil_mode)
    if kernel[0] <= 0 or kernel[1] <= 0:
        raise RuntimeError(
            f"kernel size should be greater than zero, but got kH: {kernel[0]} kW: {kernel[1]}"
        )
    if stride[0] <= 0 or stride[1] <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {stride[0]} dW: {stride[1]}")
    if dilation[0] <= 0 or dilation[1] <= 0:
        raise RuntimeError(
            f"dilation should be greater than zero, but got dilationH: {dilation[0]} dilationW: {dilation[1]}"
        )
    if kernel[1] // 2 < padding[1] or kernel[0] // 2 < padding[0]:
        raise RuntimeError(
            "pad should be smaller than or equal to half of kernel size, but got "
            f"padW = {padding[1]}, padH = {padding[0]}, kW = {kernel[1]}, kH = {kernel[0]}"
        )
    if oh < 1 or ow < 1:
        c, h, w = x.shape[-3:]
        raise RuntimeError(
            f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). "
            "Output size is too small"
        )
    return oh, ow


def _padded(x: Any, padding: Pair, out_hw: Pair, kernel: Pair, stride: Pair, dilation: Pair,
            fill: Any) -> Any:
    """``x`` padded by ``padding`` plus whatever the last (ceil-mode) windows reach past the edge."""
    n, c, h, w = x.shape
    need = [(o - 1) * s + d * (k - 1) + 1 for o, s, d, k in zip(out_hw, stride, dilation, kernel)]
    hp, wp = max(h + 2 * padding[0], need[0]), max(w + 2 * padding[1], need[1])
    if (hp, wp) == (h, w):
        return x
    out = xp_of(x).full((n, c, hp, wp), fill, dtype=x.dtype)
    out[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + w] = x
    return out


def _window(k: int, kw: int, out_hw: Pair, stride: Pair, dilation: Pair) -> tuple[Any, ...]:
    """The slice of a padded array that kernel position ``k`` sees across all windows."""
    i, j = divmod(k, kw)
    r0, c0 = i * dilation[0], j * dilation[1]
    return (
        slice(None),
        slice(None),
        slice(r0, r0 + stride[0] * (out_hw[0] - 1) + 1, stride[0]),
        slice(c0, c0 + stride[1] * (out_hw[1] - 1) + 1, stride[1]),
    )


def _fill_value(dtype: Any) -> Any:
    if np.issubdtype(dtype, np.floating):
        return -np.inf
    return np.iinfo(dtype).min


# ---- max --------------------------------------------------------------------------------------


class _MaxPool2d(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair,
                out_hw: Pair, winners: _Winners) -> Any:
        xp = xp_of(x)
        padded = _padded(x, padding, out_hw, kernel, stride, dilation, _fill_value(x.dtype))
        best = padded[_window(0, kernel[1], out_hw, stride, dilation)].copy()
        arg = xp.zeros(best.shape, dtype=np.int32)
        for k in range(1, kernel[0] * kernel[1]):
            v = padded[_window(k, kernel[1], out_hw, stride, dilation)]
            take = (v > best) | (v != v)  # torch: a NaN wins
            xp.copyto(best, v, where=take)
            xp.copyto(arg, k, where=take)
        ctx.save_for_backward(arg)
        ctx.meta = (x.shape, padded.shape, kernel, stride, padding, dilation, out_hw)
        winners.arg = arg
        return best

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (arg,) = ctx.saved_tensors
        x_shape, padded_shape, kernel, stride, padding, dilation, out_hw = ctx.meta
        gxp = xp_of(g).zeros(padded_shape, dtype=g.dtype)
        zero = g.dtype.type(0)
        for k in range(kernel[0] * kernel[1]):
            gxp[_window(k, kernel[1], out_hw, stride, dilation)] += np.where(arg == k, g, zero)
        ph, pw = padding
        return gxp[:, :, ph : ph + x_shape[2], pw : pw + x_shape[3]], None, None, None, None, None, None


def _max_values(x: Any, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, out_hw: Pair) -> Any:
    """Window maxima only (NaN propagates, as in torch), separably: over rows, then over columns.

    Each axis is a running ``maximum`` over its taps, every tap clipped to the
    outputs whose source lies inside the input, so the padding (which never wins)
    is never built. About 3x faster than ``kh * kw`` passes over a padded copy;
    a ``max`` over a strided ``(..., kh, kw)`` window view is slower still (its
    inner loop is one short window).
    """
    rows = _max_along(x, 2, out_hw[0], kernel[0], stride[0], padding[0], dilation[0])
    out = _max_along(rows, 3, out_hw[1], kernel[1], stride[1], padding[1], dilation[1])
    return out.copy() if out is x else out


def _max_along(x: Any, axis: int, out_len: int, k: int, s: int, pad: int, d: int) -> Any:
    """Running maximum over the ``k`` taps of windows along ``axis`` (``x`` itself if trivial)."""
    if (k, s, pad) == (1, 1, 0):
        return x
    taps = _tap_ranges(x.shape[axis], out_len, k, s, pad, d)
    full = next((t for t in taps if t[:2] == (0, out_len)), None)  # a tap inside for every window
    if full is not None:
        out = x[_along(axis, full[2], s, out_len)].copy()
        taps.remove(full)
    else:
        shape = x.shape[:axis] + (out_len,) + x.shape[axis + 1 :]
        out = xp_of(x).full(shape, _fill_value(x.dtype), dtype=x.dtype)
    for lo, hi, src in taps:
        part = out[_along(axis, lo, 1, hi - lo)]
        xp_of(x).maximum(part, x[_along(axis, src, s, hi - lo)], out=part)
    return out


def _tap_ranges(size: int, out_len: int, k: int, s: int, pad: int, d: int) -> list[tuple[int, int, int]]:
    """``(first, end, source)`` per tap: outputs ``first:end`` read ``source``, ``source + s``, ..."""
    ranges = []
    for tap in range(k):
        offset = tap * d - pad  # the input index this tap reads for output 0
        first = -(offset // s) if offset < 0 else 0
        end = min(out_len, (size - 1 - offset) // s + 1)
        if end > first:
            ranges.append((first, end, first * s + offset))
    return ranges


def _along(axis: int, start: int, step: int, count: int) -> tuple[slice, ...]:
    """An index taking ``count`` elements from ``start`` every ``step`` along ``axis``."""
    return (slice(None),) * axis + (slice(start, start + step * (count - 1) + 1, step),)


class _Winners:
    """Where ``_MaxPool2d.forward`` leaves each window's winning kernel position."""

    arg: Any = None


def _flat_indices(arg: Any, x_hw: Pair, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair) -> Any:
    """torch's ``return_indices``: the winner's position in the flattened ``H * W`` input plane."""
    xp = xp_of(arg)
    i, j = arg // kernel[1], arg % kernel[1]
    oh, ow = arg.shape[-2:]
    rows = (xp.arange(oh) * stride[0] - padding[0])[:, None] + i * dilation[0]
    cols = (xp.arange(ow) * stride[1] - padding[1])[None, :] + j * dilation[1]
    return (rows * x_hw[1] + cols).astype(np.int64)


def _max_pool(input: Tensor, kernel: Pair, stride: Pair, padding: Pair, dilation: Pair, ceil_mode: bool,
              return_indices: bool) -> Any:
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    out_hw = _geometry(x._data, kernel, stride, padding, dilation, ceil_mode)
    if not return_indices and not needs_grad(x):  # inference: a running maximum, no winners
        out = Tensor(_max_values(x._data, kernel, stride, padding, dilation, out_hw))
        return out.squeeze(0) if unbatched else out
    winners = _Winners()
    out = _MaxPool2d.apply(x, kernel, stride, padding, dilation, out_hw, winners)
    if unbatched:
        out = out.squeeze(0)
    if not return_indices:
        return out
    idx = _flat_indices(winners.arg, tuple(x.shape[2:]), kernel, stride, padding, dilation)
    return out, Tensor(idx[0] if unbatched else idx)


def _pair_arg(fn: str, name: str, value: Any, default: Any = None) -> Pair:
    if value is None or (isinstance(value, (tuple, list)) and len(value) == 0):
        value = default
    if isinstance(value, int):
        return (value, value)
    if len(value) == 1:
        return (int(value[0]), int(value[0]))
    if len(value) != 2:
        if name == "stride":
            raise RuntimeError(f"{fn}: stride must either be omitted, a single int, or a tuple of two ints")
        verb = "be either" if name == "dilation" else "either be"
        raise RuntimeError(f"{fn}: {name} must {verb} a single int, or a tuple of two ints")
    return (int(value[0]), int(value[1]))


def _check_2d_input(input: Tensor) -> None:
    if input.ndim not in (3, 4) or input.numel() == 0:
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over ``kernel_size`` windows of ``(N, C, H, W)``; ``stride`` defaults to ``kernel_size``.

    Padding counts as ``-inf``; ``return_indices=True`` also returns each winner's flat ``H * W``
    index (for ``max_unpool2d``).
    """
    kernel = _pair_arg("max_pool2d", "kernel_size", kernel_size)
    stride_p = _pair_arg("max_pool2d", "stride", stride, kernel)
    padding_p = _pair_arg("max_pool2d", "padding", padding)
    dilation_p = _pair_arg("max_pool2d", "dilation", dilation)
    _check_2d_input(input)
    return _max_pool(input, kernel, stride_p, padding_p, dilation_p, ceil_mode, return_indices)


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


# ---- average ------------------------------------------------------------------------------------


def _divisor_axis(xp: Any, size: int, out: int, k: int, s: int, pad: int, include_pad: bool) -> Any:
    start = xp.arange(out) * s - pad
    end = xp.minimum(start + k, size + pad)
    if include_pad:
        return end - start
    return xp.minimum(end, size) - xp.maximum(start, 0)


class _AvgPool2d(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, kernel: Pair, stride: Pair, padding: Pair, out_hw: Pair,
                include_pad: bool, divisor_override: int | None) -> Any:
        xp = xp_of(x)
        padded = _padded(x, padding, out_hw, kernel, stride, (1, 1), 0)
        total = padded[_window(0, kernel[1], out_hw, stride, (1, 1))].copy()
        for k in range(1, kernel[0] * kernel[1]):
            total += padded[_window(k, kernel[1], out_hw, stride, (1, 1))]
        if divisor_override:
            div = divisor_override
        else:
            dh = _divisor_axis(xp, x.shape[2], out_hw[0], kernel[0], stride[0], padding[0], include_pad)
            dw = _divisor_axis(xp, x.shape[3], out_hw[1], kernel[1], stride[1], padding[1], include_pad)
            div = (dh[:, None] * dw[None, :]).astype(x.dtype if x.dtype.kind == "f" else np.float64)
        ctx.meta = (x.shape, padded.shape, kernel, stride, padding, out_hw, div)
        out = total / div
        return out if x.dtype.kind == "f" else out.astype(x.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x_shape, padded_shape, kernel, stride, padding, out_hw, div = ctx.meta
        gq = g / div
        gxp = xp_of(g).zeros(padded_shape, dtype=g.dtype)
        for k in range(kernel[0] * kernel[1]):
            gxp[_window(k, kernel[1], out_hw, stride, (1, 1))] += gq
        ph, pw = padding
        return gxp[:, :, ph : ph + x_shape[2], pw : pw + x_shape[3]], None, None, None, None, None, None


def _avg_pool(input: Tensor, kernel: Pair, stride: Pair, padding: Pair, ceil_mode: bool,
              count_include_pad: bool, divisor_override: int | None) -> Tensor:
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    out_hw = _geometry(x._data, kernel, stride, padding, (1, 1), ceil_mode)
    out = _AvgPool2d.apply(x, kernel, stride, padding, out_hw, count_include_pad, divisor_override)
    return out.squeeze(0) if unbatched else out


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """Mean over ``kernel_size`` windows of ``(N, C, H, W)``; ``stride`` defaults to ``kernel_size``.

    Zero padding counts in the divisor when ``count_include_pad``; ``divisor_override`` replaces it.
    """
    kernel = _pair_arg("avg_pool2d", "kernel_size", kernel_size)
    stride_p = _pair_arg("avg_pool2d", "stride", stride, kernel)
    padding_p = _pair_arg("avg_pool2d", "padding", padding)
    _check_2d_input(input)
    return _avg_pool(input, kernel, stride_p, padding_p, ceil_mode, count_include_pad, divisor_override)


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


# ---- adaptive ---------------------------------------------------------------------------------


def _adaptive_matrix(xp: Any, size: int, out: int, dtype: Any) -> Any:
    """``(out, size)``: row ``i`` averages torch's bin ``[floor(i*size/out), ceil((i+1)*size/out))``."""
    i = np.arange(out)
    start = (i * size) // out
    end = -((-(i + 1) * size) // out)
    cols = np.arange(size)
    inside = (cols[None, :] >= start[:, None]) & (cols[None, :] < end[:, None])
    mat = inside / (end - start)[:, None]
    return xp.asarray(mat.astype(dtype))


class _AdaptiveAvgPool2d(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, out_hw: Pair) -> Any:
        xp = xp_of(x)
        n, c, h, w = x.shape
        ph = _adaptive_matrix(xp, h, out_hw[0], x.dtype)
        pw = _adaptive_matrix(xp, w, out_hw[1], x.dtype)
        ctx.meta = (ph, pw)
        rows = (x.reshape(n * c * h, w) @ pw.T).reshape(n * c, h, out_hw[1])  # pool the width
        return (ph @ rows).reshape(n, c, out_hw[0], out_hw[1])  # then the height

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        ph, pw = ctx.meta
        n, c, oh, ow = g.shape
        rows = ph.T @ g.reshape(n * c, oh, ow)  # (n*c, h, ow)
        h = rows.shape[1]
        return (rows.reshape(n * c * h, ow) @ pw).reshape(n, c, h, pw.shape[1]), None


def _adaptive_size(output_size: Any, n: int, in_sizes: tuple[int, ...], fn: str) -> tuple[int, ...]:
    if isinstance(output_size, int) or output_size is None:
        sizes: tuple[Any, ...] = (output_size,) * n
    else:
        sizes = tuple(output_size)
        if len(sizes) != n:
            raise RuntimeError(f"{fn}: output_size must be {n}")
    sizes = tuple(s if s is not None else d for s, d in zip(sizes, in_sizes))
    if any(s < 0 for s in sizes):
        raise RuntimeError(
            f"{fn}: elements of output_size must be greater than or equal to 0 but received "
            "{" + ", ".join(map(str, sizes)) + "}"
        )
    return sizes


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average ``(N, C, H, W)`` into an ``output_size`` grid of (possibly overlapping) bins.

    ``output_size`` is an int or a pair; ``None`` keeps that input size.
    """
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"adaptive_avg_pool2d\" not implemented for '{scalar_name(input)}'")
    out_hw = _adaptive_size(output_size, 2, tuple(input.shape[-2:]), "adaptive_avg_pool2d")
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    out = _AdaptiveAvgPool2d.apply(x, out_hw)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average ``(N, C, L)`` (or ``(C, L)``) into ``output_size`` bins."""
    _check_1d_input(input, "adaptive_avg_pool1d")
    (size,) = _adaptive_size(output_size, 1, tuple(input.shape[-1:]), "adaptive_avg_pool1d")
    x = input.unsqueeze(-2)
    return adaptive_avg_pool2d(x, (1, size)).squeeze(-2)

