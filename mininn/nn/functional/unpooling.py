"""Max unpooling: ``max_unpool1d/2d/3d``, the partial inverse of a max pool with ``return_indices``.

Each input value is written to its flat index in a zero plane (or volume) of
the output; the backward reads the gradient back at the same indices. A 1-D
unpool is a 2-D one over an image of width 1.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import ntuple, scalar_name, xp_of
from mininn.nn.functional.pooling import gather_flat
from mininn.tensor import Tensor

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]

Dims = tuple[int, ...]


class _MaxUnpool(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, indices: Any, out_sz: Dims) -> Any:
        xp = xp_of(x)
        n, c = x.shape[:2]
        size = int(np.prod(out_sz))
        flat = indices.reshape(n, c, -1)
        bad = (flat < 0) | (flat >= size)
        if bad.any():
            first = flat.ravel()[int(xp.argmax(bad.ravel()))]
            volume = "x".join(map(str, out_sz))
            raise RuntimeError(f"Found an invalid max index: {first} (output volumes are of size {volume})")
        out = xp.zeros((n, c, size), dtype=x.dtype)
        xp.put_along_axis(out, flat, x.reshape(n, c, -1), axis=2)
        ctx.meta = indices
        return out.reshape((n, c) + tuple(out_sz))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return gather_flat(g, ctx.meta), None, None


def _output_size(input: Tensor, kernel: Dims, stride: Dims, padding: Dims, output_size: Any) -> Dims:
    """torch's ``_unpool_output_size``: the default, or ``output_size`` if within one stride of it."""
    nd = len(kernel)
    in_sz = input.shape[-nd:]
    default = [(in_sz[d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(nd)]
    if output_size is None:
        return tuple(default)
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(
            f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a length of "
            f"'{len(output_size)}'"
        )
    for d in range(nd):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {lo} and {hi})')
    return tuple(int(s) for s in output_size)


def _check(input: Tensor, indices: Tensor, nd: int) -> None:
    if indices.dtype.name != "int64":
        raise RuntimeError(f"elements in indices should be type int64 but got: {scalar_name(indices)}")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a tensor with "
            f"{input.ndim} dimensions."
        )
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) but got "
            f"indices tensor with shape: {list(indices.shape)}"
        )


def _unpool(input: Tensor, indices: Tensor, nd: int, out_sz: Dims) -> Tensor:
    _check(input, indices, nd)
    unbatched = input.ndim == nd + 1
    if unbatched:
        input, indices = input.unsqueeze(0), indices.unsqueeze(0)
    out = _MaxUnpool.apply(input, indices._data, out_sz)
    return out.squeeze(0) if unbatched else out


def _geometry(nd: int, kernel_size: Any, stride: Any, padding: Any) -> tuple[Dims, Dims, Dims]:
    as_nd = ntuple(nd)
    kernel = as_nd(kernel_size)
    return kernel, as_nd(stride) if stride is not None else kernel, as_nd(padding)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Scatter ``(N, C, L)`` into zeros at ``indices`` (from ``max_pool1d(..., return_indices=True)``)."""
    kernel, stride_t, padding_t = _geometry(1, kernel_size, stride, padding)
    (length,) = _output_size(input, kernel, stride_t, padding_t, output_size)
    out = _unpool(input.unsqueeze(-1), indices.unsqueeze(-1), 2, (length, 1))
    return out.squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Scatter ``(N, C, H, W)`` into zeros at flat ``H_out * W_out`` ``indices`` (from ``max_pool2d``).

    The output size defaults to ``(in - 1) * stride - 2 * padding + kernel_size``; ``output_size``
    may pick any size less than one stride away from it.
    """
    kernel, stride_t, padding_t = _geometry(2, kernel_size, stride, padding)
    out_sz = _output_size(input, kernel, stride_t, padding_t, output_size)
    return _unpool(input, indices, 2, out_sz)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 output_size: Any = None) -> Tensor:
    """Scatter ``(N, C, D, H, W)`` into zeros at flat ``D * H * W`` ``indices`` (from ``max_pool3d``)."""
    kernel, stride_t, padding_t = _geometry(3, kernel_size, stride, padding)
    out_sz = _output_size(input, kernel, stride_t, padding_t, output_size)
    return _unpool(input, indices, 3, out_sz)
