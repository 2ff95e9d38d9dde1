"""Sliding blocks: ``unfold`` (im2col) and ``fold`` (col2im), each the other's adjoint.

``unfold`` copies every ``kernel_size`` block of a zero-padded ``(N, C, H, W)``
input out of one strided view into ``(N, C * kh * kw, L)`` columns; ``fold``
sums such columns back into an image with one vectorised add per kernel
offset. Each op's backward is the other.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import as_strided, check_float, xp_of
from mininn.tensor import Tensor

__all__ = ["fold", "unfold"]

Pair = tuple[int, int]


class _Geometry:
    """Kernel, dilation, padding and stride of one call, with torch's argument checks."""

    def __init__(self, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> None:
        self.kernel = _pair_param("kernel_size", kernel_size)
        self.dilation = _pair_param("dilation", dilation)
        self.padding = _pair_param("padding", padding)
        self.stride = _pair_param("stride", stride)
        checks = (("kernel size should be greater than zero", "kernel", self.kernel, 0),
                  ("dilation should be greater than zero", "dilation", self.dilation, 0),
                  ("padding should be non-negative", "pad", self.padding, -1),
                  ("stride should be greater than zero", "stride", self.stride, 0))
        for message, name, (a, b), lowest in checks:
            if a <= lowest or b <= lowest:
                raise RuntimeError(f"{message}, but got {name}_height: {a} {name}_width: {b}")

    def blocks(self, spatial: Pair) -> Pair:
        """Number of block positions along H and W of a ``spatial`` image."""
        return tuple(  # type: ignore[return-value]
            (n + 2 * p - d * (k - 1) - 1) // s + 1
            for n, k, d, p, s in zip(spatial, self.kernel, self.dilation, self.padding, self.stride)
        )

    def describe(self) -> str:
        return f"kernel_size={self.kernel}, dilation={self.dilation}, padding={self.padding}"


def _pair_param(name: str, value: Any) -> Pair:
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(value)}")
    return (int(value[0]), int(value[1]))


# ---- raw kernels ----------------------------------------------------------------------------------


def _im2col(x: Any, geo: _Geometry, blocks: Pair) -> Any:
    """``(N, C, H, W)`` -> ``(N, C * kh * kw, oh * ow)``."""
    xp = xp_of(x)
    n, c, h, w = x.shape
    ph, pw = geo.padding
    if ph or pw:
        padded = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=x.dtype)
        padded[:, :, ph : ph + h, pw : pw + w] = x
    else:
        padded = xp.ascontiguousarray(x)
    s_n, s_c, s_h, s_w = padded.strides
    (kh, kw), (dh, dw), (sh, sw) = geo.kernel, geo.dilation, geo.stride
    view = as_strided(padded, (n, c, kh, kw) + blocks,
                      (s_n, s_c, s_h * dh, s_w * dw, s_h * sh, s_w * sw))
    return xp.ascontiguousarray(view).reshape(n, c * kh * kw, blocks[0] * blocks[1])


def _col2im(cols: Any, geo: _Geometry, spatial: Pair, blocks: Pair) -> Any:
    """``(N, C * kh * kw, oh * ow)`` -> ``(N, C, H, W)``, overlapping blocks summed."""
    (kh, kw), (dh, dw), (sh, sw), (ph, pw) = geo.kernel, geo.dilation, geo.stride, geo.padding
    n = cols.shape[0]
    c = cols.shape[1] // (kh * kw)
    oh, ow = blocks
    parts = cols.reshape(n, c, kh, kw, oh, ow)
    out = xp_of(cols).zeros((n, c, spatial[0] + 2 * ph, spatial[1] + 2 * pw), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dh, j * dw
            out[:, :, r0 : r0 + sh * (oh - 1) + 1 : sh, c0 : c0 + sw * (ow - 1) + 1 : sw] += parts[:, :, i, j]
    return out[:, :, ph : ph + spatial[0], pw : pw + spatial[1]]


class _Unfold(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, geo: _Geometry, blocks: Pair) -> Any:
        ctx.meta = (geo, tuple(x.shape[2:]), blocks)
        return _im2col(x, geo, blocks)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        geo, spatial, blocks = ctx.meta
        return _col2im(g, geo, spatial, blocks), None, None


class _Fold(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, cols: Any, geo: _Geometry, spatial: Pair, blocks: Pair) -> Any:
        ctx.meta = (geo, blocks)
        return _col2im(cols, geo, spatial, blocks)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        geo, blocks = ctx.meta
        return _im2col(g, geo, blocks), None, None, None


# ---- public -------------------------------------------------------------------------------------------


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    """Extract sliding ``kernel_size`` blocks: ``(N, C, H, W)`` -> ``(N, C * kh * kw, L)``.

    ``L`` is the number of block positions; a 3-D input is one unbatched image. Each column
    lists a block channel by channel, row by row.
    """
    geo = _Geometry(kernel_size, dilation, padding, stride)
    if input.ndim not in (3, 4) or any(n == 0 for n in input.shape[-3:]):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions "
            f"for input, but got: {list(input.shape)}"
        )
    spatial = tuple(input.shape[-2:])
    blocks = geo.blocks(spatial)  # type: ignore[arg-type]
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(
            f"Given input with spatial size {spatial}, {geo.describe()}, calculated shape of the array of "
            f"sliding blocks as {blocks}, but its components must be at least one."
        )
    check_float(input, "im2col_out_cpu")
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    out = _Unfold.apply(x, geo, blocks)
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
         stride: Any = 1) -> Tensor:
    """Sum sliding blocks back into an image: ``(N, C * kh * kw, L)`` -> ``(N, C, *output_size)``.

    The adjoint of :func:`unfold` (overlapping blocks add up); a 2-D input is unbatched.
    """
    spatial = _pair_param("output_size", output_size)
    geo = _Geometry(kernel_size, dilation, padding, stride)
    if input.ndim not in (2, 3) or any(n == 0 for n in input.shape[-2:]):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
            f"dimensions for input, but got: {list(input.shape)}"
        )
    per_block = geo.kernel[0] * geo.kernel[1]
    channels, length = input.shape[-2:]
    if channels % per_block:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            f"input.size(1)={channels} and kernel_size={geo.kernel}."
        )
    blocks = geo.blocks(spatial)
    if blocks[0] * blocks[1] != length or blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(
            f"Given output_size={spatial}, {geo.describe()}, stride={geo.stride}, expected size of input's "
            f"dimension 2 to match the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
            f"{blocks[0] * blocks[1]}, but got input.size(2)={length}."
        )
    check_float(input, "col2im_out_cpu")
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input
    out = _Fold.apply(x, geo, spatial, blocks)
    return out.squeeze(0) if unbatched else out
