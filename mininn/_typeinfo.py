"""Facts about dtypes: ``finfo``/``iinfo`` (limits, as model code uses for masks)
and torch's promotion queries ``promote_types``, ``result_type``, ``can_cast``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn import _dtype
from mininn._functions._util import category, promote_arrays, scalar_result_dtype
from mininn._tensor_core import TensorCore

__all__ = ["finfo", "iinfo", "promote_types", "result_type", "can_cast"]


def _np_finfo(d: _dtype.dtype) -> Any:
    if d.name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.finfo(d.np)
    return np.finfo(d.np)


class finfo:  # noqa: N801 - torch's name
    """Limits of a floating dtype (the default dtype when none is given; a complex dtype's real part)."""

    def __init__(self, type: Any = None) -> None:  # noqa: A002 - torch's argument name
        d = _dtype.get_default_dtype() if type is None else _dtype.as_dtype(type)
        d = d.to_real()
        if not d.is_floating_point:
            raise TypeError(
                "torch.finfo() requires a floating point input type. Use torch.iinfo to handle 'torch.finfo'"
            )
        info = _np_finfo(d)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = d.name

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
            f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})"
        )


class iinfo:  # noqa: N801 - torch's name
    """Limits of an integer dtype."""

    def __init__(self, type: Any) -> None:  # noqa: A002 - torch's argument name
        d = _dtype.as_dtype(type)
        if d is _dtype.bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d.is_floating_point or d.is_complex:
            raise TypeError(
                "torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'"
            )
        info = np.iinfo(d.np)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = d.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def promote_types(type1: Any, type2: Any) -> _dtype.dtype:
    """The dtype two tensors of these dtypes compute in (a higher category wins, then the larger size)."""
    a = np.empty(1, _dtype.as_dtype(type1).np)
    b = np.empty(1, _dtype.as_dtype(type2).np)
    return _dtype.from_numpy_dtype(promote_arrays(a, b, True, True))


def _scalar_dtype(value: Any) -> np.dtype:
    if isinstance(value, bool):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return np.dtype(np.int64)
    if isinstance(value, float):
        return _dtype.get_default_dtype().np
    if isinstance(value, complex):
        return _dtype._COMPLEX.get(_dtype.get_default_dtype(), _dtype.complex64).np
    raise TypeError(f"result_type(): expected a Tensor or a Python number, got {type(value).__name__}")


def result_type(tensor: Any = None, other: Any = None, *, scalar: Any = None, scalar1: Any = None,
                scalar2: Any = None) -> _dtype.dtype:
    """The dtype of an arithmetic op between two tensors or numbers, by torch's promotion rules.

    torch's overloads name the operands ``(tensor, other)``, ``(scalar, tensor)`` or
    ``(scalar1, scalar2)``; promotion does not depend on their order.
    """
    given = [v for v in (tensor, other, scalar, scalar1, scalar2) if v is not None]
    if len(given) != 2:
        raise TypeError(f"result_type() takes two operands, got {len(given)}")
    tensor1, tensor2 = given
    t1, t2 = isinstance(tensor1, TensorCore), isinstance(tensor2, TensorCore)
    if t1 and t2:
        a, b = tensor1._data, tensor2._data
        return _dtype.from_numpy_dtype(promote_arrays(a, b, a.ndim > 0, b.ndim > 0))
    if t1 or t2:
        t, s = (tensor1, tensor2) if t1 else (tensor2, tensor1)
        return _dtype.from_numpy_dtype(scalar_result_dtype(t._data.dtype, s))
    a, b = _scalar_dtype(tensor1), _scalar_dtype(tensor2)
    return _dtype.from_numpy_dtype(a if category(a) >= category(b) else b)


def can_cast(from_: Any, to: Any) -> bool:
    """Whether torch's same-kind casting allows ``from_`` to ``to`` (never to a lower category)."""
    return category(_dtype.as_dtype(from_).np) <= category(_dtype.as_dtype(to).np)
