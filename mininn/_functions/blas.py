"""BLAS-style fused products: ``addmm``, ``baddbmm``, ``addbmm``, ``mv``, ``addmv``,
``addr``, plus ``inner`` and ``tensordot``.

Each is ``beta * input + alpha * product`` built from ``matmul`` and the
elementwise ops, so gradients come from theirs. As in torch, ``beta=0``
ignores ``input``'s values (a NaN there does not reach the result).
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions import elementwise as E
from mininn._functions import linalg as L
from mininn._functions import shape as S
from mininn._functions._util import torch_type_name
from mininn._functions.complex import conj
from mininn._functions.indexing import narrow
from mininn._functions.join import cat
from mininn._functions.norms import vector_norm
from mininn._functions.reduction import sum as sum_
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import wrap


def _scaled_sum(input: Any, product: Any, beta: Any, alpha: Any) -> Any:
    """``beta * input + alpha * product``, with ``input`` expanded to the product's shape."""
    base = S.expand(input, product._data.shape)
    if alpha != 1:
        product = E.mul(product, alpha)
    if beta == 0:  # torch ignores input then (NaN * 0 would be NaN); its gradient is zero
        return E.where(wrap(np.zeros((), bool)), base, product)
    if beta != 1:
        base = E.mul(base, beta)
    return E.add(base, product)


def _check_matrix(x: Any, name: str) -> None:
    if x._data.ndim != 2:
        raise RuntimeError(f"{name} must be a matrix, got {x._data.ndim}-D tensor")


def _check_same_dtype(a: Any, b: Any) -> None:
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"self and mat2 must have the same dtype, but got {torch_type_name(a._data.dtype)} and "
            f"{torch_type_name(b._data.dtype)}"
        )


def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    """``beta * input + alpha * (mat1 @ mat2)`` for matrices (``input`` broadcasts)."""
    _check_matrix(mat1, "mat1")
    _check_matrix(mat2, "mat2")
    _check_same_dtype(mat1, mat2)
    return _scaled_sum(input, L.matmul(mat1, mat2), beta, alpha)


def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices."""
    L.check_batches(batch1, batch2)
    return _scaled_sum(input, L.matmul(batch1, batch2), beta, alpha)


def addbmm(input: Any, batch1: Any, batch2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    L.check_batches(batch1, batch2)
    return _scaled_sum(input, sum_(L.matmul(batch1, batch2), 0), beta, alpha)


def mv(input: Any, vec: Any) -> Any:
    """Matrix times vector."""
    a, v = input._data, vec._data
    if a.ndim != 2 or v.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.ndim}, {v.ndim}")
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), vec ({v.shape[0]})"
        )
    return L.matmul(input, vec)


def addmv(input: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    """``beta * input + alpha * (mat @ vec)``."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def addr(input: Any, vec1: Any, vec2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    return _scaled_sum(input, L.outer(vec1, vec2), beta, alpha)


def inner(input: Any, other: Any) -> Any:
    """Sum of products over the last dims (a scalar times a tensor when either is 0-d)."""
    a, b = input._data, other._data
    if a.ndim == 0 or b.ndim == 0:
        return E.mul(input, other)
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{list(a.shape)} and {list(b.shape)}"
        )
    return tensordot(input, other, ([-1], [-1]))


def tensordot(a: Any, b: Any, dims: Any = 2) -> Any:
    """Contract the last ``dims`` dims of ``a`` with the first of ``b``, or the listed pairs of dims."""
    na, nb = a._data.ndim, b._data.ndim
    if isinstance(dims, int) or (isinstance(dims, TensorCore) and dims._data.ndim == 0):
        k = int(dims)
        if k < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={k}")
        left, right = list(range(na - k, na)), list(range(k))
    else:
        left, right = (list(d) if isinstance(d, (list, tuple)) else [int(d)] for d in dims)
    left = [d % max(na, 1) for d in left]
    right = [d % max(nb, 1) for d in right]
    for x, y in zip(left, right):
        if a._data.shape[x] != b._data.shape[y]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a._data.shape[x]} in dim {x} "
                f"and second has size {b._data.shape[y]} in dim {y}"
            )
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    sa = list(letters[:na])
    sb = list(letters[na : na + nb])
    for x, y in zip(left, right):
        sb[y] = sa[x]
    out = [c for i, c in enumerate(sa) if i not in left] + [c for i, c in enumerate(sb) if i not in right]
    return L.einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def linalg_cross(input: Any, other: Any, *, dim: int = -1) -> Any:
    """The cross product of 3-vectors along ``dim`` (the other dims broadcast)."""
    a, b = input._data, other._data
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    axis = dim % max(a.ndim, 1)
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[axis]} and "
            f"{b.shape[axis]}"
        )

    def part(x: Any, i: int) -> Any:
        return narrow(x, axis, i, 1)

    def term(i: int, j: int) -> Any:
        return E.sub(E.mul(part(input, i), part(other, j)), E.mul(part(input, j), part(other, i)))

    return cat([term(1, 2), term(2, 0), term(0, 1)], axis)


def cross(input: Any, other: Any, dim: int | None = None) -> Any:
    """``torch.cross``: the cross product along ``dim`` (the first dim of size 3 when None)."""
    if dim is None:
        import warnings

        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
            "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
            "with that of linalg.cross in a future release.",
            UserWarning,
            stacklevel=2,
        )
        shape = np.broadcast_shapes(input._data.shape, other._data.shape)
        dim = next((i for i, n in enumerate(shape) if n == 3), -1)
    return linalg_cross(input, other, dim=dim)


def kron(input: Any, other: Any) -> Any:
    """The Kronecker product: each element of ``input`` times the whole of ``other``."""
    n = max(input._data.ndim, other._data.ndim)
    a = S.reshape(input, (1,) * (n - input._data.ndim) + input._data.shape)
    b = S.reshape(other, (1,) * (n - other._data.ndim) + other._data.shape)
    # (a0, 1, a1, 1, ...) * (1, b0, 1, b1, ...) -> (a0 * b0, a1 * b1, ...)
    sa = [x for d in a._data.shape for x in (d, 1)]
    sb = [x for d in b._data.shape for x in (1, d)]
    out = E.mul(S.reshape(a, sa), S.reshape(b, sb))
    return S.reshape(out, tuple(x * y for x, y in zip(a._data.shape, b._data.shape)))


def cdist(x1: Any, x2: Any, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Any:
    """The ``p``-norm distance between each row of ``x1`` and each row of ``x2`` (batched)."""
    for name, x in (("X1", x1), ("X2", x2)):
        if x._data.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x._data.ndim}D")
    c1, c2 = x1._data.shape[-1], x2._data.shape[-1]
    if c1 != c2:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {c1} X2: {c2}")
    diff = E.sub(S.unsqueeze(x1, -2), S.unsqueeze(x2, -3))  # (..., P, R, M)
    return vector_norm(diff, p, -1)


def vdot(input: Any, other: Any) -> Any:
    """``sum(conj(input) * other)`` of two 1-D tensors."""
    a, b = input._data, other._data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    return L.dot(conj(input), other)
