"""Data types: torch-named wrappers around NumPy dtypes.

``mininn.float32`` prints as ``mininn.float32`` and compares equal only to
itself; ``dtype.np`` is the NumPy dtype that arrays of it use.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "dtype",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
    "complex64",
    "complex128",
    "from_numpy_dtype",
    "as_dtype",
    "get_default_dtype",
    "set_default_dtype",
]


class dtype:  # noqa: N801 - torch's name
    """A tensor element type. Use the module constants, never construct one."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize")

    def __init__(self, name: str, np_dtype: np.dtype, is_floating_point: bool) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = is_floating_point
        self.is_complex = self.np.kind == "c"
        self.is_signed = name not in ("uint8", "bool")
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"mininn.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    def to_real(self) -> dtype:
        """The real dtype of a complex one (``complex64`` -> ``float32``); others map to themselves."""
        return _REAL.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype of a floating one (``float32`` -> ``complex64``)."""
        if self.is_complex:
            return self
        if self not in _COMPLEX:
            raise RuntimeError(f"to_complex is not supported for {self}")  # mininn's own message
        return _COMPLEX[self]


float16 = dtype("float16", np.float16, True)
float32 = dtype("float32", np.float32, True)
float64 = dtype("float64", np.float64, True)
int8 = dtype("int8", np.int8, False)
int16 = dtype("int16", np.int16, False)
int32 = dtype("int32", np.int32, False)
int64 = dtype("int64", np.int64, False)
uint8 = dtype("uint8", np.uint8, False)
bool = dtype("bool", np.bool_, False)  # noqa: A001 - torch's name
complex64 = dtype("complex64", np.complex64, False)  # torch: complex is not floating point
complex128 = dtype("complex128", np.complex128, False)
_COMPLEX = {float32: complex64, float64: complex128}
_REAL = {complex64: float32, complex128: float64}

try:  # bfloat16 needs ml_dtypes; without it the name exists but is None
    import ml_dtypes

    bfloat16: dtype | None = dtype("bfloat16", ml_dtypes.bfloat16, True)
except ImportError:  # pragma: no cover - depends on the environment
    bfloat16 = None

_ALL = [float16, float32, float64, int8, int16, int32, int64, uint8, bool, complex64, complex128]
if bfloat16 is not None:
    _ALL.append(bfloat16)
_FROM_NP: dict[np.dtype, dtype] = {d.np: d for d in _ALL}
_BY_NAME: dict[str, dtype] = {d.name: d for d in _ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, long=int64, int=int32, cfloat=complex64,
                cdouble=complex128)


def from_numpy_dtype(np_dtype: np.dtype | type) -> dtype:
    """The mininn dtype whose arrays have NumPy dtype ``np_dtype``."""
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        supported = ", ".join(sorted(d.name for d in _ALL))
        raise TypeError(f"unsupported dtype {np_dtype}; supported: {supported}") from None


def as_dtype(value: dtype | str | np.dtype | type) -> dtype:
    """Accept a mininn dtype, its name (``"float32"``) or a NumPy dtype."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str):
        name = value.removeprefix("mininn.").removeprefix("torch.")
        if name in _BY_NAME:
            return _BY_NAME[name]
        supported = ", ".join(sorted(d.name for d in _ALL))
        raise TypeError(f"unknown dtype {value!r}; supported: {supported}")
    legacy = getattr(value, "dtype", None) if isinstance(value, type) else None
    if isinstance(legacy, dtype):  # a legacy tensor type: FloatTensor
        return legacy
    return from_numpy_dtype(value)


class _DefaultDtype:
    value: dtype = float32


_default = _DefaultDtype()  # process-wide, as in torch


def get_default_dtype() -> dtype:
    """The floating-point dtype that factories use for Python floats."""
    return _default.value


def set_default_dtype(d: dtype) -> None:
    """Set the default floating-point dtype (float16, float32 or float64)."""
    d = as_dtype(d)
    if d not in (float16, float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    _default.value = d
