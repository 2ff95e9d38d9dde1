"""Resampling: ``interpolate`` and the deprecated ``upsample``, ``upsample_nearest``, ``upsample_bilinear``.

Every mode but the nearest ones is separable: along each spatial axis the
output is a fixed linear map of the input, an ``(out, in)`` weight matrix
(two taps per row for the linear modes, four for bicubic, one bin average
per row for area). The forward applies one matrix per axis as a matrix
product, so BLAS does the work (a 4x bilinear upsample of ``(8, 64, 64, 64)``
runs at torch's speed); the backward applies the transposes. The nearest
modes gather with one index array per axis (exact for every dtype, ``inf``
included) and sum gradients back through the same map as one-hot matrices.

With ``antialias`` a row holds the mode's kernel stretched over the
downscaled footprint, normalised to sum to one.

Source coordinates follow torch's CPU kernels, in the input's precision:
``scale * (dst + 0.5) - 0.5`` (or ``scale * dst`` with ``align_corners``),
where ``scale`` is ``1 / scale_factor`` when a factor is given and not
recomputed, else ``in / out``.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import kernel_dtype_error, xp_of
from mininn.tensor import Tensor

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_RANK_OF_MODE = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "lanczos": 2}
_RANK_MESSAGE_MODES = ("linear", "bilinear", "trilinear")  # the others fall through to "Input Error"
_AXIS_NAMES = ("D", "H", "W")
# torch's kernel names in its "not implemented for 'Long'" messages, by (mode, spatial rank)
_KERNEL_NAMES = {
    ("nearest", 2): "upsample_nearest2d_channels_last",
    ("bilinear", 2): "upsample_bilinear2d_channels_last",
    ("bicubic", 2): "compute_indices_weights_cubic",
    ("linear", 1): "compute_indices_weights_linear",
    ("trilinear", 3): "compute_indices_weights_linear",
    ("area", 1): "adaptive_avg_pool2d",
    ("area", 2): "adaptive_avg_pool2d",
    ("area", 3): "adaptive_avg_pool3d_cpu",
}
_CUBIC_A = -0.75


# ---- arguments --------------------------------------------------------------------------------


# torch's messages for a size or scale_factor sequence whose length is not the number of spatial dims
_SIZE_RANK_MESSAGE = (
    "Input and output must have the same number of spatial dimensions, but got input with spatial "
    "dimensions of {spatial} and output size of {value}. Please provide input tensor in (N, C, d1, d2, "
    "...,dK) format and output size in (o1, o2, ...,oK) format."
)
_SCALE_RANK_MESSAGE = (
    "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
    "dimensions of {spatial} and scale_factor of shape {value}. Please provide input tensor in (N, C, d1, "
    "d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
)


def _per_axis(value: Any, rank: int, spatial: list[int], message: str) -> tuple[Any, ...]:
    """``value`` for each of the ``rank`` spatial axes: a list or tuple of that length, or one value
    repeated."""
    if not isinstance(value, (list, tuple)):
        return (value,) * rank
    if len(value) != rank:
        raise ValueError(message.format(spatial=spatial, value=value))
    return tuple(value)


def _output_geometry(input: Tensor, rank: int, size: Any, scale_factor: Any, recompute: bool | None,
                     mode: str) -> tuple[tuple[int, ...], tuple[float | None, ...]]:
    """Output spatial size and the per-axis scale factors the kernels see (None: use in / out)."""
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = _per_axis(size, rank, spatial, _SIZE_RANK_MESSAGE)
        if not all(isinstance(s, (int, np.integer)) for s in sizes):
            raise TypeError(
                "expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], "
                f"but got size with types {[type(s) for s in sizes]}"
            )
        if recompute:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return tuple(int(s) for s in sizes), (None,) * rank
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    factors = tuple(float(f) for f in _per_axis(scale_factor, rank, spatial, _SCALE_RANK_MESSAGE))
    sizes = tuple(math.floor(float(n) * f) for n, f in zip(spatial, factors))
    if recompute or mode == "area":
        return sizes, (None,) * rank
    return sizes, factors


def _check_mode_and_rank(mode: str, ndim: int, antialias: bool, align_corners: bool | None) -> None:
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and ndim == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
            "4-D tensor as input"
        )
    wanted = _RANK_OF_MODE.get(mode)
    if wanted is not None and ndim - 2 != wanted and 3 <= ndim <= 5 and mode in _RANK_MESSAGE_MODES:
        raise NotImplementedError(f"Got {ndim}D input, but {mode} mode needs {wanted + 2}D input")
    known = mode in ("nearest", "nearest-exact", "area") or (wanted is not None and ndim - 2 == wanted)
    if not known or not 3 <= ndim <= 5:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the modes: {_MODES} "
            f"(got {mode})"
        )
    if mode == "lanczos" and align_corners:
        raise ValueError("Lanczos mode does not support align_corners=True")
    if mode == "lanczos" and not antialias:
        raise ValueError("Lanczos mode requires antialias=True")


def _check_sizes(input: Tensor, sizes: tuple[int, ...]) -> None:
    """torch's shape checks of the upsampling kernels (area mode, adaptive pooling, has none)."""
    spatial = tuple(input.shape[2:])
    if any(n <= 0 for n in spatial + sizes):
        names = _AXIS_NAMES[-len(sizes):]
        src = ", ".join(f"{a}: {n}" for a, n in zip(names, spatial))
        dst = ", ".join(f"{a}: {n}" for a, n in zip(names, sizes))
        joint = " and output" if len(sizes) == 1 else " output"
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({src}){joint} ({dst})"
        )
    if any(n == 0 for n in input.shape[1:]):
        raise RuntimeError(
            f"Non-empty {input.ndim}D data tensor expected but got a tensor with sizes {list(input.shape)}"
        )


