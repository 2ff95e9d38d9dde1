"""Matrix products: matmul (``@``), mm, bmm, outer, dot and einsum."""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import string
from typing import Any

import numpy as np

from mininn._functions._util import cpp_type_name, torch_type_name, unbroadcast
from mininn._functions.elementwise import mul
from mininn._functions.shape import expand, reshape
from mininn.autograd.graph import ArrayFunction, Context


def _blas_ready(x: Any) -> Any:
    """A C-contiguous copy of a non-contiguous stack of matrices.

    NumPy's matmul falls back to a slow non-BLAS loop for stacked operands whose
    strides it cannot hand to BLAS (attention heads after a permute: ~20x slower);
    one copy is far cheaper than that.
    """
    if x.ndim > 2 and not x.flags.c_contiguous:
        return np.ascontiguousarray(x)
    return x


class MatMul(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return np.matmul(_blas_ready(a), _blas_ready(b))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        if g.dtype.kind == "c":  # torch's convention for complex inputs: products with the conjugates
            a, b = np.conj(a), np.conj(b)
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


def check_batches(batch1: Any, batch2: Any) -> None:
    """torch's checks of ``bmm``/``baddbmm`` operands: two 3-D tensors of matching batch and inner size."""
    a, b = batch1._data, batch2._data
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, "
            f"{a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}]."
        )


def bmm(input: Any, mat2: Any) -> Any:
    """Batched product of two 3-D tensors with the same batch size."""
    check_batches(input, mat2)
    return matmul(input, mat2)


def outer(input: Any, vec2: Any) -> Any:
    """``input[:, None] * vec2[None, :]`` for two vectors."""
    for name, v in (("self", input), ("vec2", vec2)):
        if v._data.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v._data.ndim}-D")
    return mul(reshape(input, -1, 1), reshape(vec2, 1, -1))


def dot(input: Any, tensor: Any) -> Any:
    """Inner product of two 1-D tensors."""
    other = tensor
    a, b = input._data, other._data
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors"
        )
    return matmul(input, other)


# ---- einsum --------------------------------------------------------------------------------

# torch's label order: sublist integers 0-25 are A-Z, 26-51 are a-z; the implicit output is sorted so
_LABELS = string.ascii_uppercase + string.ascii_lowercase


def _sublist_equation(args: tuple[Any, ...]) -> tuple[str, list[Any]]:
    """``einsum(op1, [0, 1], op2, [1, 2], [0, 2])`` as an equation string and its operands."""
    def term(sub: Any) -> str:
        return "".join("..." if s is Ellipsis else _LABELS[int(s)] for s in sub)

    operands = list(args[0::2])
    subs = [term(s) for s in args[1::2]]
    if len(args) % 2:  # a trailing output sublist
        operands.pop()
        return ",".join(subs[: len(operands)]) + "->" + term(args[-1]), operands
    return ",".join(subs), operands


def _split_term(term: str, offset: int) -> list[str]:
    """A term's labels, ``"..."`` kept as one item; torch's message for anything else."""
    labels: list[str] = []
    i = 0
    while i < len(term):
        if term.startswith("...", i):
            labels.append("...")
            i += 3
            continue
        if term[i] not in _LABELS:
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {offset + i} in the equation string, "
                "subscripts must be in [a-zA-Z]"
            )
        labels.append(term[i])
        i += 1
    return labels


