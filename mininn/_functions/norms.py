"""Norms: ``vector_norm``, ``matrix_norm``, ``linalg.norm``, ``torch.norm``, ``dist``
and the singular values they need (``svdvals``).

Gradients follow torch: zero where a 2-norm (or p-norm) is zero, and shared
evenly between tied extremes of the inf/-inf norms.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._functions import reduction as R
from mininn._functions._util import _FLOAT, category, torch_type_name, wrap_dim
from mininn._functions.conversion import cast
from mininn._functions.elementwise import mul, sub, where
from mininn._functions.reduction import expand_reduced, normalize_dims
from mininn._functions.shape import movedim, unsqueeze
from mininn._functions.unary import abs as abs_
from mininn.autograd.graph import ArrayFunction, Context, wrap

_INF = math.inf


class VectorNorm(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, ord: float, axes: tuple[int, ...] | None, keepdim: bool) -> Any:
        x = np.abs(a)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            if ord == _INF:
                out = x.max(axis=axes, keepdims=True) if x.size else np.zeros((1,) * x.ndim, x.dtype)
            elif ord == -_INF:
                out = x.min(axis=axes, keepdims=True)
            elif ord == 0:
                out = (x != 0).sum(axis=axes, keepdims=True).astype(x.dtype)
            elif ord == 1:
                out = x.sum(axis=axes, keepdims=True)
            elif ord == 2:
                out = np.sqrt((x * x).sum(axis=axes, keepdims=True))
            else:
                out = ((x**ord).sum(axis=axes, keepdims=True)) ** (1 / ord)
        out = out.astype(x.dtype, copy=False)
        ctx.save_for_backward(a, out)
        ctx.meta = (ord, axes, keepdim)
        if keepdim:
            return out
        return out.reshape(()) if axes is None else np.squeeze(out, axis=axes)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, out = ctx.saved_tensors  # out keeps the reduced dims
        p, axes, keepdim = ctx.meta
        gk = expand_reduced(g, a.shape, axes, keepdim)
        sign = np.sign(a)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if p in (_INF, -_INF):
                hit = np.abs(a) == out
                grad = gk * sign * hit / hit.sum(axis=axes, keepdims=True)
            elif p == 0:
                grad = np.zeros(a.shape, g.dtype)
            elif p == 1:
                grad = gk * sign
            elif p == 2:
                grad = np.where(out == 0, 0, gk * a / out)
            else:
                x = np.abs(a)
                grad = np.where((out == 0) | (x == 0), 0, gk * sign * x ** (p - 1) / out ** (p - 1))
        return grad.astype(g.dtype, copy=False), None, None, None


class SvdVals(ArrayFunction):
    """Singular values of the matrices in the last two dims, largest first."""

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        ctx.save_for_backward(u, vh)
        return s

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        u, vh = ctx.saved_tensors
        return (u * g[..., None, :]) @ vh  # U diag(g) V^H


# ---- public functions ---------------------------------------------------------------------


def _floating_input(x: Any, dtype: Any, name: str) -> Any:
    if dtype is not None:
        x = cast(x, _dtype.as_dtype(dtype).np)
    if category(x._data.dtype) < _FLOAT:
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got "
            f"{torch_type_name(x._data.dtype)}"
        )
    return x


def vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """``sum(|x|**ord)**(1/ord)`` over ``dim`` (all elements by default); ``ord`` may be inf, -inf or 0."""
    x = _floating_input(x, dtype, "linalg.vector_norm")
    if x._data.dtype.kind == "c":
        x = abs_(x)
    axes = normalize_dims(dim, x._data.ndim)
    if axes == ():
        axes = None
    empty = x._data.size == 0 and (axes is None or any(x._data.shape[d] == 0 for d in axes))
    if empty and ord in (_INF, -_INF):
        raise RuntimeError(
            f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the operation "
            "does not have an identity"
        )
    return VectorNorm.apply(x, float(ord), axes, keepdim)


def svdvals(A: Any) -> Any:  # noqa: N803 - torch's argument name
    """The singular values of the matrices in the last two dims, in descending order."""
    if A._data.ndim < 2:
        raise RuntimeError(
            "linalg.svd: The input tensor A must have at least 2 dimensions."
        )
    return SvdVals.apply(A)


def matrix_norm(A: Any, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,  # noqa: N803
                dtype: Any = None) -> Any:
    """A matrix norm over the two dims ``dim``: ``"fro"``, ``"nuc"``, 1, -1, 2, -2, inf or -inf."""
    A = _floating_input(A, dtype, "linalg.matrix_norm")  # noqa: N806
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else dim
    if not isinstance(dims, tuple) or len(dims) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {_dims_text(dim)}")
    d0, d1 = normalize_dims(dims, A._data.ndim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord not in ("nuc", 1, -1, 2, -2, _INF, -_INF):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in ("nuc", 2, -2):
        s = svdvals(movedim(A, (d0, d1), (-2, -1)))
        out = R.sum(s, -1) if ord == "nuc" else (R.amax(s, -1) if ord == 2 else R.amin(s, -1))
    else:
        # 1: the largest column sum of |A|; inf: the largest row sum
        over, across = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = vector_norm(A, 1, over, keepdim=True)
        out = R.amax(sums, across, keepdim=True) if ord > 0 else R.amin(sums, across, keepdim=True)
        return out if keepdim else out.squeeze((d0, d1))
    if keepdim:
        for d in sorted((d0, d1)):
            out = unsqueeze(out, d)
    return out


def _dims_text(dim: Any) -> str:
    if isinstance(dim, (tuple, list)):
        return "[" + ", ".join(str(d) for d in dim) + "]"
    return str(dim)


def linalg_norm(A: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *,  # noqa: N803
                dtype: Any = None) -> Any:
    """``torch.linalg.norm``: a vector norm (1-D input or an int ``dim``) or a matrix norm (2-D input or
    a 2-tuple ``dim``); without ``ord``, the 2-norm of all elements."""
    if isinstance(ord, str):
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    ndim = A._data.ndim
    if ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(
        f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {ndim}D."
    )


def norm(input: Any, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    """``torch.norm``: the ``p``-norm over ``dim`` (all elements by default); ``"fro"`` is the 2-norm and
    ``"nuc"`` the nuclear norm of a matrix."""
    if p == "nuc":
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    if isinstance(p, str) and p != "fro":
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return vector_norm(input, 2 if p == "fro" or p is None else p, dim, keepdim, dtype=dtype)


def dist(input: Any, other: Any, p: float = 2) -> Any:
    """The ``p``-norm of ``input - other``."""
    return vector_norm(sub(input, other), p)


def renorm(input: Any, p: float, dim: int, maxnorm: float) -> Any:
    """Each slice along ``dim`` rescaled so that its ``p``-norm is at most ``maxnorm``."""
    axis = wrap_dim(dim, input._data.ndim)
    others = tuple(d for d in range(input._data.ndim) if d != axis)
    norms = vector_norm(input, p, others, keepdim=True)
    scale = where(wrap(norms._data > maxnorm), maxnorm / (norms + 1e-7), 1.0)
    return mul(input, scale)
