"""The array-level ops of sparse COO tensors: scatter into dense, coalesce, gather, sparse @ dense.

A COO tensor is ``indices`` (``(sparse_dim, nnz)`` int64) and ``values`` (``(nnz, *dense_dims)``).
Every op here takes the values as its differentiable input and the indices as constants, so
gradients reach the values exactly as torch's do (the indices never need one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._backend import array_module, device_of
from mininn.autograd.graph import ArrayFunction, Context

__all__ = [
    "xp_of", "linear_index", "segment_sum", "ToDense", "SumDuplicates", "GatherFlat", "SpMM", "SpMMDenseGrad",
]


def xp_of(array: Any) -> Any:
    """NumPy for a cpu array, CuPy for a cuda one."""
    return np if isinstance(array, np.ndarray) else array_module(device_of(array))


def linear_index(indices: Any, sizes: tuple[int, ...]) -> Any:
    """Row-major positions of the COO entries in the leading ``sizes`` (one int64 per entry)."""
    xp = xp_of(indices)
    lin = xp.zeros(indices.shape[1], dtype=np.int64)
    for d, size in enumerate(sizes):
        lin = lin * size + indices[d]
    return lin


def segment_sum(keys: Any, rows: Any, n: int) -> Any:
    """``out[k] = sum of rows[j] where keys[j] == k`` for ``k < n`` (rows: ``(m, ...)``)."""
    xp = xp_of(rows)
    out = xp.zeros((n, *rows.shape[1:]), dtype=rows.dtype)
    if rows.shape[0] == 0:
        return out
    if xp is not np:
        xp.add.at(out, keys, rows)
        return out
    if rows.ndim == 1 and rows.dtype.kind == "f":
        return np.bincount(keys, weights=rows, minlength=n).astype(rows.dtype, copy=False)
    if keys.shape[0] > 1 and not bool(np.all(keys[1:] >= keys[:-1])):
        order = np.argsort(keys, kind="stable")
        keys, rows = keys[order], rows[order]
    first = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    out[keys[first]] = np.add.reduceat(rows, first, axis=0)
    return out


class ToDense(ArrayFunction):
    """Values scattered (and summed where indices repeat) into a dense array of ``shape``."""

    @staticmethod
    def forward(ctx: Context, values: Any, lin: Any, shape: tuple[int, ...]) -> Any:
        sparse_dim = len(shape) - (values.ndim - 1)
        n_sparse = int(np.prod(shape[:sparse_dim], dtype=np.int64))
        ctx.lin, ctx.n_sparse, ctx.dense_shape = lin, n_sparse, shape[sparse_dim:]
        return segment_sum(lin, values, n_sparse).reshape(shape)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad.reshape(ctx.n_sparse, *ctx.dense_shape)[ctx.lin], None, None


class SumDuplicates(ArrayFunction):
    """The values of a coalesced tensor: entries that share a position (``inverse``) summed."""

    @staticmethod
    def forward(ctx: Context, values: Any, inverse: Any, n_unique: int) -> Any:
        ctx.inverse = inverse
        return segment_sum(inverse, values, n_unique)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return grad[ctx.inverse], None, None


class GatherFlat(ArrayFunction):
    """The entries of ``x`` (first ``n_sparse`` dims flattened) at row-major positions ``lin``."""

    @staticmethod
    def forward(ctx: Context, x: Any, lin: Any, sparse_dim: int) -> Any:
        n_sparse = int(np.prod(x.shape[:sparse_dim], dtype=np.int64))
        ctx.lin, ctx.shape, ctx.n_sparse = lin, x.shape, n_sparse
        return x.reshape(n_sparse, *x.shape[sparse_dim:])[lin]

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        return segment_sum(ctx.lin, grad, ctx.n_sparse).reshape(ctx.shape), None, None


class SpMM(ArrayFunction):
    """``S @ D`` for a 2-D COO ``S`` (values differentiable, rows and cols constant) and a 2-D dense ``D``."""

    @staticmethod
    def forward(ctx: Context, values: Any, dense: Any, rows: Any, cols: Any, n_rows: int) -> Any:
        ctx.save_for_backward(values, dense)
        ctx.rows, ctx.cols, ctx.n_cols = rows, cols, dense.shape[0]
        return segment_sum(rows, values[:, None] * dense[cols], n_rows)

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        values, dense = ctx.saved_tensors
        need_values, need_dense = ctx.needs_input_grad[:2]
        g_rows = grad[ctx.rows]
        g_values = (g_rows * dense[ctx.cols]).sum(axis=1) if need_values else None
        g_dense = segment_sum(ctx.cols, values[:, None] * g_rows, ctx.n_cols) if need_dense else None
        return g_values, g_dense, None, None, None


class SpMMDenseGrad(ArrayFunction):
    """``S @ D`` as ``torch.mm`` differentiates it for a leaf ``S``: a dense gradient of S's shape.

    ``sink`` is a zero-strided stand-in of S's shape whose ``.grad`` receives ``G @ D.T``;
    ``transposed`` computes ``S.T @ D`` instead (for ``dense @ S``), with the gradient transposed back.
    """

    @staticmethod
    def forward(
        ctx: Context, sink: Any, dense: Any, values: Any, rows: Any, cols: Any, transposed: bool
    ) -> Any:
        if transposed:
            rows, cols = cols, rows
        ctx.save_for_backward(values, dense)
        ctx.rows, ctx.cols, ctx.n_cols, ctx.transposed = rows, cols, dense.shape[0], transposed
        return segment_sum(rows, values[:, None] * dense[cols], sink.shape[1 if transposed else 0])

    @staticmethod
    def backward(ctx: Context, grad: Any) -> Any:
        values, dense = ctx.saved_tensors
        need_sink, need_dense = ctx.needs_input_grad[:2]
        g_sink = None
        if need_sink:
            g_sink = (grad @ dense.T).T if ctx.transposed else grad @ dense.T
        g_dense = segment_sum(ctx.cols, values[:, None] * grad[ctx.rows], ctx.n_cols) if need_dense else None
        return g_sink, g_dense, None, None, None, None