def _parse_einsum(equation: str, shapes: list[tuple[int, ...]]) -> tuple[list[str], str]:
    """Each operand's labels (ellipsis spelled out with spare letters) and the output's."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    raw_terms = lhs.split(",")
    if len(raw_terms) != len(shapes):
        raise RuntimeError(
            "einsum(): more operands were provided than specified in the equation"
            if len(raw_terms) < len(shapes)
            else "einsum(): fewer operands were provided than specified in the equation"
        )
    terms, offset = [], 0
    for t in raw_terms:
        terms.append(_split_term(t, offset))
        offset += len(t) + 1
    spare = [c for c in _LABELS if c not in eq]
    n_ell = 0
    for k, (labels, shape) in enumerate(zip(terms, shapes)):
        named = len([c for c in labels if c != "..."])
        if "..." not in labels and named != len(shape):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({named}) does not match the number of "
                f"dimensions ({len(shape)}) for operand {k} and no ellipsis was given"
            )
        if "..." in labels and named > len(shape):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({named}) is more than the number of "
                f"dimensions ({len(shape)}) for operand {k}"
            )
        if "..." in labels:
            n_ell = max(n_ell, len(shape) - named)
    ell = "".join(spare[:n_ell])
    expanded = []
    for labels, shape in zip(terms, shapes):
        k = len(shape) - (len(labels) - 1)
        expanded.append("".join(ell[n_ell - k :] if c == "..." else c for c in labels))
    if not arrow:
        counts: dict[str, int] = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        return expanded, ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    out = "".join(ell if c == "..." else c for c in _split_term(rhs, len(lhs) + 2))
    for c in out:
        if out.count(c) > 1:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
        if not any(c in t for t in expanded):
            raise RuntimeError(
                f"einsum(): output subscript {c} does not appear in the equation for any input operand"
            )
    return expanded, out


def _label_sizes(terms: list[str], shapes: list[tuple[int, ...]]) -> dict[str, int]:
    """Each label's size, broadcasting size-1 dims as torch does, with torch's messages."""
    sizes: dict[str, int] = {}
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        own: dict[str, int] = {}
        for c, n in zip(term, shape):
            if c in own and own[c] != n:
                raise RuntimeError(
                    f"einsum(): subscript {c} is repeated for operand {k} but the sizes don't match, "
                    f"{n} != {own[c]}"
                )
            own[c] = n
        for c, n in own.items():
            seen = sizes.get(c, 1)
            if n != seen and n != 1 and seen != 1:
                raise RuntimeError(
                    f"einsum(): subscript {c} has size {n} for operand {k} which does not broadcast with "
                    f"previously seen size {seen}"
                )
            sizes[c] = max(seen, n) if n and seen else 0
    return sizes


class Einsum(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, spec: tuple[list[str], str], arrays: list[Any]) -> Any:
        terms, out = spec
        ctx.save_for_backward(*arrays)
        ctx.meta = (terms, out)
        return np.asarray(np.einsum(",".join(terms) + "->" + out, *arrays, optimize=len(arrays) > 2))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        arrays = ctx.saved_tensors
        if g.dtype.kind == "c":
            arrays = tuple(np.conj(x) for x in arrays)
        terms, out = ctx.meta
        grads = []
        for i, (term, a) in enumerate(zip(terms, arrays)):
            others = [(t, x) for j, (t, x) in enumerate(zip(terms, arrays)) if j != i]
            present = set(out).union(*(set(t) for t, _ in others))
            unique = "".join(dict.fromkeys(term))
            target = "".join(c for c in unique if c in present)
            spec = ",".join([out] + [t for t, _ in others]) + "->" + target
            gi = np.einsum(spec, g, *(x for _, x in others), optimize=len(others) > 1)
            size = dict(zip(term, a.shape))
            # labels summed away in this operand alone get the gradient broadcast back
            gu = np.broadcast_to(gi.reshape([size[c] if c in present else 1 for c in unique]),
                                 [size[c] for c in unique])
            if unique == term:
                grads.append(gu.astype(a.dtype, copy=False))
                continue
            ga = np.zeros(a.shape, a.dtype)
            np.einsum(f"{term}->{unique}", ga)[...] = gu  # a writable view of the repeated diagonal
            grads.append(ga)
        return None, grads


def einsum(*args: Any) -> Any:
    """Einstein summation: ``einsum("bij,bjk->bik", a, b)``, the implicit form ``einsum("ij,jk", a, b)``,
    ellipsis, repeated labels (``"ii"`` is the trace), a list of operands, or the sublist form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``. Size-1 dims broadcast, as in torch."""
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_equation(args)
    shapes = [tuple(op._data.shape) for op in operands]
    terms, out = _parse_einsum(equation, shapes)
    for op in operands[1:]:
        if op._data.dtype != operands[0]._data.dtype:
            raise RuntimeError(
                f"expected scalar type {torch_type_name(operands[0]._data.dtype)} but found "
                f"{torch_type_name(op._data.dtype)}"
            )
    sizes = _label_sizes(terms, shapes)
    for k, (term, op) in enumerate(zip(terms, operands)):
        want = tuple(sizes[c] for c in term)
        if want != shapes[k]:
            operands[k] = expand(op, want)
    return Einsum.apply((terms, out), operands)
