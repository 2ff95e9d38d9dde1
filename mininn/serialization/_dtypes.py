"""Element types a checkpoint may hold, named as mininn names them."""

from __future__ import annotations

import numpy as np

from mininn import _dtype
from mininn.serialization._errors import CheckpointError

__all__ = ["SUPPORTED", "numpy_dtype", "dtype_name"]

SUPPORTED = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
)


def numpy_dtype(name: str, *, where: str) -> np.dtype:
    """The NumPy dtype of mininn dtype ``name`` (``"float32"``, ``"bfloat16"``, ...).

    Raises:
        CheckpointError: ``name`` is not supported, or it is bfloat16 and the
            ``ml_dtypes`` package is not installed.
    """
    if name not in SUPPORTED:
        raise CheckpointError(f"{where} has unsupported dtype {name!r}; supported: {', '.join(SUPPORTED)}")
    if name == "bfloat16" and _dtype.bfloat16 is None:
        raise CheckpointError(
            f"{where} is bfloat16, which needs the ml_dtypes package: pip install ml_dtypes"
        )
    return _dtype.as_dtype(name).np


def dtype_name(dtype: np.dtype, *, where: str) -> str:
    """The mininn name of NumPy dtype ``dtype``, for writing.

    Raises:
        CheckpointError: mininn has no such dtype.
    """
    try:
        name = _dtype.from_numpy_dtype(dtype).name
    except TypeError:
        name = None
    if name not in SUPPORTED:  # complex tensors exist in mininn but not in checkpoints
        raise CheckpointError(
            f"cannot save {where}: unsupported dtype {dtype}; supported: {', '.join(SUPPORTED)}"
        )
    return name
