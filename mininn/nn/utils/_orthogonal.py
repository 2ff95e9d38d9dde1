"""The differentiable maps behind ``parametrizations.orthogonal``, on (batches of) square or
tall matrices: the matrix exponential, the Cayley map and the product of Householder
reflectors, each a ``ArrayFunction`` with an analytic backward; and the QR helpers of its
``right_inverse``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context

__all__ = ["Cayley", "HouseholderProduct", "MatrixExp", "geqrf", "make_orthogonal"]


def _eye_like(a: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)


def _mT(a: np.ndarray) -> np.ndarray:  # noqa: N802 - torch's name
    return np.swapaxes(a, -1, -2)


def expm(a: np.ndarray) -> np.ndarray:
    """The matrix exponential of each ``(n, n)`` matrix of ``a``: scaling and squaring with
    a Taylor series (the scaled matrix has norm <= 1/2, so 20 terms reach float64 precision)."""
    norm = float(np.abs(a).sum(axis=-2).max()) if a.size else 0.0
    squarings = max(0, int(np.ceil(np.log2(norm / 0.5)))) if norm > 0.5 else 0
    b = a / (2.0 ** squarings)
    result = _eye_like(b).copy()
    term = result.copy()
    for i in range(1, 21):
        term = term @ b / i
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


class MatrixExp(ArrayFunction):
    """``expm(A)``; its backward is the adjoint Fréchet derivative, the top-right block of
    ``expm([[A^T, G], [0, A^T]])``."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        ctx.save_for_backward(a)
        return expm(a)

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        (a,) = ctx.saved_tensors
        n = a.shape[-1]
        at = _mT(a)
        block = np.zeros((*a.shape[:-2], 2 * n, 2 * n), dtype=a.dtype)
        block[..., :n, :n] = at
        block[..., n:, n:] = at
        block[..., :n, n:] = grad
        return expm(block)[..., :n, n:]


class Cayley(ArrayFunction):
    """``(I - A/2)^{-1} (I + A/2)``."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray) -> np.ndarray:
        eye = _eye_like(a)
        m = eye - a / 2
        q = np.linalg.solve(m, eye + a / 2)
        ctx.save_for_backward(m, q)
        return q

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> np.ndarray:
        m, q = ctx.saved_tensors
        return np.linalg.solve(_mT(m), grad) @ _mT(q + _eye_like(q)) / 2


def _reflectors(a: np.ndarray) -> np.ndarray:
    """The Householder vectors of ``a`` as columns: 1 on the diagonal, ``a`` below, 0 above."""
    n, k = a.shape[-2:]
    v = np.tril(a, -1)
    v[..., np.arange(k), np.arange(k)] = 1
    return v


def _reflect(x: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """``(I - tau v v^T) x`` for a column ``v`` (..., n) and a scalar ``tau`` (...)."""
    return x - tau[..., None, None] * v[..., :, None] * (v[..., None, :] @ x)


class HouseholderProduct(ArrayFunction):
    """torch's ``linalg.householder_product(A, tau)``: the first ``k`` columns of
    ``H_1 ... H_k`` with ``H_i = I - tau_i v_i v_i^T``, ``v_i`` the i-th reflector of ``A``."""

    @staticmethod
    def forward(ctx: Context, a: np.ndarray, tau: np.ndarray) -> np.ndarray:
        n, k = a.shape[-2:]
        v = _reflectors(a)
        right = [np.broadcast_to(np.eye(n, k, dtype=a.dtype), a.shape).copy()]  # H_{i+1}...H_k E
        for i in range(k - 1, -1, -1):
            right.append(_reflect(right[-1], v[..., :, i], tau[..., i]))
        right.reverse()  # right[i] = H_{i+1}...H_k E (0-based: right[i] excludes H_i), right[0] = Q
        ctx.save_for_backward(v, tau, np.stack(right[1:], axis=0))
        return right[0]

    @staticmethod
    def backward(ctx: Context, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v, tau, right = ctx.saved_tensors
        k = v.shape[-1]
        grad_v = np.zeros_like(v)
        grad_tau = np.zeros_like(tau)
        g = grad  # (H_1...H_{i-1})^T G, built up from the left
        for i in range(k):
            vi, ti, r = v[..., :, i], tau[..., i], right[i]
            gh = g @ _mT(r)  # the gradient with respect to H_i
            ghv = gh @ vi[..., :, None]
            grad_tau[..., i] = -(vi[..., None, :] @ ghv)[..., 0, 0]
            grad_v[..., :, i] = -ti[..., None] * (ghv[..., 0] + (_mT(gh) @ vi[..., :, None])[..., 0])
            g = _reflect(g, vi, ti)  # H_i is symmetric: H_i^T g
        return np.tril(grad_v, -1), grad_tau


def geqrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LAPACK's QR in compact form: R on and above the diagonal, reflectors below, and tau."""
    h, tau = np.linalg.qr(a, mode="raw")
    return _mT(h).copy(), tau


def make_orthogonal(a: np.ndarray) -> np.ndarray:
    """The Q of ``a = QR`` (``a`` tall) with the signs that make ``diag(R)`` non-negative."""
    q, r = np.linalg.qr(a)
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return q * np.where(signs == 0, 1, signs)[..., None, :]


def is_orthogonal(q: np.ndarray) -> bool:
    """``Q^T Q == I`` within ``10 * n * eps`` (as torch checks)."""
    n, k = q.shape[-2:]
    eps = 10.0 * n * np.finfo(q.dtype).eps
    return bool(np.allclose(_mT(q) @ q, np.eye(k, dtype=q.dtype), rtol=1e-5, atol=eps))


def householder_signs(x: Any) -> np.ndarray:
    """The diagonal of ``x`` cast to int (torch's ``.int()``: truncated), as a row to scale Q's columns."""
    return np.trunc(np.diagonal(x, axis1=-2, axis2=-1))[..., None, :].astype(x.dtype)
