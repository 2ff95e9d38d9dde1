"""Linear algebra on (batches of) square matrices: ``inv``, ``det``, ``slogdet``,
``logdet``, ``solve``, ``matrix_power`` and ``cholesky``, with gradients and
torch's messages (``LinAlgError`` for singular or non-positive-definite input).
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from mininn._functions import matrix as MX
from mininn._functions._bases import _one_input
from mininn._functions._util import _FLOAT, category, torch_type_name, unbroadcast
from mininn._functions.complex import conj
from mininn._functions.elementwise import add, div, mul, where
from mininn._functions.linalg import matmul
from mininn._functions.matrix import diagonal_scatter
from mininn._functions.shape import transpose, unsqueeze
from mininn._functions.shape import transpose as swap
from mininn.autograd.graph import ArrayFunction, Context, wrap


class _LinAlgError(RuntimeError):  # torch's class name (torch.linalg.LinAlgError)
    """A linear-algebra routine failed on its input (a singular or non-positive-definite matrix)."""


LinAlgError = _LinAlgError


class slogdet_result(NamedTuple):  # noqa: N801 - torch.return_types.linalg_slogdet
    sign: Any
    logabsdet: Any

    def __repr__(self) -> str:
        return f"mininn.return_types.linalg_slogdet(\nsign={self.sign!r},\nlogabsdet={self.logabsdet!r})"


def _mH(x: Any) -> Any:  # noqa: N802 - the conjugate transpose, torch's mH
    return np.conj(np.swapaxes(x, -1, -2)) if x.dtype.kind == "c" else np.swapaxes(x, -1, -2)


def _check_square(a: Any, name: str) -> None:
    if a._data.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    rows, cols = a._data.shape[-2:]
    if rows != cols:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {rows} by {cols} matrices"
        )
    if category(a._data.dtype) < _FLOAT:
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got "
            f"{torch_type_name(a._data.dtype)}"
        )


def _first_zero_pivot(a: Any) -> int:
    """The 1-based index of the first zero pivot of LU with partial pivoting (getrf's ``info``)."""
    for m in a.reshape(-1, *a.shape[-2:]).astype(np.float64):
        u = m.copy()
        n = len(u)
        for k in range(n):  # the error path only: one small matrix, eliminated column by column
            p = k + int(np.argmax(np.abs(u[k:, k])))
            if u[p, k] == 0:
                return k + 1
            u[[k, p]] = u[[p, k]]
            u[k + 1 :] -= np.outer(u[k + 1 :, k] / u[k, k], u[k])
    return a.shape[-1]


@contextlib.contextmanager
def _failing_as(message: Callable[[], str]) -> Iterator[None]:
    """NumPy's ``LinAlgError`` inside the block becomes torch's, with ``message()`` (worked out only then)."""
    try:
        yield
    except np.linalg.LinAlgError:
        raise _LinAlgError(message()) from None


def _inv(a: Any) -> Any:
    with _failing_as(lambda: f"linalg.inv: The diagonal element {_first_zero_pivot(a)} is zero, "
                     "the inversion could not be completed because the input matrix is singular."):
        return np.linalg.inv(a)


def _inv_grad(g: Any, out: Any) -> Any:
    h = _mH(out)
    return -(h @ g @ h)


Inv = _one_input("Inv", _inv, _inv_grad)


class Det(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        out = np.asarray(np.linalg.det(a))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, out = ctx.saved_tensors
        # d det / dA = det * A^-T; torch's convention conjugates it for complex input
        return (g * np.conj(out))[..., None, None] * _mH(np.linalg.inv(a))


class SlogDet(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        sign, logabs = np.linalg.slogdet(a)
        ctx.save_for_backward(a)
        return np.asarray(sign).astype(a.dtype), np.asarray(logabs).astype(a.real.dtype)

    @staticmethod
    def backward(ctx: Context, g_sign: Any, g_logabs: Any) -> Any:
        (a,) = ctx.saved_tensors
        return g_logabs[..., None, None] * _mH(np.linalg.inv(a))


class Solve(ArrayFunction):
    """``X`` with ``A @ X = B``; ``vector`` marks ``B`` as a (batch of) vectors."""

    @staticmethod
    def forward(ctx: Context, a: Any, b: Any, vector: bool) -> Any:
        rhs = b[..., None] if vector else b
        shape = np.broadcast_shapes(a.shape[:-2], rhs.shape[:-2])
        a_full = np.broadcast_to(a, shape + a.shape[-2:])
        rhs = np.broadcast_to(rhs, shape + rhs.shape[-2:])
        with _failing_as(lambda: "torch.linalg.solve: The solver failed because the input matrix is "
                         "singular."):
            x = np.linalg.solve(a_full, rhs)
        ctx.save_for_backward(a_full, x)
        ctx.meta = (a.shape, b.shape, vector)
        return x[..., 0] if vector else x

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, x = ctx.saved_tensors
        a_shape, b_shape, vector = ctx.meta
        g2 = g[..., None] if vector else g
        gb = np.linalg.solve(_mH(a), g2)
        ga = -gb @ _mH(x)
        gb = gb[..., 0] if vector else gb
        return unbroadcast(ga, a_shape), unbroadcast(gb, b_shape), None


def _first_failing_minor(a: Any) -> int:
    for m in a.reshape(-1, *a.shape[-2:]):
        for k in range(1, len(m) + 1):  # the error path only
            try:
                np.linalg.cholesky(m[:k, :k])
            except np.linalg.LinAlgError:
                return k
    return a.shape[-1]


def _cholesky(a: Any) -> Any:
    with _failing_as(lambda: "linalg.cholesky: The factorization could not be completed because the "
                     "input is not positive-definite (the leading minor of order "
                     f"{_first_failing_minor(a)} is not positive-definite)."):
        return np.linalg.cholesky(a)


def _cholesky_grad(g: Any, low: Any) -> Any:
    # grad_A = L^-H Phi(L^H gL) L^-1, symmetrised; Phi keeps the lower triangle with half the diagonal
    phi = np.tril(_mH(low) @ g)
    diag = np.einsum("...ii->...i", phi)
    diag *= 0.5
    inv_low = np.linalg.inv(low)
    grad = _mH(inv_low) @ phi @ inv_low
    return 0.5 * (grad + _mH(grad))


Cholesky = _one_input("Cholesky", _cholesky, _cholesky_grad)


# ---- public functions ---------------------------------------------------------------------


def inv(A: Any) -> Any:  # noqa: N803 - torch's argument name
    """The inverse of each square matrix in the last two dims."""
    _check_square(A, "linalg.inv")
    return Inv.apply(A)


def det(A: Any) -> Any:  # noqa: N803
    """The determinant of each square matrix."""
    _check_square(A, "linalg.det")
    return Det.apply(A)


def slogdet(A: Any) -> Any:  # noqa: N803
    """``(sign, logabsdet)`` of each determinant: ``det = sign * exp(logabsdet)``."""
    _check_square(A, "linalg.slogdet")
    return slogdet_result(*SlogDet.apply(A))


def logdet(input: Any) -> Any:
    """``log(det(input))`` (NaN for a negative determinant)."""
    sign, logabs = slogdet(input)
    finite = where(wrap(sign._data == 0), -float("inf"), logabs)
    return where(wrap(sign._data < 0), float("nan"), finite)


def solve(A: Any, B: Any, *, left: bool = True) -> Any:  # noqa: N803
    """``X`` with ``A @ X = B`` (``B`` matrices or, shaped like ``A`` without its last dim, vectors)."""
    _check_square(A, "linalg.solve")
    if not left:
        return transpose(solve(transpose(A, -2, -1), transpose(B, -2, -1)), -2, -1)
    a, b = A._data, B._data
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    rows = b.shape[-1] if vector else b.shape[-2]
    if rows != a.shape[-1]:
        cols = 1 if vector else b.shape[-1]
        raise RuntimeError(
            "linalg.solve: Incompatible shapes of A and B for the equation AX = B "
            f"({a.shape[-2]}x{a.shape[-1]} and {rows}x{cols})"
        )
    return Solve.apply(A, B, vector)


def matrix_power(A: Any, n: int) -> Any:  # noqa: N803
    """``A`` multiplied by itself ``n`` times (the identity for 0, powers of the inverse below 0)."""
    _check_square(A, "linalg.matrix_power")
    if n == 0:  # the identity, still in the graph (with a zero gradient), as in torch
        eye = np.broadcast_to(np.eye(A._data.shape[-1], dtype=A._data.dtype), A._data.shape)
        return where(wrap(np.zeros((), bool)), A, wrap(eye.copy()))
    base = inv(A) if n < 0 else A
    result = None
    k = abs(n)
    while k:  # binary exponentiation: O(log n) products
        if k & 1:
            result = base if result is None else matmul(result, base)
        k >>= 1
        if k:
            base = matmul(base, base)
    return result


def cholesky(A: Any, *, upper: bool = False) -> Any:  # noqa: N803
    """The lower Cholesky factor ``L`` with ``A = L @ L^H`` (its conjugate transpose with ``upper``)."""
    _check_square(A, "linalg.cholesky")
    low = Cholesky.apply(A)
    if upper:
        return conj(transpose(low, -2, -1))
    return low


def solve_triangular(A: Any, B: Any, *, upper: bool, left: bool = True,  # noqa: N803
                     unitriangular: bool = False) -> Any:
    """``X`` with ``A @ X = B`` for a triangular ``A`` (only its ``upper`` or lower triangle is read)."""
    if B._data.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    tri = MX.triu(A) if upper else MX.tril(A)
    if unitriangular:  # the diagonal is taken as ones
        n = A._data.shape[-1]
        tri = diagonal_scatter(tri, wrap(np.zeros(A._data.shape[:-2] + (n,), A._data.dtype)), 0, -2, -1)
        tri = add(tri, wrap(np.eye(n, dtype=A._data.dtype)))
    return solve(tri, B, left=left)


class triangular_solve_result(NamedTuple):  # noqa: N801 - torch.return_types.triangular_solve
    solution: Any
    cloned_coefficient: Any

    def __repr__(self) -> str:
        return (f"mininn.return_types.triangular_solve(\nsolution={self.solution!r},\n"
                f"cloned_coefficient={self.cloned_coefficient!r})")


def triangular_solve(input: Any, A: Any, upper: bool = True, transpose: bool = False,  # noqa: N803
                     unitriangular: bool = False) -> Any:
    """``(X, A.clone())`` with ``A @ X = b`` (deprecated: ``linalg.solve_triangular``)."""
    import warnings

    warnings.warn(
        "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangularand will be removed "
        "in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed and does not "
        "return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be replaced "
        "with\nX = torch.linalg.solve_triangular(A, B).",
        UserWarning,
        stacklevel=2,
    )
    coefficient = swap(A, -2, -1) if transpose else A
    x = solve_triangular(coefficient, input, upper=upper != transpose, unitriangular=unitriangular)
    return triangular_solve_result(x, A.clone())


def cholesky_deprecated(input: Any, upper: bool = False) -> Any:
    """``torch.cholesky``: the Cholesky factor (deprecated: ``linalg.cholesky``)."""
    import warnings

    warnings.warn(
        "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
        "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
        "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
        "This transform will produce equivalent results for all valid (symmetric positive definite) inputs.",
        UserWarning,
        stacklevel=2,
    )
    return cholesky(input, upper=upper)


def _from_factor(factor: Any, upper: bool) -> Any:
    """``L @ L^H`` (or ``U^H @ U``) from a Cholesky factor."""
    h = conj(transpose(factor, -2, -1))
    return matmul(h, factor) if upper else matmul(factor, h)


def cholesky_solve(input: Any, input2: Any, upper: bool = False) -> Any:
    """``X`` with ``(L @ L^H) @ X = B`` for ``B = input`` and the Cholesky factor ``L = input2``
    (``U^H @ U`` with ``upper``)."""
    return solve(_from_factor(input2, upper), input)


def cholesky_inverse(input: Any, upper: bool = False) -> Any:
    """The inverse of ``L @ L^H`` (``U^H @ U`` with ``upper``) from its Cholesky factor ``input``."""
    return inv(_from_factor(input, upper))


# ---- the singular value decomposition and the pseudo-inverse ----------------------------------------


class svd_result(NamedTuple):  # noqa: N801 - torch.return_types.linalg_svd
    U: Any  # noqa: N815 - torch's field names
    S: Any  # noqa: N815
    Vh: Any  # noqa: N815

    def __repr__(self) -> str:
        return f"mininn.return_types.linalg_svd(\nU={self.U!r},\nS={self.S!r},\nVh={self.Vh!r})"


class svd_v_result(NamedTuple):  # noqa: N801 - torch.return_types.svd
    U: Any  # noqa: N815
    S: Any  # noqa: N815
    V: Any  # noqa: N815

    def __repr__(self) -> str:
        return f"mininn.return_types.svd(\nU={self.U!r},\nS={self.S!r},\nV={self.V!r})"


class Svd(ArrayFunction):
    """``A = U diag(S) Vh`` of real matrices; the gradient reads the first ``min(m, n)`` singular vectors."""

    @staticmethod
    def forward(ctx: Context, a: Any, full_matrices: bool) -> Any:
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
        k = s.shape[-1]
        ctx.save_for_backward(u[..., :k], s, vh[..., :k, :])
        return u, s, vh

    @staticmethod
    def backward(ctx: Context, g_u: Any, g_s: Any, g_vh: Any) -> Any:
        u, s, vh = ctx.saved_tensors
        k = s.shape[-1]
        g_u, g_vh = g_u[..., :k], g_vh[..., :k, :]
        v, g_v = np.swapaxes(vh, -1, -2), np.swapaxes(g_vh, -1, -2)
        s2 = s * s
        with np.errstate(divide="ignore"):
            f = 1 / (s2[..., None, :] - s2[..., :, None])  # f[i, j] = 1 / (s_j^2 - s_i^2)
        eye = np.eye(k, dtype=bool)
        f = np.where(eye, 0, f)
        ut_gu = np.swapaxes(u, -1, -2) @ g_u
        vt_gv = np.swapaxes(v, -1, -2) @ g_v
        j = f * (ut_gu - np.swapaxes(ut_gu, -1, -2))
        l = f * (vt_gv - np.swapaxes(vt_gv, -1, -2))  # noqa: E741
        core = j * s[..., None, :] + s[..., :, None] * l + np.einsum("...i,ij->...ij", g_s, eye)
        grad = u @ core @ vh
        m, n = u.shape[-2], v.shape[-2]
        inv_s = 1 / s
        if m > k:  # (I - U U^T) gU S^-1 V^T
            grad = grad + (g_u - u @ ut_gu) * inv_s[..., None, :] @ vh
        if n > k:  # U S^-1 gV^T (I - V V^T)
            g_vt = np.swapaxes(g_v, -1, -2) - np.swapaxes(vt_gv, -1, -2) @ vh
            grad = grad + u @ (inv_s[..., :, None] * g_vt)
        return grad.astype(g_s.dtype, copy=False), None


def svd(A: Any, full_matrices: bool = True, *, driver: Any = None) -> Any:  # noqa: N803
    """``(U, S, Vh)`` with ``A = U @ diag(S) @ Vh`` and the singular values ``S`` in descending order."""
    if A._data.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    if A._data.dtype.kind not in "f":
        raise RuntimeError(
            f"linalg.svd: mininn supports real floating point input, got {torch_type_name(A._data.dtype)}"
        )
    return svd_result(*Svd.apply(A, bool(full_matrices)))


def svd_v(input: Any, some: bool = True, compute_uv: bool = True) -> Any:
    """``torch.svd``: ``(U, S, V)`` with ``input = U @ diag(S) @ V^T`` (reduced unless ``some``)."""
    u, s, vh = svd(input, full_matrices=not some)
    if not compute_uv:
        return svd_v_result(u * 0, s, transpose(vh, -2, -1) * 0)
    return svd_v_result(u, s, transpose(vh, -2, -1))


def pinv(A: Any, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Any:  # noqa: N803
    """The Moore-Penrose pseudo-inverse: ``V diag(1/S) U^T`` over the singular values above the cutoff
    (``max(atol, rtol * S.max())``, ``rtol`` defaulting to ``eps * max(m, n)``)."""
    u, s, vh = svd(A, full_matrices=False)
    m, n = A._data.shape[-2:]
    if rtol is None:
        rtol = np.finfo(A._data.dtype).eps * max(m, n) if atol is None else 0.0
    top = s._data[..., :1]
    cutoff = np.maximum(0.0 if atol is None else atol, rtol * top)
    keep = wrap(s._data > cutoff)
    inv_s = where(keep, div(1.0, where(keep, s, 1.0)), 0.0)
    return matmul(mul(transpose(vh, -2, -1), unsqueeze(inv_s, -2)), transpose(u, -2, -1))


def pinverse(input: Any, rcond: float = 1e-15) -> Any:
    """``linalg.pinv`` with a relative cutoff ``rcond``."""
    return pinv(input, rtol=rcond)
