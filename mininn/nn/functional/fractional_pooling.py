"""Fractional max pooling: ``fractional_max_pool2d/3d`` (+ ``_with_indices``).

Along each spatial axis, output ``i`` pools ``kernel`` inputs from a start that
grows by a fractional step ``alpha = (size - kernel) / (out - 1)``:
``start_i = int((i + u) * alpha) - int(u * alpha)``, the last window ending at the
input's edge. ``u`` is one uniform sample per plane and axis (``_random_samples``,
drawn when not given), computed in the input's dtype as torch does, so given
samples reproduce torch's outputs exactly. The windows are gathered at once and
the first maximum of each wins.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._factories import rand
from mininn.nn.functional._utils import ntuple, per_dim, xp_of
from mininn.nn.functional.pooling import ValuesAt, window_argmax
from mininn.tensor import Tensor

__all__ = [
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
]

Dims = tuple[int, ...]
# torch's names of each axis in its messages (its 3-D check calls the height "width" too)
_AXIS_NAMES = {2: ("height", "width"), 3: ("time", "width", "width")}


def _starts(samples: Any, size: int, out: int, kernel: int) -> Any:
    """``(N, C, out)`` window starts along one axis from ``(N, C)`` samples (in the input's dtype)."""
    xp = xp_of(samples)
    last = xp.full(samples.shape + (1,), size - kernel, dtype=np.int64)
    if out <= 1:
        return last[..., :out]
    dtype = samples.dtype.type
    alpha = dtype(size - kernel) / dtype(out - 1)
    i = xp.arange(out - 1).astype(samples.dtype)
    offset = (samples * alpha).astype(np.int64)[..., None]
    starts = ((i + samples[..., None]) * alpha).astype(np.int64) - offset
    return xp.concatenate([starts, last], axis=-1)


def _size_arg(fn: str, name: str, value: Any, nd: int) -> Dims:
    values = per_dim(value, nd)
    if len(values) != nd:
        raise RuntimeError(f"{fn}: {name} must either be a single Int or tuple of Ints")
    return values


def _check_samples(samples: Tensor, input: Tensor, nd: int) -> None:
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    batch = input.shape[0] if input.ndim == nd + 2 else 1
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != input.shape[-nd - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")


def _fractional(input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any, samples: Tensor | None,
                nd: int) -> tuple[Tensor, Tensor]:
    fn = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fn} requires specifying either an output_size or an output_ratio")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fn}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    in_sz = tuple(input.shape[-nd:])
    if output_size is None:
        ratio = ntuple(nd)(output_ratio)
        output_size = [int(s * r) for s, r in zip(in_sz, ratio)]
    kernel = _size_arg(fn, "kernel_size", kernel_size, nd)
    out_sz = _size_arg(fn, "output_size", output_size, nd)
    where = f"{fn}()" if nd == 2 else f"{fn}_out()"
    for axis in (range(nd - 1, -1, -1) if nd == 2 else range(nd)):  # torch: 2-D checks the width first
        if out_sz[axis] + kernel[axis] - 1 > in_sz[axis]:
            name = _AXIS_NAMES[nd][axis]
            raise RuntimeError(
                f"{where}: pool {name} {kernel[axis]} too large relative to input {name} {in_sz[axis]}"
            )
    x = input.unsqueeze(0) if input.ndim == nd + 1 else input
    if samples is None:
        samples = rand(x.shape[0], x.shape[1], nd, dtype=input.dtype, device=input.device)
    _check_samples(samples, input, nd)
    u = samples._data[: x.shape[0]]  # (N, C, nd): u[..., 0] is the last axis for 2-D, the first for 3-D
    order = (1, 0) if nd == 2 else (0, 1, 2)
    positions = []
    for axis in range(nd):
        starts = _starts(u[..., order[axis]], in_sz[axis], out_sz[axis], kernel[axis])
        positions.append(starts[..., None] + xp_of(starts).arange(kernel[axis]))  # (N, C, out, kernel)
    idx = window_argmax(x._data, positions)
    out = ValuesAt.apply(x, idx)
    indices = Tensor(idx)
    if input.ndim == nd + 1:
        return out.squeeze(0), indices.squeeze(0)
    return out, indices


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``fractional_max_pool2d`` that always returns ``(output, indices)``."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Max over ``kernel_size`` windows of ``(N, C, H, W)`` at pseudo-random fractional strides.

    Give ``output_size`` or ``output_ratio`` (a fraction of the input size); ``_random_samples``
    (``(N, C, 2)`` in ``[0, 1)``, the input's dtype) fixes the windows.
    """
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``fractional_max_pool3d`` that always returns ``(output, indices)``."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                          return_indices: bool = False, _random_samples: Tensor | None = None) -> Any:
    """Max over ``kernel_size`` windows of ``(N, C, D, H, W)`` at pseudo-random fractional strides.

    Give ``output_size`` or ``output_ratio``; ``_random_samples`` (``(N, C, 3)``) fixes the windows.
    """
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (out, idx) if return_indices else out
