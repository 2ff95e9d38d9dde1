"""Spatial transformers: ``affine_grid`` and ``grid_sample``.

``affine_grid`` maps a base grid of normalised pixel centres through one
affine matrix per batch item (one batched matrix product; its gradient is
another). ``grid_sample`` reads ``input`` at the grid's points. Along each
spatial axis a point becomes a few taps (one for nearest, two for bilinear,
four for bicubic), each an integer index, an in-bounds mask, a weight and
the weight's derivative; the output sums the taps' products over all axes,
gathered from the flattened input in one vectorised step per tap. The input
gradient scatters the same weighted taps back with one ``bincount``; the grid
gradient sums the weight derivatives times the gathered values.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

import functools
import itertools
import math
import operator
import warnings
from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import kernel_dtype_error, scalar_name, xp_of
from mininn.tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please "
    "specify align_corners=True if the old behavior is desired. See the documentation of grid_sample for "
    "details."
)
_CUBIC_A = -0.75


def _default_align(align_corners: bool | None) -> bool:
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=3)
        return False
    return align_corners


# ---- affine_grid ------------------------------------------------------------------------------------


def _base_axis(steps: int, align_corners: bool, dtype: Any) -> np.ndarray:
    """Normalised centres of ``steps`` pixels in ``[-1, 1]`` (0 for a single pixel)."""
    if steps <= 1:
        return np.zeros(1, dtype=dtype)
    line = np.linspace(-1, 1, steps, dtype=np.float64)
    if not align_corners:
        line = line * (steps - 1) / steps
    return line.astype(dtype)


def _base_grid(spatial: tuple[int, ...], align_corners: bool, dtype: Any) -> np.ndarray:
    """``(prod(spatial), k + 1)`` rows ``(x, y[, z], 1)``; x runs along the last spatial axis."""
    axes = [_base_axis(n, align_corners, dtype) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # one array per spatial axis, (D,) H, W
    cols = [m.ravel() for m in reversed(mesh)] + [np.ones(math.prod(spatial), dtype=dtype)]
    return np.stack(cols, axis=1)


class _AffineGrid(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, theta: Any, base: Any, spatial: tuple[int, ...]) -> Any:
        ctx.base = base
        out = base @ theta.transpose(0, 2, 1)  # (P, k+1) @ (N, k+1, k) -> (N, P, k)
        return out.reshape((theta.shape[0],) + spatial + (theta.shape[1],))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        n, k = g.shape[0], g.shape[-1]
        flat = g.reshape(n, -1, k)
        return flat.transpose(0, 2, 1) @ ctx.base, None, None  # (N, k, P) @ (P, k+1)


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """Sampling grid of ``size`` (``(N, C, H, W)`` or ``(N, C, D, H, W)``) for ``grid_sample``.

    ``theta`` is ``(N, 2, 3)`` (2-D) or ``(N, 3, 4)`` (3-D); the grid holds ``theta @ (x, y[, z], 1)``
    for each output pixel's normalised centre, shaped ``(N, H, W, 2)`` or ``(N, D, H, W, 3)``.
    """
    align = _default_align(align_corners)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    rank = len(size) - 2
    if rank in (2, 3):
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (rank, rank + 1):
            kind = "Nx2x3" if rank == 2 else "Nx3x4"
            raise ValueError(
                f"Expected a batch of {rank}D affine matrices of shape {kind} for size {size}. "
                f"Got {theta.shape}."
            )
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
            f"Got size {size}."
        )
    spatial = tuple(int(n) for n in size[2:])
    if align and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the documentation of "
            "affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"[{size[0]}, {rank + 1}] but got: [{theta.shape[0]}, {rank + 1}]."
        )
    base = xp_of(theta._data).asarray(_base_grid(spatial, align, theta._data.dtype))
    return _AffineGrid.apply(theta, base, spatial)


# ---- grid_sample: per-axis taps ---------------------------------------------------------------------


def _unnormalize(coord: Any, size: int, align_corners: bool) -> tuple[Any, float]:
    """Grid values in ``[-1, 1]`` to pixel coordinates, and the derivative of that map."""
    t = coord.dtype.type
    if align_corners:
        return (coord + t(1)) / t(2) * t(size - 1), (size - 1) / 2
    return ((coord + t(1)) * t(size) - t(1)) / t(2), size / 2


def _clip(coord: Any, size: int) -> tuple[Any, Any]:
    """Clamp to ``[0, size - 1]``; the derivative is 0 at and beyond the ends (torch's convention)."""
    inside = (coord > 0) & (coord < size - 1)
    return np.clip(coord, 0, size - 1), inside.astype(coord.dtype)


def _reflect(coord: Any, twice_low: int, twice_high: int) -> tuple[Any, Any]:
    """Fold ``coord`` into ``[twice_low / 2, twice_high / 2]`` by reflections, with its derivative (+-1)."""
    t = coord.dtype.type
    if twice_low == twice_high:
        return np.zeros_like(coord), np.zeros_like(coord)
    low, span = t(twice_low / 2), t((twice_high - twice_low) / 2)
    dist = coord - low
    sign = np.where(dist < 0, t(-1), t(1))
    dist = np.abs(dist)
    extra = np.fmod(dist, span)
    even = np.floor(dist / span) % 2 == 0
    return np.where(even, extra + low, span - extra + low), sign * np.where(even, t(1), t(-1))


def _pad_coordinate(coord: Any, size: int, padding_mode: str, align_corners: bool) -> tuple[Any, Any]:
    """Apply ``border``/``reflection`` padding to pixel coordinates, with the derivative."""
    if padding_mode == "zeros":
        return coord, None
    grad = None
    if padding_mode == "reflection":
        if align_corners:
            coord, grad = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord, grad = _reflect(coord, -1, 2 * size - 1)
    coord, clip_grad = _clip(coord, size)
    return coord, clip_grad if grad is None else grad * clip_grad


def _cubic_weights(t: Any) -> tuple[list[Any], list[Any]]:
    """Keys' cubic weights of the taps at offsets -1..2 and their derivatives with respect to ``t``."""
    a = t.dtype.type(_CUBIC_A)
    one, two = t.dtype.type(1), t.dtype.type(2)

    def near(x: Any) -> Any:
        return ((a + 2) * x - (a + 3)) * x * x + one

    def far(x: Any) -> Any:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    def d_near(x: Any) -> Any:
        return (3 * (a + 2) * x - 2 * (a + 3)) * x

    def d_far(x: Any) -> Any:
        return (3 * a * x - 10 * a) * x + 8 * a

    weights = [far(t + one), near(t), near(one - t), far(two - t)]
    grads = [d_far(t + one), d_near(t), -d_near(one - t), -d_far(two - t)]
    return weights, grads


class _Tap:
    """One tap along one axis: integer index, in-bounds mask, weight and ``d weight / d grid``."""

    __slots__ = ("index", "valid", "weight", "dweight")

    def __init__(self, coord: Any, size: int, weight: Any, dweight: Any) -> None:
        self.valid = (coord >= 0) & (coord < size)
        self.index = np.where(self.valid, coord, 0).astype(np.int64)
        self.weight = weight
        self.dweight = dweight


def _axis_taps(coord: Any, size: int, mode: str, padding_mode: str, align_corners: bool) -> list[_Tap]:
    pix, mult = _unnormalize(coord, size, align_corners)
    if mode == "bicubic":  # padding applies to each tap's integer position
        base = np.floor(pix)
        weights, grads = _cubic_weights(pix - base)
        taps = []
        for k in range(4):
            pos, _ = _pad_coordinate(base + (k - 1), size, padding_mode, align_corners)
            taps.append(_Tap(np.trunc(pos), size, weights[k], grads[k] * coord.dtype.type(mult)))
        return taps
    pix, pad_grad = _pad_coordinate(pix, size, padding_mode, align_corners)
    chain = coord.dtype.type(mult) if pad_grad is None else pad_grad * coord.dtype.type(mult)
    one = coord.dtype.type(1)
    if mode == "nearest":
        return [_Tap(np.rint(pix), size, np.ones_like(pix), None)]  # rint: ties to even, as nearbyint
    base = np.floor(pix)
    frac = pix - base
    return [_Tap(base, size, one - frac, -chain), _Tap(base + one, size, frac, chain)]


def _combined(axis_taps: list[list[_Tap]], spatial: tuple[int, ...]) -> list[tuple[Any, Any, Any, list[Any]]]:
    """Every combination of one tap per axis: ``(flat index, in bounds, weight, the taps)``."""
    strides = [math.prod(spatial[a + 1:]) for a in range(len(spatial))]
    out = []
    for combo in itertools.product(*axis_taps):
        index = sum(tap.index * s for tap, s in zip(combo, strides))
        valid = functools.reduce(operator.and_, [tap.valid for tap in combo])
        weight = math.prod(tap.weight for tap in combo)
        out.append((index, valid, weight, list(combo)))
    return out


def _gather(flat: Any, index: Any, valid: Any) -> Any:
    """``flat[n, :, index[n, p]]`` as ``(N, C, P)``, zero where the tap is out of bounds."""
    vals = np.take_along_axis(flat, index[:, None, :], axis=2)
    return vals if valid.all() else np.where(valid[:, None, :], vals, vals.dtype.type(0))


class _GridSample(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, grid: Any, mode: str, padding_mode: str, align_corners: bool) -> Any:
        n, c, *spatial = x.shape
        out_spatial = grid.shape[1:-1]
        rank = len(spatial)
        coords = grid.reshape(n, -1, rank)
        # grid's last dim is (x, y[, z]): coordinate k addresses spatial axis rank - 1 - k
        taps = [_axis_taps(coords[..., rank - 1 - a], spatial[a], mode, padding_mode, align_corners)
                for a in range(rank)]
        combos = _combined(taps, tuple(spatial))
        flat = x.reshape(n, c, -1)
        out = xp_of(x).zeros((n, c, coords.shape[1]), dtype=x.dtype)
        for index, valid, weight, _ in combos:
            out += _gather(flat, index, valid) * weight[:, None, :]
        ctx.save_for_backward(x)
        ctx.meta = (combos, rank, grid.shape, mode)
        return out.reshape((n, c) + tuple(out_spatial))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (x,) = ctx.saved_tensors
        combos, rank, grid_shape, mode = ctx.meta
        n, c = x.shape[:2]
        flat_g = g.reshape(n, c, -1)
        gx = _scatter(flat_g, combos, x.shape) if ctx.needs_input_grad[0] else None
        ggrid = None
        if ctx.needs_input_grad[1]:
            ggrid = xp_of(g).zeros((n, flat_g.shape[2], rank), dtype=g.dtype)
            if mode != "nearest":
                flat_x = x.reshape(n, c, -1)
                for index, valid, _, combo in combos:
                    gv = (_gather(flat_x, index, valid) * flat_g).sum(axis=1)  # (N, P)
                    for a in range(rank):
                        others = math.prod(t.weight for b, t in enumerate(combo) if b != a)
                        ggrid[..., rank - 1 - a] += gv * combo[a].dweight * others
            ggrid = ggrid.reshape(grid_shape)
        return gx, ggrid, None, None, None


def _scatter(flat_g: Any, combos: list[tuple[Any, Any, Any, list[Any]]], x_shape: tuple[int, ...]) -> Any:
    """Sum ``g * weight`` of every in-bounds tap into the input positions it read (one bincount)."""
    xp = xp_of(flat_g)
    n, c, p = flat_g.shape
    size = math.prod(x_shape[2:])
    rows = (xp.arange(n)[:, None, None] * c + xp.arange(c)[None, :, None]) * size  # (N, C, 1)
    idx, wts = [], []
    for index, valid, weight, _ in combos:
        idx.append((rows + index[:, None, :]).ravel())
        wts.append((flat_g * np.where(valid, weight, 0)[:, None, :]).ravel())
    total = xp.bincount(xp.concatenate(idx), weights=xp.concatenate(wts).astype(np.float64),
                        minlength=n * c * size)
    return total.astype(flat_g.dtype).reshape(x_shape)


# ---- grid_sample: public -----------------------------------------------------------------------------


def _check_grid_sample(input: Tensor, grid: Tensor, mode: str) -> None:
    sizes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid and input to have same batch size, but got {sizes}"
        )
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got "
            f"grid with sizes {list(grid.shape)}"
        )
    for i in range(2, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes "
                f"{list(input.shape)} with dimension {i} being empty"
            )
    rank = 2 if input.ndim == 4 else 3
    if input.ndim != grid.ndim or input.ndim not in (4, 5):
        raise RuntimeError(
            f"grid_sampler(): expected {rank + 2}D input and grid with same number of dimensions, "
            f"but got {sizes}"
        )
    if mode == "bicubic" and rank == 3:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {scalar_name(input)} but found {scalar_name(grid)}")
    if not input.dtype.is_floating_point:
        kernel = "grid_sampler_2d_cpu_kernel_impl" if rank == 2 else "grid_sampler3d_cpu"
        raise kernel_dtype_error(kernel, input)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` ``(N, C, H, W)`` at ``grid`` ``(N, Ho, Wo, 2)`` points (or the 5-D analogues).

    Args:
        input: 4-D or 5-D tensor.
        grid: normalised ``(x, y[, z])`` coordinates, ``-1`` and ``1`` being the outer edges (or the
            corner pixel centres with ``align_corners``).
        mode: ``bilinear`` (default; trilinear on 5-D), ``nearest`` or ``bicubic`` (4-D only).
        padding_mode: what lies outside: ``zeros`` (default), ``border`` (edge values) or
            ``reflection`` (mirrored input).
        align_corners: see ``grid``; None warns and means False, as in torch.
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
            f"but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'"
        )
    align = _default_align(align_corners)
    _check_grid_sample(input, grid, mode)
    return _GridSample.apply(input, grid, mode, padding_mode, align)
