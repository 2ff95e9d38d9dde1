"""The raw-array building blocks of convolution and pooling: padding, receptive-field
views (im2col), kernel taps and their scatter back (col2im), for any number of spatial dims.

Arrays are ``(N, C, *spatial)``; ``Dims`` holds one int per spatial dim and ``Pads`` a
``(before, after)`` pair per spatial dim.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np

from mininn.nn.functional._utils import as_strided, xp_of

__all__ = ["Dims", "Pads", "interior", "pad_zeros", "windows", "im2col", "taps", "tap", "col2im",
           "col2im_add", "out_size"]

Dims = tuple[int, ...]  # one int per spatial dim
Pads = tuple[tuple[int, int], ...]  # (before, after) per spatial dim

_ALL2 = (slice(None), slice(None))  # the batch and channel axes


def interior(pads: Pads, sizes: Dims) -> tuple[slice, ...]:
    """The index of the unpadded input inside an array padded by ``pads``."""
    return _ALL2 + tuple(slice(a, a + s) for (a, _), s in zip(pads, sizes))


def pad_zeros(x: Any, pads: Pads) -> Any:
    """Zero-pad the spatial axes of an ``(N, C, *spatial)`` array (``x`` itself if no padding)."""
    if not any(a or b for a, b in pads):
        return x
    shape = x.shape[:2] + tuple(s + a + b for s, (a, b) in zip(x.shape[2:], pads))
    out = xp_of(x).zeros(shape, dtype=x.dtype)
    out[interior(pads, x.shape[2:])] = x
    return out


def windows(x: Any, kernel: Dims, stride: Dims, dilation: Dims, out_sz: Dims,
            channels_first: bool = False) -> Any:
    """Receptive fields of a padded ``(N, C, *spatial)`` array: an ``(N, C, *kernel, *out)`` view.

    With ``channels_first`` the view is ``(C, *kernel, N, *out)``.
    """
    s_n, s_c, *s_sp = x.strides
    tap_strides = tuple(s * d for s, d in zip(s_sp, dilation))
    pix_strides = tuple(s * st for s, st in zip(s_sp, stride))
    if channels_first:
        shape = (x.shape[1],) + kernel + (x.shape[0],) + out_sz
        strides = (s_c,) + tap_strides + (s_n,) + pix_strides
    else:
        shape = x.shape[:2] + kernel + out_sz
        strides = (s_n, s_c) + tap_strides + pix_strides
    if type(x) is np.ndarray and x.flags.c_contiguous:  # the same view, built several times faster
        view = np.ndarray(shape, x.dtype, x, 0, strides)
        view.flags.writeable = False
        return view
    return as_strided(x, shape, strides)


def im2col(x: Any, kernel: Dims, stride: Dims, dilation: Dims, out_sz: Dims) -> Any:
    """Receptive fields of a padded ``(N, C, *spatial)`` array as an ``(N, C, *kernel, *out)`` array."""
    return xp_of(x).ascontiguousarray(windows(x, kernel, stride, dilation, out_sz))


def taps(kernel: Dims) -> Iterator[Dims]:
    """Every kernel position, row-major."""
    return itertools.product(*(range(k) for k in kernel))


def tap(offsets: Dims, out_sz: Dims, stride: Dims, dilation: Dims) -> tuple[slice, ...]:
    """The view of a padded ``(N, C, *spatial)`` input that kernel position ``offsets`` reads,
    for every output position."""
    return _ALL2 + tuple(
        slice(o * d, o * d + s * (n - 1) + 1, s) for o, n, s, d in zip(offsets, out_sz, stride, dilation)
    )


def col2im(cols: Any, padded: Dims, stride: Dims, dilation: Dims) -> Any:
    """Sum ``(N, C, *kernel, *out)`` columns back into an ``(N, C, *padded)`` array."""
    out = xp_of(cols).zeros(cols.shape[:2] + tuple(padded), dtype=cols.dtype)
    col2im_add(cols, out, stride, dilation)
    return out


def col2im_add(cols: Any, out: Any, stride: Dims, dilation: Dims) -> None:
    """Add ``(N, C, *kernel, *out)`` columns into ``out``, whose first element output 0 reads."""
    nd = out.ndim - 2
    kernel, out_sz = cols.shape[2 : 2 + nd], cols.shape[2 + nd :]
    for offsets in taps(kernel):
        out[tap(offsets, out_sz, stride, dilation)] += cols[_ALL2 + offsets]


def out_size(size: int, pad: int, k: int, s: int, d: int) -> int:
    """The output length of a window ``k`` (dilation ``d``) sliding by ``s`` over ``size + pad``."""
    return (size + pad - d * (k - 1) - 1) // s + 1
