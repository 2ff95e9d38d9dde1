"""Matrix products with a sparse COO operand: ``torch.mm``/``spmm``/``matmul``/``@`` and ``torch.sparse.mm``.

The top-level ``mm``, ``matmul`` and ``spmm`` of mininn are these functions: a dense pair goes
straight to the dense op; a sparse operand comes here. ``torch.sparse.mm`` differs from
``torch.mm`` only in the gradient of a sparse leaf (sparse with the leaf's pattern, not dense).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions import linalg as L
from mininn._tensor_core import TensorCore
from mininn.sparse import _ops as O
from mininn.sparse._tensor import SparseTensor
from mininn.tensor import Tensor

__all__ = ["mm", "matmul", "spmm", "sparse_mm", "addmm"]

_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _check(s: SparseTensor, d: Any) -> None:
    """torch's checks of ``sparse @ dense``: a 2-D sparse matrix, a 2-D dense one, sizes and dtypes."""
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {s.ndim}D tensor")
    if not isinstance(d, TensorCore):
        raise TypeError(f"mm(): argument 'mat2' must be Tensor, not {type(d).__name__}")
    if d.ndim != 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)"
                         if d.ndim == 1 else f"addmm: matrices expected, got {d.ndim}D tensor")
    if d.shape[0] != s.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s.shape[1]}, got {d.shape[0]}")
    if d.dtype is not s.dtype:
        raise RuntimeError(
            f"expected scalar type {_SCALAR_NAMES.get(s.dtype.name, s.dtype.name)} but found "
            f"{_SCALAR_NAMES.get(d.dtype.name, d.dtype.name)}"
        )


def _sparse_dense(s: SparseTensor, d: Tensor, dense_leaf_grad: bool, transposed: bool = False) -> Tensor:
    """``s @ d`` (``s.T @ d`` when ``transposed``); a leaf ``s`` gets dense gradients: ``dense_leaf_grad``."""
    _check(s.t() if transposed else s, d)
    rows, cols = s._idx[0], s._idx[1]
    if dense_leaf_grad and s._own_leaf and s.requires_grad:
        if s._sink is None:
            zero = np.zeros((), dtype=s._vals._data.dtype)
            s._sink = Tensor(np.broadcast_to(zero, s._size), requires_grad=True)
        return O.SpMMDenseGrad.apply(s._sink, d, s._vals._data, rows, cols, transposed)
    if transposed:
        rows, cols = cols, rows
    return O.SpMM.apply(s._vals, d, rows, cols, s._size[1 if transposed else 0])


def _product(a: Any, b: Any, dense_leaf_grad: bool) -> Tensor:
    if isinstance(a, SparseTensor):
        if isinstance(b, SparseTensor):
            return _sparse_dense(a, b.to_dense(), dense_leaf_grad).to_sparse()
        return _sparse_dense(a, b, dense_leaf_grad)
    # dense @ sparse = (sparse.T @ dense.T).T
    if not isinstance(a, TensorCore) or a.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {getattr(a, 'ndim', 0)}D tensor")
    if b.sparse_dim() != 2 or b.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {b.ndim}D tensor")
    return _sparse_dense(b, a.t(), dense_leaf_grad, transposed=True).t()


def mm(input: Any, mat2: Any) -> Tensor:  # noqa: A002 - torch's name
    """Product of two 2-D matrices; either may be sparse COO (``torch.mm``)."""
    if type(input) is SparseTensor or type(mat2) is SparseTensor:
        return _product(input, mat2, True)
    return L.mm(input, mat2)


def spmm(input: Any, mat2: Any) -> Tensor:  # noqa: A002 - torch's name
    """``torch.spmm``: ``mm`` with a sparse COO first operand."""
    return mm(input, mat2)


def matmul(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's name
    """Matrix product with broadcasting; a 2-D sparse COO operand takes a 1-D or 2-D dense one."""
    if type(input) is SparseTensor or type(other) is SparseTensor:
        if type(input) is SparseTensor and isinstance(other, TensorCore) and other.ndim == 1:
            return _product(input, other.reshape(-1, 1), True).reshape(-1)
        return _product(input, other, True)
    return L.matmul(input, other)


def sparse_mm(mat1: Any, mat2: Any, reduce: str = "sum") -> Tensor:
    """``torch.sparse.mm``: as ``mm``, but a sparse leaf's gradient is sparse with its own pattern."""
    if reduce != "sum":
        raise NotImplementedError(f"torch.sparse.mm(reduce={reduce!r}): mininn supports reduce='sum' only")
    if type(mat1) is not SparseTensor and type(mat2) is not SparseTensor:
        return L.mm(mat1, mat2)
    return _product(mat1, mat2, False)


def _rmatmul(self: SparseTensor, other: Any) -> Tensor:
    return matmul(other, self)


# the methods of SparseTensor: ``s.mm(d)``, ``s @ d``, and ``d @ s`` (Python asks the subclass first)
SparseTensor.mm = SparseTensor.spmm = mm  # type: ignore[method-assign]
SparseTensor.matmul = SparseTensor.__matmul__ = matmul  # type: ignore[method-assign]
SparseTensor.__rmatmul__ = _rmatmul  # type: ignore[method-assign]


def addmm(mat: Any, mat1: Any, mat2: Any, *, beta: float = 1.0, alpha: float = 1.0) -> Tensor:
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)`` with a sparse COO ``mat1``."""
    return mat * beta + sparse_mm(mat1, mat2) * alpha