def _check_dtype(input: Tensor, mode: str, rank: int, antialias: bool) -> None:
    if input.dtype.is_floating_point:
        return
    if mode in ("nearest", "nearest-exact") and input.dtype.name == "uint8":
        return
    if input.dtype.name == "uint8" and rank == 2 and mode in ("bilinear", "bicubic", "lanczos"):
        # torch rounds these in fixed point; mininn does not reproduce that
        raise NotImplementedError(
            f"interpolate(mode='{mode}') of a uint8 tensor is not supported by mininn; convert it to float"
        )
    base = "nearest" if mode == "nearest-exact" else mode
    kernel = _KERNEL_NAMES.get((base, rank), "compute_indices_weights_nearest")
    if antialias:
        kernel = "compute_index_ranges_weights"
    raise kernel_dtype_error(kernel, input)


# ---- per-axis maps ------------------------------------------------------------------------------


def _nearest_index(n_in: int, n_out: int, scale: float | None, exact: bool,
                   single: bool = False) -> np.ndarray:
    """Source index of each output position: ``floor(dst * in / out)`` (``dst + 0.5`` when ``exact``).

    From a size the ratio is exact (integer arithmetic), except that ``nearest`` with
    ``single`` (torch's 2-D kernel, and the others below float64) steps by ``in / out`` in
    float32 as torch does (52 -> 22 maps output 11 to 25, not 26); from a scale
    factor the step is ``1 / scale_factor`` in float32, as in torch's kernels (which round a
    few positions that land within float32 precision of an integer differently).
    """
    dst = np.arange(n_out)
    if (scale is None or scale <= 0) and single and not exact and n_out not in (n_in, 2 * n_in):
        src = np.floor(dst.astype(np.float32) * (np.float32(n_in) / np.float32(n_out))).astype(np.int64)
    elif scale is None or scale <= 0:
        src = ((2 * dst + 1) * n_in) // (2 * n_out) if exact else (dst * n_in) // n_out
    else:
        pos = dst.astype(np.float32) + np.float32(0.5 if exact else 0.0)
        src = np.floor(pos * np.float32(1.0 / scale)).astype(np.int64)
    return np.minimum(src, n_in - 1)


