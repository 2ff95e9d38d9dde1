"""Matrix structure: triangles (``tril``/``triu``) and diagonals (``diagonal``,
``diag``, ``diag_embed``, ``trace``), plus the index factories ``tril_indices``
and ``triu_indices``.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn import _dtype
from mininn._factories import _finish
from mininn._functions import inplace as IP
from mininn._functions._util import wrap_dim
from mininn._functions.elementwise import pow as pow_
from mininn._functions.reduction import sum as sum_
from mininn._functions.shape import reshape, unsqueeze
from mininn._layout import check_dense
from mininn.autograd.graph import ArrayFunction, Context, view_op
from mininn.autograd.graph import wrap as as_tensor  # fill_diagonal_ has torch's parameter `wrap`


class Triangle(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, k: int, lower: bool) -> Any:
        ctx.meta = (k, lower)
        return np.tril(a, k) if lower else np.triu(a, k)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        k, lower = ctx.meta
        return (np.tril(g, k) if lower else np.triu(g, k)), None, None


def _diag_positions(rows: int, cols: int, offset: int) -> tuple[Any, Any]:
    """Row and column indices of the diagonal ``offset`` of a rows x cols matrix."""
    n = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    i = np.arange(n)
    return (i, i + offset) if offset >= 0 else (i - offset, i)


@view_op
class Diagonal(ArrayFunction):
    """The diagonal ``offset`` of the matrices in dims ``d1``, ``d2``, as a new last dim."""

    @staticmethod
    def forward(ctx: Context, a: Any, offset: int, d1: int, d2: int) -> Any:
        ctx.meta = (a.shape, offset, d1, d2)
        out = np.diagonal(a, offset, d1, d2)
        # NumPy's diagonal is read-only; torch's is a view that in-place ops write through
        if type(out) is np.ndarray and a.flags.writeable:
            out.flags.writeable = True
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, offset, d1, d2 = ctx.meta
        out = np.zeros(shape, g.dtype)
        r, c = _diag_positions(shape[d1], shape[d2], offset)
        np.moveaxis(out, (d1, d2), (-2, -1))[..., r, c] = g
        return out, None, None, None


class DiagEmbed(ArrayFunction):
    """The last dim as the diagonal ``offset`` of new matrices in dims ``d1``, ``d2``."""

    @staticmethod
    def forward(ctx: Context, a: Any, offset: int, d1: int, d2: int) -> Any:
        n = a.shape[-1] + abs(offset)
        ndim = a.ndim + 1
        out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
        r, c = _diag_positions(n, n, offset)
        out[..., r, c] = a
        ctx.meta = (offset, d1, d2)
        # the two new dims sit last; move them to d1 and d2
        return np.moveaxis(out, (ndim - 2, ndim - 1), (d1, d2))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        offset, d1, d2 = ctx.meta
        return np.diagonal(g, offset, d1, d2).copy(), None, None, None


# ---- public functions (also bound as Tensor methods) -------------------------------------


def _triangle(input: Any, diagonal: int, lower: bool) -> Any:
    if input._data.ndim < 2:
        name = "tril" if lower else "triu"
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return Triangle.apply(input, int(diagonal), lower)


def tril(input: Any, diagonal: int = 0) -> Any:
    """The lower triangle of the last two dims (on and below diagonal ``diagonal``), zeros elsewhere."""
    return _triangle(input, diagonal, True)


def triu(input: Any, diagonal: int = 0) -> Any:
    """The upper triangle of the last two dims (on and above diagonal ``diagonal``), zeros elsewhere."""
    return _triangle(input, diagonal, False)


def tril_(self: Any, diagonal: int = 0) -> Any:
    """``tril`` in place."""
    return IP._apply(self, lambda s: tril(s, diagonal))


def triu_(self: Any, diagonal: int = 0) -> Any:
    """``triu`` in place."""
    return IP._apply(self, lambda s: triu(s, diagonal))


def diagonal(input: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """The diagonal ``offset`` of the matrices in dims ``dim1``, ``dim2``, as a new last dim."""
    n = input._data.ndim
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, int(offset), d1, d2)


def diag_embed(input: Any, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
    """Matrices with the last dim of ``input`` on their diagonal ``offset`` (dims ``dim1``, ``dim2``)."""
    n = input._data.ndim + 1
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return DiagEmbed.apply(input, int(offset), d1, d2)


def diag(input: Any, diagonal: int = 0) -> Any:
    """A 1-D tensor as a square matrix's diagonal, or a matrix's diagonal as a 1-D tensor."""
    ndim = input._data.ndim
    if ndim == 1:
        return DiagEmbed.apply(input, int(diagonal), 0, 1)
    if ndim == 2:
        return Diagonal.apply(input, int(diagonal), 0, 1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {ndim}D")


def trace(input: Any) -> Any:
    """The sum of a matrix's main diagonal."""
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    return sum_(Diagonal.apply(input, 0, 0, 1))


