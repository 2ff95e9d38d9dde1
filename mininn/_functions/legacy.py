"""torch's older spellings, kept for the model code that still calls them: ``chain_matmul``,
``range`` (end included), ``nuclear_norm``, ``frobenius_norm``, ``ger``, ``fix``,
``scalar_tensor``. The deprecated ones warn with torch's text.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._factories import _finish, tensor
from mininn._functions import linalg as L
from mininn._functions import norms as N
from mininn._functions import unary as U
from mininn._functions._util import legacy_type_name
from mininn._layout import check_dense
from mininn._tensor_core import TensorCore

__all__ = ["chain_matmul", "range", "nuclear_norm", "frobenius_norm", "ger", "fix", "scalar_tensor"]


def _warn_deprecated(message: str) -> None:
    """torch's deprecation warning (a UserWarning) at the caller of the deprecated function."""
    warnings.warn(message, UserWarning, stacklevel=3)


def chain_matmul(*matrices: Any) -> Any:
    """The product of the matrices, left to right (deprecated: ``linalg.multi_dot``)."""
    _warn_deprecated(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
        "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
        "parameters.",
    )
    return multi_dot(matrices)


def multi_dot(tensors: Any) -> Any:
    """The product of the matrices (the first and last may be vectors), left to right."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    out = tensors[0]
    for t in tensors[1:]:
        out = L.matmul(out, t)
    return out


def range(start: Any, end: Any, step: Any = 1, *, dtype: Any = None, layout: Any = None,  # noqa: A001
          device: Any = None, pin_memory: bool | None = False, requires_grad: bool = False) -> Any:
    """Values from ``start`` to ``end`` inclusive (deprecated: ``arange`` excludes ``end``)."""
    check_dense(layout, pin_memory)
    _warn_deprecated(
        "torch.range is deprecated and will be removed in a future release because its behavior is "
        "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
        "[start, end).",
    )
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    n = int(np.floor((end - start) / step)) + 1
    arr = (start + step * np.arange(max(n, 0), dtype=np.float64)).astype(dt.np)
    return _finish(arr, device, requires_grad)


def nuclear_norm(input: Any, dim: Any = (-2, -1), keepdim: bool = False) -> Any:  # noqa: A002
    """The sum of the singular values (deprecated: ``linalg.matrix_norm(A, "nuc")``)."""
    _warn_deprecated(
        "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in a "
        "future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
    )
    return N.matrix_norm(input, "nuc", dim, keepdim)


def frobenius_norm(input: Any, dim: Any = (-2, -1), keepdim: bool = False) -> Any:  # noqa: A002
    """The 2-norm over ``dim`` (deprecated: ``linalg.vector_norm``)."""
    _warn_deprecated(
        "at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
        "a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
    )
    return N.vector_norm(input, 2, dim, keepdim)


ger = L.outer
fix = U.trunc


def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool | None = False, requires_grad: bool = False) -> Any:
    """A 0-d tensor holding ``s`` (the default float dtype unless ``dtype`` is given)."""
    check_dense(layout, pin_memory)
    dt = _dtype.get_default_dtype() if dtype is None else dtype
    return tensor(s, dtype=dt, device=device, requires_grad=requires_grad)


def typename(obj: Any) -> str:
    """torch's type name: ``"torch.FloatTensor"`` for a float32 tensor, the class name otherwise."""
    if isinstance(obj, TensorCore):
        return legacy_type_name(obj._data.dtype)
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", "__main__") else f"{module}.{name}"
