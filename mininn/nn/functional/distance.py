"""Distances between vectors: ``pairwise_distance`` (p-norm of ``x1 - x2``), ``cosine_similarity``
and ``pdist`` (all row pairs of one matrix).

Each is one ``ArrayFunction``; the p-norm and its gradient are the shared kernels.
Where torch's gradient has a convention (zero at a zero norm, ties of the max
norm sharing the gradient in ``pairwise_distance`` but not in ``pdist``) it is
followed.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mininn._functions._util import unbroadcast
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import wrap_dim, xp_of
from mininn.nn.functional.sparse import _scatter_add_rows
from mininn.tensor import Tensor

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]


def _pnorm(d: Any, p: float) -> Any:
    """The p-norm of ``d`` along its last axis (``p`` may be 0, negative or +-inf, as in torch)."""
    a = abs(d)
    if p == 0:
        return (a != 0).sum(axis=-1).astype(d.dtype)
    if p == math.inf:
        return a.max(axis=-1)
    if p == -math.inf:
        return a.min(axis=-1)
    if p == 1:
        return a.sum(axis=-1)
    if p == 2:
        return xp_of(d).sqrt((d * d).sum(axis=-1))
    with np.errstate(divide="ignore"):
        return (a ** d.dtype.type(p)).sum(axis=-1) ** d.dtype.type(1.0 / p)


def _pnorm_grad(d: Any, norm: Any, p: float, share_ties: bool) -> Any:
    """``d norm / d d`` for ``norm = _pnorm(d, p)`` (``norm`` has a trailing axis of 1); 0 where
    torch's is 0 (a zero norm, zero entries for ``p < 1``)."""
    xp = xp_of(d)
    t = d.dtype.type
    if p == 0:
        return xp.zeros_like(d)
    if p == 1:
        return xp.sign(d)
    if p in (math.inf, -math.inf):
        hit = (abs(d) == norm).astype(d.dtype)
        if share_ties:
            hit /= hit.sum(axis=-1, keepdims=True)
        return xp.sign(d) * hit
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 2:
            return xp.where(norm == 0, t(0), d / norm)
        a = abs(d)
        grad = xp.sign(d) * (a / norm) ** t(p - 1)
    return xp.where((a == 0) | (norm == 0), t(0), grad)


class _PairwiseDistance(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x1: Any, x2: Any, p: float, eps: float, keepdim: bool) -> Any:
        d = x1 - x2 + (x1 - x2).dtype.type(eps)
        norm = _pnorm(d, p)
        ctx.save_for_backward(d, norm)
        ctx.meta = (x1.shape, x2.shape, p)
        return norm[..., None] if keepdim else norm

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        d, norm = ctx.saved_tensors
        shape1, shape2, p = ctx.meta
        gd = g.reshape(norm.shape + (1,)) * _pnorm_grad(d, norm[..., None], p, share_ties=True)
        return unbroadcast(gd, shape1), unbroadcast(-gd, shape2), None, None, None


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim (inputs broadcast against each other)."""
    _broadcast_shape(x1, x2)
    if x1.ndim == 0 and x2.ndim == 0:
        x1 = x1.reshape(1)
    return _PairwiseDistance.apply(x1, x2, float(p), float(eps), bool(keepdim))


class _CosineSimilarity(ArrayFunction):
    """``sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps))`` along the last axis.

    As torch does, each norm is clamped outside autograd, so the gradient flows
    through the unclamped norm's derivative ``x / |x|`` (zero for a zero vector).
    """

    @staticmethod
    def forward(ctx: Context, x1: Any, x2: Any, eps: float) -> Any:
        x1b, x2b = np.broadcast_arrays(x1, x2)
        n1 = _pnorm(x1b, 2.0)[..., None]
        n2 = _pnorm(x2b, 2.0)[..., None]
        c1 = xp_of(n1).maximum(n1, n1.dtype.type(eps))
        c2 = xp_of(n2).maximum(n2, n2.dtype.type(eps))
        u1, u2 = x1b / c1, x2b / c2
        cos = (u1 * u2).sum(axis=-1)
        ctx.save_for_backward(x1b, x2b, n1, n2, c1, c2, cos)
        ctx.shapes = (x1.shape, x2.shape)
        return cos

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x1, x2, n1, n2, c1, c2, cos = ctx.saved_tensors
        g = g[..., None]
        gc = g * cos[..., None]
        g1 = g * x2 / (c2 * c1) - gc / c1 * _pnorm_grad(x1, n1, 2.0, False)
        g2 = g * x1 / (c1 * c2) - gc / c2 * _pnorm_grad(x2, n2, 2.0, False)
        return unbroadcast(g1, ctx.shapes[0]), unbroadcast(g2, ctx.shapes[1]), None


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (inputs broadcast), each norm
    clamped below at ``eps``."""
    shape = _broadcast_shape(x1, x2)
    if not (x1.dtype.is_floating_point or x2.dtype.is_floating_point):
        common = np.result_type(x1._data.dtype, x2._data.dtype)
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{_scalar_name(common)}")
    ndim = len(shape)
    d = wrap_dim(dim, ndim)
    x1, x2 = _move_to_last(x1, d, ndim), _move_to_last(x2, d, ndim)
    return _CosineSimilarity.apply(x1, x2, float(eps))


def _move_to_last(x: Tensor, dim: int, ndim: int) -> Tensor:
    """``x`` (right-aligned in an ``ndim``-dim broadcast) with broadcast dim ``dim`` moved last."""
    ndim = max(ndim, 1)  # a scalar counts as one vector of length 1
    x = x.reshape((1,) * (ndim - x.ndim) + tuple(x.shape)) if x.ndim < ndim else x
    return x.movedim(dim, -1)


class _Pdist(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, p: float) -> Any:
        xp = xp_of(x)
        i, j = xp.triu_indices(x.shape[0], 1)
        d = x[i] - x[j]
        norm = _pnorm(d, p)
        ctx.save_for_backward(d, norm, i, j)
        ctx.meta = (x.shape, p)
        return norm

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        d, norm, i, j = ctx.saved_tensors
        shape, p = ctx.meta
        gd = g[:, None] * _pnorm_grad(d, norm[:, None], p, share_ties=False)
        xp = xp_of(g)
        gx = xp.zeros(shape, dtype=g.dtype)
        # one scatter: row i receives +gd, row j receives -gd
        _scatter_add_rows(gx, xp.concatenate([i, j]), xp.concatenate([gd, -gd]))
        return gx, None


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distance between every pair of rows ``i < j`` of an ``(N, M)`` input, as a
    ``(N * (N - 1) / 2,)`` vector in row-major pair order."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    return _Pdist.apply(input, float(p))


def _broadcast_shape(x1: Tensor, x2: Tensor) -> tuple[int, ...]:
    """The broadcast shape of two tensors, or torch's message naming the first mismatch."""
    a, b = tuple(x1.shape), tuple(x2.shape)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    for k in range(n - 1, -1, -1):
        if a[k] != b[k] and 1 not in (a[k], b[k]):
            raise RuntimeError(
                f"The size of tensor a ({a[k]}) must match the size of tensor b ({b[k]}) at non-singleton "
                f"dimension {k}"
            )
    return tuple(max(u, v) for u, v in zip(a, b))


def _scalar_name(dtype: Any) -> str:
    names = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
             "bool": "Bool"}
    return names.get(np.dtype(dtype).name, np.dtype(dtype).name)