def _indices(row: int, col: int, offset: int, dtype: Any, device: Any, lower: bool) -> Any:
    dt = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    r, c = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    return _finish(np.stack([r, c]).astype(dt.np).reshape(2, -1), "cpu" if device is None else device, False)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None, pin_memory: bool | None = False, requires_grad: bool = False) -> Any:
    """The ``(2, N)`` row and column indices of the lower triangle of a ``row x col`` matrix."""
    check_dense(layout, pin_memory)
    return _indices(row, col, offset, dtype, device, True).requires_grad_(requires_grad)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None, pin_memory: bool | None = False, requires_grad: bool = False) -> Any:
    """The ``(2, N)`` row and column indices of the upper triangle of a ``row x col`` matrix."""
    check_dense(layout, pin_memory)
    return _indices(row, col, offset, dtype, device, False).requires_grad_(requires_grad)


def fill_diagonal_(self: Any, fill_value: Any, wrap: bool = False) -> Any:
    """Write ``fill_value`` on the main diagonal (of a tall matrix, restarting every ``cols + 1`` rows with
    ``wrap``); every dim must have the same length above 2 dims."""
    shape = self._data.shape
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(shape)
    if len(shape) == 2 and wrap and shape[0] > shape[1]:
        flat = np.arange(0, shape[0] * shape[1], shape[1] + 1)
        key: Any = np.unravel_index(flat, shape)
    else:
        key = (np.arange(n),) * len(shape)
    mask = np.zeros(shape, bool)
    mask[key] = True
    return IP._apply(self, lambda s: s.masked_fill(as_tensor(mask), fill_value))


class DiagonalScatter(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, src: Any, offset: int, d1: int, d2: int) -> Any:
        out = a.copy()
        r, c = _diag_positions(a.shape[d1], a.shape[d2], offset)
        np.moveaxis(out, (d1, d2), (-2, -1))[..., r, c] = src
        ctx.meta = (offset, d1, d2, r, c)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        offset, d1, d2, r, c = ctx.meta
        ga = g.copy()
        np.moveaxis(ga, (d1, d2), (-2, -1))[..., r, c] = 0
        return ga, np.diagonal(g, offset, d1, d2).copy(), None, None, None


def diagonal_scatter(input: Any, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """A copy of ``input`` with ``src`` on its diagonal ``offset`` (dims ``dim1``, ``dim2``)."""
    n = input._data.ndim
    return DiagonalScatter.apply(input, src, int(offset), wrap_dim(dim1, n), wrap_dim(dim2, n))


def diagflat(input: Any, offset: int = 0) -> Any:
    """A square matrix with the flattened ``input`` on its diagonal ``offset``."""
    return DiagEmbed.apply(reshape(input, -1), int(offset), 0, 1)


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:  # noqa: N803 - torch's name
    """The Vandermonde matrix of a 1-D ``x``: columns ``x**(N-1), ..., x, 1`` (``increasing`` reverses)."""
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._data.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    powers = np.arange(n) if increasing else np.arange(n)[::-1].copy()
    dt = x._data.dtype if x._data.dtype.kind in "fc" else np.int64
    base = x if x._data.dtype == dt else x.to(_dtype.from_numpy_dtype(dt))
    return pow_(unsqueeze(base, 1), as_tensor(powers.astype(dt)))
