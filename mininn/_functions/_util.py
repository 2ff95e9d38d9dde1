"""Helpers shared by the op families: broadcasting, dims and torch's type promotion."""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn import _dtype

# torch's type categories: a higher category wins over a lower one regardless of size
_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3
_CATEGORY: dict[np.dtype, int] = {}
for _d in _dtype._ALL:
    _CATEGORY[_d.np] = _FLOAT if _d.is_floating_point else (_BOOL if _d.np.kind == "b" else _INT)
    if _d.is_complex:
        _CATEGORY[_d.np] = _COMPLEX

# torch's capitalised dtype names, used in its messages ("Float", "Long", ...)
TORCH_TYPE_NAMES = {
    "float16": "Half",
    "bfloat16": "BFloat16",
    "float32": "Float",
    "float64": "Double",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def torch_type_name(np_dtype: Any) -> str:
    """torch's name for a dtype in messages: ``Float`` for float32, ``Long`` for int64."""
    return TORCH_TYPE_NAMES[_dtype.from_numpy_dtype(np_dtype).name]


_CPP_NAMES = {
    "Float": "float",
    "Double": "double",
    "Half": "c10::Half",
    "BFloat16": "c10::BFloat16",
    "Long": "long int",
    "Int": "int",
    "Short": "short int",
    "Char": "signed char",
    "Byte": "unsigned char",
    "Bool": "bool",
    "ComplexFloat": "c10::complex<float>",
    "ComplexDouble": "c10::complex<double>",
}


def cpp_type_name(np_dtype: Any) -> str:
    """The C++ type name some torch messages use (``float``, ``long int``)."""
    return _CPP_NAMES[torch_type_name(np_dtype)]


def legacy_type_name(np_dtype: Any) -> str:
    """torch's legacy tensor type name in messages: ``torch.FloatTensor`` for float32."""
    return f"torch.{torch_type_name(np_dtype)}Tensor"


def category(np_dtype: Any) -> int:
    """0 for bool, 1 for integers, 2 for floating point, 3 for complex."""
    return _CATEGORY[np_dtype]


def unbroadcast(grad: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``grad`` down to ``shape``, undoing NumPy broadcasting."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


def broadcast_error(sa: tuple[int, ...], sb: tuple[int, ...]) -> RuntimeError:
    """torch's message for two shapes that do not broadcast."""
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return RuntimeError(
                f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) at "
                f"non-singleton dimension {i}"
            )
    return RuntimeError(f"shapes {list(sa)} and {list(sb)} cannot be broadcast")


def wrap_dim(dim: int, ndim: int) -> int:
    """``dim`` as a non-negative axis, with torch's message when out of range."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def promote_arrays(a: Any, b: Any, a_dim: bool, b_dim: bool) -> np.dtype:
    """torch's result dtype of two tensors' arrays (``*_dim``: has at least one dim).

    A higher category (bool < int < float) wins; within a category a tensor with
    dimensions wins over a 0-d one, and two of the same kind promote by size.
    """
    da, db = a.dtype, b.dtype
    if da == db:
        return da
    ca, cb = _CATEGORY[da], _CATEGORY[db]
    if ca != cb:
        if {ca, cb} == {_FLOAT, _COMPLEX}:
            return _complex_with_float(da, db, a_dim, b_dim)
        return da if ca > cb else db
    if a_dim != b_dim:
        return da if a_dim else db
    return np.promote_types(da, db)


def _complex_with_float(da: np.dtype, db: np.dtype, a_dim: bool, b_dim: bool) -> np.dtype:
    """A complex and a floating dtype: a 0-d operand's precision counts only against another 0-d one."""
    if a_dim == b_dim:
        return np.promote_types(da, db)
    with_dims = da if a_dim else db
    return np.promote_types(with_dims, np.complex64) if with_dims.kind == "f" else with_dims


def scalar_result_dtype(arr_dtype: np.dtype, scalar: Any) -> np.dtype:
    """torch's result dtype of a tensor op a Python scalar: the scalar only lifts the category."""
    cat = _CATEGORY[arr_dtype]
    if type(scalar) is complex and cat < _COMPLEX:
        real = arr_dtype if cat == _FLOAT else _dtype.get_default_dtype().np
        return np.promote_types(real, np.complex64)
    if type(scalar) is float and cat < _FLOAT:
        return _dtype.get_default_dtype().np
    if type(scalar) is int and cat < _INT:
        return np.dtype(np.int64)
    return arr_dtype