def _source_coords(n_in: int, n_out: int, scale: float | None, align_corners: bool, cubic: bool,
                   dtype: Any) -> np.ndarray:
    """Continuous source coordinate of each output position, in the kernel's precision."""
    t = np.dtype(dtype).type
    dst = np.arange(n_out, dtype=dtype)
    if align_corners:
        step = t(n_in - 1) / t(n_out - 1) if n_out > 1 else t(0)
        return step * dst
    step = t(1.0 / scale) if scale is not None and scale > 0 else t(n_in) / t(n_out)
    src = step * (dst + t(0.5)) - t(0.5)
    return src if cubic else np.maximum(src, t(0))


def _linear_matrix(n_in: int, n_out: int, scale: float | None, align_corners: bool, dtype: Any) -> np.ndarray:
    src = _source_coords(n_in, n_out, scale, align_corners, False, dtype)
    lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    frac = np.clip(src - lo, 0, 1).astype(dtype)
    hi = np.minimum(lo + 1, n_in - 1)
    return _scatter_rows(n_in, np.stack([lo, hi], 1), np.stack([1 - frac, frac], 1), dtype)


def _cubic_coefficients(t: np.ndarray) -> np.ndarray:
    """Keys' cubic convolution weights (``A = -0.75``) of the taps at offsets -1, 0, 1, 2: ``(len(t), 4)``."""
    a = t.dtype.type(_CUBIC_A)

    def near(x: np.ndarray) -> np.ndarray:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: np.ndarray) -> np.ndarray:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one = t.dtype.type(1)
    return np.stack([far(t + one), near(t), near(one - t), far(2 * one - t)], 1)


def _cubic_matrix(n_in: int, n_out: int, scale: float | None, align_corners: bool, dtype: Any) -> np.ndarray:
    src = _source_coords(n_in, n_out, scale, align_corners, True, dtype)
    base = np.floor(src)
    taps = np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3), 0, n_in - 1)
    return _scatter_rows(n_in, taps, _cubic_coefficients((src - base).astype(dtype)), dtype)


