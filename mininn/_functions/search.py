"""Searching and set ops (no gradients): ``unique``, ``unique_consecutive``,
``searchsorted``, ``bucketize``, ``isin``, ``argwhere``, ``isneginf``/``isposinf``/``isreal``.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions._util import wrap_dim
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import wrap


def _raw(x: Any) -> Any:
    return x._data if isinstance(x, TensorCore) else np.asarray(x)


def _with_extras(values: Any, inverse: Any, counts: Any, return_inverse: bool, return_counts: bool) -> Any:
    out = [wrap(values)]
    if return_inverse:
        out.append(wrap(inverse.astype(np.int64)))
    if return_counts:
        out.append(wrap(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def unique(input: Any, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
           dim: int | None = None) -> Any:
    """The distinct values (sorted), optionally with the inverse indices and the counts; with ``dim``,
    the distinct slices along it."""
    a = input._data
    axis = None if dim is None else wrap_dim(dim, a.ndim)
    values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=axis)
    inverse = inverse.reshape(a.shape) if axis is None else inverse.reshape(-1)
    return _with_extras(values, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input: Any, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """Each run of equal consecutive values (or slices along ``dim``) collapsed to one."""
    a = input._data
    if dim is None:
        flat = a.reshape(-1)
        starts = np.ones(flat.shape, bool)
        starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
        inverse = (np.cumsum(starts) - 1).reshape(a.shape)
    else:
        axis = wrap_dim(dim, a.ndim)
        moved = np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1)
        starts = np.ones(len(moved), bool)
        starts[1:] = np.any(moved[1:] != moved[:-1], axis=1)
        values = np.compress(starts, a, axis=axis)
        inverse = np.cumsum(starts) - 1
    counts = np.diff(np.append(np.flatnonzero(starts), starts.size))
    return _with_extras(values, inverse, counts, return_inverse, return_counts)


def searchsorted(sorted_sequence: Any, input: Any, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Any = None) -> Any:
    """Where each value of ``input`` would be inserted into ``sorted_sequence`` (each of its rows for an
    N-D sequence) to keep it sorted."""
    seq, values = _raw(sorted_sequence), _raw(input)
    if sorter is not None:
        seq = np.take_along_axis(seq, _raw(sorter), axis=-1)
    how = side if side is not None else ("right" if right else "left")
    dtype = np.int32 if out_int32 else np.int64
    if seq.ndim == 1:
        return wrap(np.asarray(np.searchsorted(seq, values, side=how)).astype(dtype))
    if seq.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
            "boundaries tensor and input value tensor must match, but we got boundaries tensor "
            f"{list(seq.shape)} and input value tensor {list(values.shape)}"
        )
    # one flat search: shift each row past the previous rows' range
    rows = seq.reshape(-1, seq.shape[-1]).astype(np.float64)
    vals = values.reshape(len(rows), -1).astype(np.float64)
    span = max(np.nanmax(np.abs(rows)) if rows.size else 0, np.nanmax(np.abs(vals)) if vals.size else 0)
    offset = (2 * span + 1) * np.arange(len(rows))[:, None]
    flat = np.searchsorted((rows + offset).reshape(-1), (vals + offset).reshape(-1), side=how)
    out = flat.reshape(vals.shape) - seq.shape[-1] * np.arange(len(rows))[:, None]
    return wrap(out.reshape(values.shape).astype(dtype))


def bucketize(input: Any, boundaries: Any, *, out_int32: bool = False, right: bool = False) -> Any:
    """The index of the bucket of each value: ``boundaries[i-1] < x <= boundaries[i]`` (``<=``, ``<`` with
    ``right``)."""
    if _raw(boundaries).ndim != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({_raw(boundaries).ndim})"
        )
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _operand(fn: str, name: str, value: Any, scalar_name: str, scalar: Any) -> Any:
    """``value``, or torch's scalar spelling of it (``scalar_name=scalar``); exactly one."""
    if (value is None) == (scalar is None):
        raise TypeError(f"{fn}() takes exactly one of {name} or {scalar_name}")
    return value if scalar is None else scalar


def isin(elements: Any = None, test_elements: Any = None, *, assume_unique: bool = False,
         invert: bool = False, element: Any = None, test_element: Any = None) -> Any:
    """True where an element of ``elements`` occurs in ``test_elements``.

    torch spells a scalar operand ``element`` or ``test_element`` when passed by keyword.
    """
    elements = _operand("isin", "elements", elements, "element", element)
    test_elements = _operand("isin", "test_elements", test_elements, "test_element", test_element)
    return wrap(np.isin(_raw(elements), _raw(test_elements), invert=invert))


def argwhere(input: Any) -> Any:
    """The indices of the non-zero elements, one row each."""
    return wrap(np.argwhere(input._data).astype(np.int64))


def isposinf(input: Any) -> Any:
    """True where the value is +inf."""
    a = input._data
    return wrap(np.isposinf(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool))


def isneginf(input: Any) -> Any:
    """True where the value is -inf."""
    a = input._data
    return wrap(np.isneginf(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool))


def isreal(input: Any) -> Any:
    """True where the imaginary part is zero (everywhere for real tensors)."""
    a = input._data
    return wrap(a.imag == 0 if a.dtype.kind == "c" else np.ones(a.shape, bool))


def unravel_index(indices: Any, shape: Any) -> tuple[Any, ...]:
    """The coordinates in ``shape`` of each flat index, one tensor per dim."""
    idx = _raw(indices)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if idx.dtype.kind not in "iu":
        raise TypeError("expected 'indices' to be integer dtype, but got " + str(idx.dtype))
    size = int(np.prod(dims))
    if np.any((idx < -size) | (idx >= size)):
        raise RuntimeError("index out of range")
    coords = np.unravel_index(np.where(idx < 0, idx + size, idx), dims)
    return tuple(wrap(np.asarray(c, dtype=np.int64)) for c in coords)


def nonzero_static(input: Any, *, size: int, fill_value: int = -1) -> Any:
    """``nonzero(input)`` cut or padded (with ``fill_value``) to exactly ``size`` rows."""
    found = np.argwhere(input._data).astype(np.int64)[:size]
    pad = np.full((size - len(found), input._data.ndim), fill_value, np.int64)
    return wrap(np.concatenate([found, pad]))
