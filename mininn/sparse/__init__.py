"""``torch.sparse`` on NumPy: COO tensors, enough for graph networks' forward and backward passes.

``mininn.sparse_coo_tensor(indices, values, size)`` makes a ``SparseTensor`` (``layout ==
mininn.sparse_coo``): COO indices and a values Tensor, never a dense array. It multiplies dense
matrices (``mm``, ``spmm``, ``matmul``, ``@``, ``sparse.mm``), sums (``sparse.sum``), coalesces,
transposes, scales and converts (``to_dense``, ``Tensor.to_sparse``), takes softmaxes over its entries
(``sparse.softmax``/``log_softmax``) and ``sparse.addmm``; every other op stops with its
name and ``.to_dense()`` as the way on. Gradients reach the values (and the dense operand) as in torch.
"""

from __future__ import annotations

import warnings
from typing import Any

from mininn import _dtype
from mininn._layout import layout, sparse_coo, strided
from mininn.sparse._matmul import addmm, matmul, mm, sparse_mm, spmm
from mininn.sparse._reduce import sparse_sum
from mininn.sparse._softmax import log_softmax, softmax
from mininn.sparse._tensor import SparseTensor, sparse_coo_tensor, to_sparse

__all__ = [
    "SparseTensor", "layout", "strided", "sparse_coo", "sparse_coo_tensor", "to_sparse", "mm", "spmm",
    "matmul", "sum", "addmm", "softmax", "log_softmax",
    "FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor", "HalfTensor",
]

sum = sparse_sum  # noqa: A001 - torch.sparse.sum
mm = sparse_mm  # noqa: F811 - torch.sparse.mm (the top-level mininn.mm is _matmul.mm)


def _warn_legacy(old: str, new: str) -> None:
    warnings.warn(
        f"torch.sparse.SparseTensor({old}) is deprecated.  Please use torch.sparse_coo_tensor({new}).",
        UserWarning,
        stacklevel=3,
    )


def _legacy_sparse(name: str, dt: _dtype.dtype) -> Any:
    """``torch.sparse.FloatTensor``-style constructor: ``(indices, values, size)`` or ``(*sizes)``."""

    def construct(*args: Any, device: Any = None) -> SparseTensor:
        from mininn._factories import tensor

        if args and all(isinstance(a, int) for a in args):
            _warn_legacy("shape, *, device=", "shape, dtype=, device=")
            indices = tensor([], dtype=_dtype.int64).reshape(len(args), 0)
            return sparse_coo_tensor(indices, tensor([], dtype=dt), args, device=device)
        _warn_legacy("indices, values, shape, *, device=", "indices, values, shape, dtype=, device=")
        return sparse_coo_tensor(*args, device=device)

    construct.__name__ = construct.__qualname__ = name
    construct.__doc__ = f"Legacy ``torch.sparse.{name}``: empty of sizes, or (indices, values, size)"
    return construct


FloatTensor = _legacy_sparse("FloatTensor", _dtype.float32)
DoubleTensor = _legacy_sparse("DoubleTensor", _dtype.float64)
HalfTensor = _legacy_sparse("HalfTensor", _dtype.float16)
LongTensor = _legacy_sparse("LongTensor", _dtype.int64)
IntTensor = _legacy_sparse("IntTensor", _dtype.int32)
ByteTensor = _legacy_sparse("ByteTensor", _dtype.uint8)
BoolTensor = _legacy_sparse("BoolTensor", _dtype.bool)
