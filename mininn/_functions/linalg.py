"""Matrix products: matmul (``@``), mm, bmm, outer, dot and einsum."""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import string
from typing import Any

import numpy as np

from mininn._functions._util import cpp_type_name, unbroadcast
from mininn.autograd.function import Context, Function


def _blas_ready(x: Any) -> Any:
    """A C-contiguous copy of a non-contiguous stack of matrices.

    NumPy's matmul falls back to a slow non-BLAS loop for stacked operands whose
    strides it cannot hand to BLAS (attention heads after a permute: ~20x slower);
    one copy is far cheaper than that.
    """
    if x.ndim > 2 and not x.flags.c_contiguous:
        return np.ascontiguousarray(x)
    return x


class MatMul(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return np.matmul(_blas_ready(a), _blas_ready(b))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        if a.ndim == 1 and b.ndim == 1:  # inner product: g is 0-d
            return (g * b if need_a else None), (g * a if need_b else None)
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        g2 = g
        if a.ndim == 1:
            g2 = np.expand_dims(g2, -2)
        if b.ndim == 1:
            g2 = np.expand_dims(g2, -1)
        ga = gb = None
        if need_a:
            ga = np.matmul(_blas_ready(g2), _blas_ready(np.swapaxes(b2, -1, -2)))
            if a.ndim == 1:
                ga = ga.reshape(ga.shape[:-2] + ga.shape[-1:])
            ga = unbroadcast(ga, a.shape)
        if need_b:
            gb = np.matmul(_blas_ready(np.swapaxes(a2, -1, -2)), _blas_ready(g2))
            if b.ndim == 1:
                gb = gb.reshape(gb.shape[:-1])
            gb = unbroadcast(gb, b.shape)
        return ga, gb


def _check_matmul(a: Any, b: Any) -> None:
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D and {b.ndim}D"
        )
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {cpp_type_name(a.dtype)} != "
            f"{cpp_type_name(b.dtype)}"
        )
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if k_a == k_b:
        if a.ndim > 2 or b.ndim > 2:
            _check_batch(a, b)
        return
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError(
            "inconsistent tensor size, expected tensor [%d] and src [%d] to have the same "
            "number of elements, but got %d and %d elements respectively"
            % (a.shape[0], b.shape[0], a.shape[0], b.shape[0])
        )
    if b.ndim == 1:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[-2] if a.ndim > 1 else 1}), "
            f"mat ({a.shape[-2] if a.ndim > 1 else 1}x{k_a}), vec ({k_b})"
        )
    rows = a.shape[-2] if a.ndim > 1 else 1
    m1 = f"{int(np.prod(a.shape[:-1]))}x{k_a}" if a.ndim > 2 else f"{rows}x{k_a}"
    raise RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({m1} and {k_b}x{b.shape[-1]})"
    )


def _check_batch(a: Any, b: Any) -> None:
    batch_a, batch_b = a.shape[:-2], b.shape[:-2]
    try:
        np.broadcast_shapes(batch_a, batch_b)
    except ValueError:
        raise RuntimeError(
            f"The size of tensor a ({batch_a[-1]}) must match the size of tensor b "
            f"({batch_b[-1]}) at non-singleton dimension {max(len(batch_a), len(batch_b)) - 1}"
        ) from None


def matmul(input: Any, other: Any) -> Any:
    """Matrix product with NumPy/torch broadcasting of batch dims (1-D operands allowed)."""
    _check_matmul(input._data, other._data)
    return MatMul.apply(input, other)


def mm(input: Any, mat2: Any) -> Any:
    """Product of two 2-D matrices."""
    for name, x in (("self", input), ("mat2", mat2)):
        if x._data.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix")
    return matmul(input, mat2)


def bmm(input: Any, mat2: Any) -> Any:
    """Batched product of two 3-D tensors with the same batch size."""
    a, b = input._data, mat2._data
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
            f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}]."
        )
    return matmul(input, mat2)


def outer(input: Any, vec2: Any) -> Any:
    """``input[:, None] * vec2[None, :]`` for two vectors."""
    from mininn._functions.elementwise import mul
    from mininn._functions.shape import reshape

    return mul(reshape(input, -1, 1), reshape(vec2, 1, -1))


def dot(input: Any, other: Any) -> Any:
    """Inner product of two 1-D tensors."""
    a, b = input._data, other._data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors"
        )
    return matmul(input, other)


# ---- einsum --------------------------------------------------------------------------------


def _expand_ellipsis(equation: str, ndims: list[int]) -> tuple[list[str], str]:
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise RuntimeError(
            "einsum(): more operands were provided than specified in the equation"
            if len(terms) < len(ndims)
            else "einsum(): fewer operands were provided than specified in the equation"
        )
    unused = [c for c in string.ascii_letters if c not in equation]
    n_ell = max((n - (len(t) - 3) for t, n in zip(terms, ndims) if "..." in t), default=0)
    ell = "".join(unused[:n_ell])
    expanded = []
    for t, n in zip(terms, ndims):
        if "..." in t:
            k = n - (len(t) - 3)
            t = t.replace("...", ell[n_ell - k :] if k else "")
        expanded.append(t)
    if not arrow:
        counts: dict[str, int] = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    return expanded, rhs


class Einsum(Function):
    @staticmethod
    def forward(ctx: Context, equation: str, arrays: list[Any]) -> Any:
        terms, out = _expand_ellipsis(equation, [a.ndim for a in arrays])
        ctx.save_for_backward(*arrays)
        ctx.meta = (terms, out)
        return np.asarray(np.einsum(",".join(terms) + "->" + out, *arrays, optimize=len(arrays) > 2))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        arrays = ctx.saved_tensors
        terms, out = ctx.meta
        grads = []
        for i, (term, a) in enumerate(zip(terms, arrays)):
            others = [(t, x) for j, (t, x) in enumerate(zip(terms, arrays)) if j != i]
            present = set(out).union(*(set(t) for t, _ in others))
            target = "".join(c for c in term if c in present)
            spec = ",".join([out] + [t for t, _ in others]) + "->" + target
            gi = np.einsum(spec, g, *(x for _, x in others), optimize=len(others) > 1)
            shape = tuple(n if c in present else 1 for c, n in zip(term, a.shape))
            grads.append(np.broadcast_to(gi.reshape(shape), a.shape).astype(a.dtype, copy=False))
        return None, grads


def einsum(equation: str, *operands: Any) -> Any:
    """Einstein summation, e.g. ``einsum("bij,bjk->bik", a, b)`` (ellipsis supported)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for term in equation.replace("->", ",").split(","):
        body = term.replace("...", "")
        if len(set(body)) != len(body):
            raise NotImplementedError(
                f"einsum with a repeated index in one operand ('{term}') is not supported"
            )
    return Einsum.apply(equation, list(operands))