def _area_matrix(n_in: int, n_out: int, dtype: Any) -> np.ndarray:
    """Row ``i`` averages adaptive pooling's bin ``[floor(i*in/out), ceil((i+1)*in/out))``."""
    i = np.arange(n_out)
    start = (i * n_in) // n_out
    end = -((-(i + 1) * n_in) // n_out)
    cols = np.arange(n_in)
    inside = (cols[None, :] >= start[:, None]) & (cols[None, :] < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def _antialias_filter(mode: str, x: np.ndarray) -> np.ndarray:
    """The resampling kernel of an anti-aliased mode (triangle, Keys cubic with ``a = -0.5``, Lanczos-3)."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.maximum(0.0, 1.0 - x)
    if mode == "bicubic":
        a = -0.5
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = (((x - 5) * x + 8) * x - 4) * a
        return np.where(x < 1, near, np.where(x < 2, far, 0.0))
    return np.where(x < 3, np.sinc(x) * np.sinc(x / 3), 0.0)


def _antialias_matrix(mode: str, n_in: int, n_out: int, scale: float | None, align_corners: bool,
                      dtype: Any) -> np.ndarray:
    """Each row: the kernel, widened by the downscale factor, over its input support, normalised to 1."""
    if align_corners:
        step = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        step = 1.0 / scale if scale is not None and scale > 0 else n_in / n_out
    half = {"bilinear": 1, "bicubic": 2, "lanczos": 3}[mode] * max(step, 1.0)
    stretch = 1.0 / step if step >= 1.0 else 1.0
    center = step * (np.arange(n_out) + 0.5)
    first = np.maximum(np.trunc(center - half + 0.5), 0)[:, None]
    end = np.minimum(np.trunc(center + half + 0.5), n_in)[:, None]
    cols = np.arange(n_in)[None, :]
    weights = _antialias_filter(mode, (cols - center[:, None] + 0.5) * stretch)
    weights = np.where((cols >= first) & (cols < end), weights, 0.0)
    total = weights.sum(axis=1, keepdims=True)
    return (weights / np.where(total == 0, 1.0, total)).astype(dtype)


def _scatter_rows(n_in: int, cols: np.ndarray, weights: np.ndarray, dtype: Any) -> np.ndarray:
    """An ``(out, in)`` matrix with ``weights[i, k]`` added at ``(i, cols[i, k])`` (clamped taps add up)."""
    n_out = cols.shape[0]
    flat = (np.arange(n_out)[:, None] * n_in + cols).ravel()
    summed = np.bincount(flat, weights=weights.ravel().astype(np.float64), minlength=n_out * n_in)
    return summed.reshape(n_out, n_in).astype(dtype)


def _one_hot(index: np.ndarray, n_in: int, dtype: Any) -> np.ndarray:
    mat = np.zeros((index.shape[0], n_in), dtype=dtype)
    mat[np.arange(index.shape[0]), index] = 1
    return mat


def _matrix(mode: str, n_in: int, n_out: int, scale: float | None, align_corners: bool, antialias: bool,
            dtype: Any) -> np.ndarray | None:
    """The mode's ``(out, in)`` map along one axis; None when it is the identity."""
    if antialias:
        mat = _antialias_matrix(mode, n_in, n_out, scale, align_corners, dtype)
    elif mode == "area":
        mat = _area_matrix(n_in, n_out, dtype)
    elif mode == "bicubic":
        mat = _cubic_matrix(n_in, n_out, scale, align_corners, dtype)
    else:
        mat = _linear_matrix(n_in, n_out, scale, align_corners, dtype)
    if n_in == n_out and np.array_equal(mat, np.eye(n_in, dtype=dtype)):
        return None
    return mat


# ---- kernels ------------------------------------------------------------------------------------


def _along(x: Any, mat: Any, axis: int) -> Any:
    """``mat`` ``(out, in)`` applied along ``axis`` of ``x``: one GEMM, or one per leading block."""
    shape = x.shape
    pre, n = math.prod(shape[:axis]), shape[axis]
    post = math.prod(shape[axis + 1:])
    if post == 1:
        y = x.reshape(pre, n) @ mat.T
    else:
        y = mat @ x.reshape(pre, n, post)
    return y.reshape(shape[:axis] + (mat.shape[0],) + shape[axis + 1:])


def _apply_maps(x: Any, mats: tuple[Any, ...]) -> Any:
    """Apply one map per spatial axis, last axis first (its product is a single large GEMM)."""
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    for k in reversed(range(len(mats))):
        if mats[k] is not None:
            work = _along(work, mats[k], 2 + k)
    if work is x:
        work = x.copy()
    return work.astype(x.dtype, copy=False)


class _Separable(ArrayFunction):
    """``mats`` map the forward; the gradient goes back through the transposes of ``grad_mats``."""

    @staticmethod
    def forward(ctx: Context, x: Any, mats: tuple[Any, ...], grad_mats: tuple[Any, ...]) -> Any:
        ctx.mats = grad_mats
        return _apply_maps(x, mats)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return _apply_maps(g, tuple(None if m is None else m.T for m in ctx.mats)), None, None


class _Nearest(ArrayFunction):
    """Gathers along each axis with ``index``; the gradient is summed back through ``grad_index``."""

    @staticmethod
    def forward(ctx: Context, x: Any, index: tuple[Any, ...], grad_index: tuple[Any, ...]) -> Any:
        ctx.meta = (grad_index, x.shape)
        xp = xp_of(x)
        out = x
        for k, idx in enumerate(index):
            if idx is not None:
                out = xp.take(out, xp.asarray(idx), axis=2 + k)
        return out.copy() if out is x else out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        index, shape = ctx.meta
        xp = xp_of(g)
        mats = tuple(None if idx is None else xp.asarray(_one_hot(idx, n, g.dtype).T)
                     for idx, n in zip(index, shape[2:]))
        return _apply_maps(g, mats), None, None


# ---- public ---------------------------------------------------------------------------------------


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resample the spatial dims of ``(N, C, *spatial)`` to ``size`` or by ``scale_factor``.

    Args:
        input: 3-D, 4-D or 5-D tensor (1, 2 or 3 spatial dims).
        size: output spatial size (int or one per spatial dim).
        scale_factor: multiplier of the spatial size (float or one per dim); the output size is
            ``floor(in * scale_factor)``.
        mode: ``nearest`` (default), ``nearest-exact``, ``linear`` (3-D), ``bilinear`` or ``bicubic``
            (4-D), ``trilinear`` (5-D), ``area`` (adaptive average pooling) or ``lanczos`` (4-D,
            anti-aliased only).
        align_corners: for the interpolating modes, map corner pixel centres onto each other
            (default False); must stay None for the others.
        recompute_scale_factor: derive the kernels' scale from the output size instead of using
            ``scale_factor`` itself.
        antialias: for ``bilinear``, ``bicubic`` and ``lanczos`` on 4-D input, widen the kernel by the
            downscale factor so that every input pixel contributes (PIL-style resizing).
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    rank = input.ndim - 2
    sizes, scales = _output_geometry(input, rank, size, scale_factor, recompute_scale_factor, mode)
    _check_mode_and_rank(mode, input.ndim, antialias, align_corners)
    if mode != "area":
        _check_sizes(input, sizes)
    _check_dtype(input, mode, rank, antialias)
    if mode in ("nearest", "nearest-exact"):
        return _interpolate_nearest(input, sizes, scales, mode == "nearest-exact")
    return _interpolate_separable(input, mode, sizes, scales, bool(align_corners), antialias)


def _interpolate_nearest(input: Tensor, sizes: tuple[int, ...], scales: tuple[float | None, ...],
                         exact: bool) -> Tensor:
    spatial = tuple(input.shape[2:])
    single = input.dtype.name != "float64" or len(sizes) == 2  # torch's 2-D kernel is float32 for float64 too
    index = tuple(None if n == m and not exact else _nearest_index(n, m, s, exact, single)
                  for n, m, s in zip(spatial, sizes, scales))
    # torch's 1-D and 3-D nearest forward kernels map even an axis of unchanged size (their
    # backward and the 2-D kernels pass it through)
    fwd = index if len(sizes) == 2 or exact else tuple(
        _nearest_index(n, m, s, exact, single) for n, m, s in zip(spatial, sizes, scales))
    return _Nearest.apply(input, fwd, index)


def _interpolate_separable(input: Tensor, mode: str, sizes: tuple[int, ...], scales: tuple[float | None, ...],
                           align_corners: bool, antialias: bool) -> Tensor:
    spatial = tuple(input.shape[2:])
    if mode == "area" and any(s < 0 for s in sizes):
        _raise_negative_area_size(sizes)
    dtype = np.float32 if input.dtype.name == "float16" else input._data.dtype
    xp = xp_of(input._data)
    mats = []
    for n, o, s in zip(spatial, sizes, scales):
        m = _matrix(mode, n, o, s, align_corners, antialias, dtype)
        mats.append(None if m is None else xp.asarray(m))
    # torch's kernels pass an axis of unchanged size straight through, whatever the scale, in some
    # directions: the linear modes both ways, anti-aliased ones forward only, bicubic backward only
    # (and only when no axis changes size)
    same = [n == o for n, o in zip(spatial, sizes)]
    linear = mode in ("linear", "bilinear", "trilinear") and not antialias
    fwd = tuple(None if keep and (linear or antialias) else m for m, keep in zip(mats, same))
    bwd = tuple(None if keep and linear else m for m, keep in zip(mats, same))
    if mode == "bicubic" and not antialias and all(same):
        bwd = (None,) * len(sizes)
    return _Separable.apply(input, fwd, bwd)


def _raise_negative_area_size(sizes: tuple[int, ...]) -> None:
    """Adaptive pooling's message: 1-D pools as 2-D with a height of 1; 3-D prints ``{d, h,w}``."""
    if len(sizes) == 3:
        shown, fn = f"{sizes[0]}, {sizes[1]},{sizes[2]}", "adaptive_avg_pool3d"
    else:
        shown, fn = ", ".join(map(str, (1,) * (2 - len(sizes)) + sizes)), "adaptive_avg_pool2d"
    raise RuntimeError(
        f"{fn}: elements of output_size must be greater than or equal to 0 but received {{{shown}}}"
    )


def _deprecated(name: str) -> None:
    message = f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead."
    warnings.warn(message, stacklevel=3)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate` (warns)."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="nearest")`` (warns)."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="bilinear", align_corners=True)`` (warns)."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
