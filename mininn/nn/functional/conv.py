"""Convolutions: ``conv1d``, ``conv2d``, ``conv_transpose1d``, ``conv_transpose2d``.

One 2-D kernel serves both ranks (a 1-D input gets a height of 1). The
forward gathers every receptive field with one strided copy (im2col, laid
out ``(N, C, kh, kw, oh, ow)``) and multiplies it by the weight with one
batched GEMM, over the groups too. Without a weight gradient (inference) the
columns are gathered a block of images at a time into one reused, cache-sized
buffer and never kept; a 1x1 kernel at stride 1 gathers nothing. The backward is two more GEMMs;
the input gradient scatters the columns back with one vectorised add per
kernel position (col2im). A transposed convolution runs the same pieces in
the other order.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

from mininn.autograd.function import Context, Function
from mininn.nn.functional._utils import as_strided, c_name, requires, scalar_name, xp_of
from mininn.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"]

Pad4 = tuple[int, int, int, int]  # top, bottom, left, right


# ---- raw-array building blocks ---------------------------------------------------------------


def _pad_zeros(x: Any, pads: Pad4) -> Any:
    """Zero-pad the last two axes of an ``(N, C, H, W)`` array."""
    top, bottom, left, right = pads
    if not any(pads):
        return x
    n, c, h, w = x.shape
    out = xp_of(x).zeros((n, c, h + top + bottom, w + left + right), dtype=x.dtype)
    out[:, :, top : top + h, left : left + w] = x
    return out


def _windows(x: Any, kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
             out_hw: tuple[int, int], channels_first: bool = False) -> Any:
    """Receptive fields of a padded ``(N, C, Hp, Wp)`` array: an ``(N, C, kh, kw, oh, ow)`` view.

    With ``channels_first`` the view is ``(C, kh, kw, N, oh, ow)``.
    """
    s_n, s_c, s_h, s_w = x.strides
    taps = (kernel[0], kernel[1]), (s_h * dilation[0], s_w * dilation[1])
    pixels = out_hw, (s_h * stride[0], s_w * stride[1])
    if channels_first:
        shape = (x.shape[1],) + taps[0] + (x.shape[0],) + pixels[0]
        strides = (s_c,) + taps[1] + (s_n,) + pixels[1]
    else:
        shape = x.shape[:2] + taps[0] + pixels[0]
        strides = (s_n, s_c) + taps[1] + pixels[1]
    return as_strided(x, shape, strides)


def _im2col(x: Any, kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int],
            out_hw: tuple[int, int]) -> Any:
    """Receptive fields of a padded ``(N, C, Hp, Wp)`` array as an ``(N, C, kh, kw, oh, ow)`` array.

    One strided copy; none at all for a 1x1 kernel at stride 1 (the view is the input).
    """
    return xp_of(x).ascontiguousarray(_windows(x, kernel, stride, dilation, out_hw))


def _col2im(cols: Any, padded_hw: tuple[int, int], stride: tuple[int, int],
            dilation: tuple[int, int]) -> Any:
    """Sum ``(N, C, kh, kw, oh, ow)`` columns back into an ``(N, C, Hp, Wp)`` array."""
    n, c, kh, kw, oh, ow = cols.shape
    out = xp_of(cols).zeros((n, c) + padded_hw, dtype=cols.dtype)
    sh, sw = stride
    for i in range(kh):
        r0 = i * dilation[0]
        for j in range(kw):
            c0 = j * dilation[1]
            out[:, :, r0 : r0 + sh * (oh - 1) + 1 : sh, c0 : c0 + sw * (ow - 1) + 1 : sw] += cols[:, :, i, j]
    return out


def _out_size(size: int, pad: int, k: int, s: int, d: int) -> int:
    return (size + pad - d * (k - 1) - 1) // s + 1


# Without a weight gradient the columns need not outlive the forward, so they are
# built a few images at a time into one reused buffer that stays in cache. Large
# feature maps take one batched GEMM per block of images (columns ``(m, K, L)``, the
# output already ``(m, O, L)``); small ones (``L < _BLOCK_COLS``) put the images side by
# side (columns ``(K, m * L)``) so that the one GEMM is not too thin for BLAS.
_BLOCK_COLS = 512
_BLOCK_BYTES = 4 << 20


def _conv_streamed(x: Any, w: Any, stride: tuple[int, int], pads: Pad4, dilation: tuple[int, int],
                   out_hw: tuple[int, int]) -> Any:
    """``(N, O, oh, ow)`` of an ``(N, C, H, W)`` input with ``groups=1``, padded and gathered in blocks."""
    xpm = xp_of(x)
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    k, pix = c * kh * kw, out_hw[0] * out_hw[1]
    w2 = w.reshape(o, k)
    out = xpm.empty((n, o, pix), dtype=x.dtype)
    if (kh, kw) == (1, 1) and stride == (1, 1) and not any(pads):  # the input is the column matrix
        return xpm.matmul(w2, x.reshape(n, c, pix), out=out).reshape(n, o, *out_hw)
    wide = pix < _BLOCK_COLS
    per = -(-_BLOCK_COLS // pix) if wide else _BLOCK_BYTES // (k * pix * x.itemsize)
    per = max(1, min(n, per))
    buf = xpm.empty(per * k * pix, dtype=x.dtype)
    top, bottom, left, right = pads
    # the borders of this zero buffer stay zero: each block only overwrites the interior
    padded = xpm.zeros((per, c, h + top + bottom, wd + left + right), dtype=x.dtype) if any(pads) else None
    for start in range(0, n, per):
        src = x[start : start + per]
        if padded is not None:
            padded[: len(src), :, top : top + h, left : left + wd] = src
            src = padded[: len(src)]
        views = _windows(src, (kh, kw), stride, dilation, out_hw, channels_first=wide)
        cols = buf[: views.size].reshape(views.shape)
        xpm.copyto(cols, views)
        _block_gemm(w2, cols, out[start : start + per], wide)
    return out.reshape(n, o, *out_hw)


def _block_gemm(w2: Any, cols: Any, out: Any, wide: bool) -> None:
    """``out (m, O, L) = w2 (O, K) @ cols``, ``cols`` being ``(K, m, L)`` if ``wide`` else ``(m, K, L)``."""
    m, o, pix = out.shape
    if wide:  # (O, m, L) -> (m, O, L), in contiguous runs of L
        out[...] = (w2 @ cols.reshape(-1, m * pix)).reshape(o, m, pix).swapaxes(0, 1)
    else:
        xp_of(out).matmul(w2, cols.reshape(m, -1, pix), out=out)


# Layout: activations stay batch-major. With ``g`` groups, columns are
# ``(N, g, K, L)`` (``K = C/g * kh * kw``, ``L = oh * ow``) and the weight is
# ``(g, O/g, K)``: one broadcasting ``matmul`` gives ``(N, g, O/g, L)``, which
# is already the ``(N, O, oh, ow)`` output, with no transpose copy.


class _Conv2d(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, stride: tuple[int, int], pads: Pad4,
                dilation: tuple[int, int], groups: int, need: tuple[bool, bool, bool]) -> Any:
        n, c, h, wd = x.shape
        hp, wp = h + pads[0] + pads[1], wd + pads[2] + pads[3]
        o, cg, kh, kw = w.shape
        oh = _out_size(hp, 0, kh, stride[0], dilation[0])
        ow = _out_size(wp, 0, kw, stride[1], dilation[1])
        w3 = w.reshape(groups, o // groups, cg * kh * kw)
        cols = None
        if groups == 1 and not need[1]:
            out = _conv_streamed(x, w, stride, pads, dilation, (oh, ow))
        else:
            xp = _pad_zeros(x, pads)
            cols = _im2col(xp, (kh, kw), stride, dilation, (oh, ow)).reshape(n, groups, cg * kh * kw, oh * ow)
            out = (w3 @ cols).reshape(n, o, oh, ow)
        if b is not None:
            out += b.reshape(1, o, 1, 1)
        if any(need):
            ctx.save_for_backward(cols if need[1] else None, w3 if need[0] else None)
            ctx.meta = (x.shape, (hp, wp), pads, stride, dilation, (kh, kw), groups, need)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        cols, w3 = ctx.saved_tensors
        x_shape, padded_hw, pads, stride, dilation, kernel, groups, need = ctx.meta
        n, o, oh, ow = g.shape
        g4 = g.reshape(n, groups, o // groups, oh * ow)
        gw = gx = gb = None
        if need[1]:  # sum over the batch of (O/g, L) @ (L, K)
            gw = (g4 @ cols.swapaxes(-1, -2)).sum(axis=0).reshape((o, -1) + kernel)
        if need[0]:
            gcols = (w3.swapaxes(-1, -2) @ g4).reshape((n, x_shape[1]) + kernel + (oh, ow))
            gxp = _col2im(gcols, padded_hw, stride, dilation)
            top, _, left, _ = pads
            gx = gxp[:, :, top : top + x_shape[2], left : left + x_shape[3]]
        if need[2]:
            gb = g.sum(axis=(0, 2, 3))
        return gx, gw, gb, None, None, None, None, None


class _DepthwiseConv2d(Function):
    """A depthwise convolution (one input and one output channel per group).

    Its per-group GEMMs would be ``1 x kh*kw`` by ``kh*kw x L``, far too thin
    for BLAS, so it multiply-adds one shifted view of the input per kernel
    position instead.
    """

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, stride: tuple[int, int], pads: Pad4,
                dilation: tuple[int, int], groups: int, need: tuple[bool, bool, bool]) -> Any:
        xp = _pad_zeros(x, pads)
        c, _, kh, kw = w.shape
        out_hw = (_out_size(xp.shape[2], 0, kh, stride[0], dilation[0]),
                  _out_size(xp.shape[3], 0, kw, stride[1], dilation[1]))
        taps = w.reshape(c, kh * kw).T.reshape(kh * kw, 1, c, 1, 1)  # (k, 1, C, 1, 1)
        out = xp[_shifted(0, kw, out_hw, stride, dilation)] * taps[0]
        term = xp_of(out).empty_like(out)
        for k in range(1, kh * kw):
            xp_of(out).multiply(xp[_shifted(k, kw, out_hw, stride, dilation)], taps[k], out=term)
            out += term
        if b is not None:
            out += b.reshape(1, c, 1, 1)
        if any(need):
            ctx.save_for_backward(xp if need[1] else None, taps)
            ctx.meta = (x.shape, xp.shape, pads, stride, dilation, (kh, kw), need)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        xp, taps = ctx.saved_tensors
        x_shape, padded_shape, pads, stride, dilation, kernel, need = ctx.meta
        out_hw = g.shape[2:]
        n_taps = kernel[0] * kernel[1]
        gx = gw = gb = None
        if need[0]:
            gxp = xp_of(g).zeros(padded_shape, dtype=g.dtype)
            for k in range(n_taps):
                gxp[_shifted(k, kernel[1], out_hw, stride, dilation)] += g * taps[k]
            top, _, left, _ = pads
            gx = gxp[:, :, top : top + x_shape[2], left : left + x_shape[3]]
        if need[1]:
            per_tap = [
                (g * xp[_shifted(k, kernel[1], out_hw, stride, dilation)]).sum(axis=(0, 2, 3))
                for k in range(n_taps)
            ]
            gw = xp_of(g).stack(per_tap, axis=1).reshape((g.shape[1], 1) + kernel)
        if need[2]:
            gb = g.sum(axis=(0, 2, 3))
        return gx, gw, gb, None, None, None, None, None


def _shifted(k: int, kw: int, out_hw: tuple[int, int], stride: tuple[int, int],
             dilation: tuple[int, int]) -> tuple[slice, ...]:
    """The view of a padded input that kernel position ``k`` multiplies, for every output pixel."""
    i, j = divmod(k, kw)
    r0, c0 = i * dilation[0], j * dilation[1]
    return (slice(None), slice(None), slice(r0, r0 + stride[0] * (out_hw[0] - 1) + 1, stride[0]),
            slice(c0, c0 + stride[1] * (out_hw[1] - 1) + 1, stride[1]))


class _ConvTranspose2d(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, stride: tuple[int, int], padding: tuple[int, int],
                output_padding: tuple[int, int], dilation: tuple[int, int], groups: int,
                need: tuple[bool, bool, bool]) -> Any:
        n, cin, h, wd = x.shape
        _, cog, kh, kw = w.shape
        full = tuple(
            (size - 1) * s + d * (k - 1) + 1 + op
            for size, s, d, k, op in zip((h, wd), stride, dilation, (kh, kw), output_padding)
        )
        x4 = x.reshape(n, groups, cin // groups, h * wd)
        w3 = w.reshape(groups, cin // groups, cog * kh * kw)
        cols = (w3.swapaxes(-1, -2) @ x4).reshape(n, groups * cog, kh, kw, h, wd)
        buf = _col2im(cols, full, stride, dilation)
        ph, pw = padding
        out = buf[:, :, ph : full[0] - ph, pw : full[1] - pw]
        if b is not None:
            out = out + b.reshape(1, -1, 1, 1)
        if any(need):
            ctx.save_for_backward(x4 if need[1] else None, w3)
            ctx.meta = (x.shape, full, padding, stride, dilation, (kh, kw), need)
        return xp_of(out).ascontiguousarray(out)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x4, w3 = ctx.saved_tensors
        x_shape, full, padding, stride, dilation, kernel, need = ctx.meta
        groups = w3.shape[0]
        n, cin, h, wd = x_shape
        ph, pw = padding
        pads = (ph, full[0] - ph - g.shape[2], pw, full[1] - pw - g.shape[3])
        gcols = _im2col(_pad_zeros(g, pads), kernel, stride, dilation, (h, wd))
        gcols = gcols.reshape(n, groups, -1, h * wd)
        gx = gw = gb = None
        if need[0]:
            gx = (w3 @ gcols).reshape(n, cin, h, wd)
        if need[1]:
            gw = (x4 @ gcols.swapaxes(-1, -2)).sum(axis=0).reshape((cin, -1) + kernel)
        if need[2]:
            gb = g.sum(axis=(0, 2, 3))
        return gx, gw, gb, None, None, None, None, None, None


# ---- argument handling -----------------------------------------------------------------------


def _expand(name: str, value: Any, nd: int) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,) * nd
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * nd
    if len(values) != nd:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {nd} values to match the "
            f"convolution dimensions, but got {name}={list(values)}"
        )
    return values


def _check_input(input: Tensor, nd: int, name: str) -> bool:
    """Validate the rank; return whether the input is unbatched."""
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
            f"of size: {list(input.shape)}"
        )
    return input.ndim == nd + 1


def _check_dtypes(input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(
            f"Input type ({c_name(input)}) and bias type ({c_name(bias)}) should be the same"
        )
    if weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(input)} but found {scalar_name(weight)}")


def _check_params(stride: tuple[int, ...], padding: tuple[int, ...], dilation: tuple[int, ...]) -> None:
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


def _same_pads(kernel: tuple[int, ...], dilation: tuple[int, ...]) -> list[tuple[int, int]]:
    """torch's ``'same'``: total ``d * (k - 1)``, the odd extra element on the far side."""
    out = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        out.append((total // 2, total - total // 2))
    return out


def _conv(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any, dilation: Any,
          groups: int, nd: int) -> Tensor:
    name = f"conv{nd}d"
    unbatched = _check_input(input, nd, name)
    if unbatched:
        input = input.unsqueeze(0)
    stride_t = _expand("stride", stride, nd)
    dilation_t = _expand("dilation", dilation, nd)
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pairs = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in stride_t):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pairs = _same_pads(kernel, dilation_t)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        _check_params(stride_t, (0,), dilation_t)
    else:
        padding_t = _expand("padding", padding, nd)
        _check_params(stride_t, padding_t, dilation_t)
        pairs = [(p, p) for p in padding_t]
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
    if nd == 1:
        x4, w4 = input.unsqueeze(2), weight.unsqueeze(2)
        stride2, dilation2 = (1,) + stride_t, (1,) + dilation_t
        pads: Pad4 = (0, 0) + pairs[0]
    else:
        x4, w4, stride2, dilation2 = input, weight, stride_t, dilation_t
        pads = pairs[0] + pairs[1]
    need = (requires(input), requires(weight), requires(bias))
    kernel_fn = _DepthwiseConv2d if groups > 1 and weight.shape[:2] == (groups, 1) else _Conv2d
    out = kernel_fn.apply(x4, w4, bias, stride2, pads, dilation2, groups, need)
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def _conv_transpose(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
                    output_padding: Any, groups: int, dilation: Any, nd: int) -> Tensor:
    name = f"conv_transpose{nd}d"
    unbatched = _check_input(input, nd, name)
    if unbatched:
        input = input.unsqueeze(0)
    stride_t = _expand("stride", stride, nd)
    padding_t = _expand("padding", padding, nd)
    dilation_t = _expand("dilation", dilation, nd)
    out_pad_t = _expand("output_padding", output_padding, nd)
    _check_params(stride_t, padding_t, dilation_t)
    _check_dtypes(input, weight, bias)
    _check_weight(input, weight, bias, groups, transposed=True)
    if nd == 1:  # a height-1 image: stride and dilation 1, no padding along the height
        x4, w4 = input.unsqueeze(2), weight.unsqueeze(2)
        stride2, dilation2 = (1,) + stride_t, (1,) + dilation_t
        padding2, out_pad2 = (0,) + padding_t, (0,) + out_pad_t
    else:
        x4, w4 = input, weight
        stride2, dilation2, padding2, out_pad2 = stride_t, dilation_t, padding_t, out_pad_t
    if any(op >= s and op >= d for op, s, d in zip(out_pad2, stride2, dilation2)):
        raise RuntimeError(_output_padding_message(out_pad2, stride2, dilation2))
    need = (requires(input), requires(weight), requires(bias))
    out = _ConvTranspose2d.apply(x4, w4, bias, stride2, padding2, out_pad2, dilation2, groups, need)
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def _output_padding_message(op: tuple[int, ...], stride: tuple[int, ...], dilation: tuple[int, ...]) -> str:
    return (
        "output padding must be smaller than either stride or dilation, but got "
        f"output_padding_height: {op[0]} output_padding_width: {op[1]} stride_height: {stride[0]} "
        f"stride_width: {stride[1]} dilation_height: {dilation[0]} dilation_width: {dilation[1]}"
    )


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


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-D transposed convolution; ``weight`` is ``(C_in, C_out/groups, k)``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution (``conv2d``'s gradient); ``weight`` is ``(C_in, C_out/groups, kh, kw)``."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)
