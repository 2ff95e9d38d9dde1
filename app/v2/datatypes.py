"""Open Inference Protocol datatypes and their NumPy and Triton counterparts.

``FP32`` travels as ``float32`` arrays, ``BYTES`` as object arrays of
``bytes``; ``BF16`` needs ``ml_dtypes``. Triton's model configuration names
the same types ``TYPE_FP32`` ... ``TYPE_STRING``.
"""

from __future__ import annotations

import numpy as np

from models.signature import V2_DATATYPES

__all__ = [
    "DATATYPES",
    "is_bytes",
    "numpy_dtype",
    "triton_type",
    "v2_datatype",
]

_NUMPY = V2_DATATYPES

DATATYPES: tuple[str, ...] = tuple(_NUMPY)
"""Every datatype this server can receive and send."""

_FROM_NUMPY: dict[np.dtype, str] = {dt: name for name, dt in _NUMPY.items()}
_FROM_NUMPY[np.dtype(np.bytes_)] = "BYTES"
_FROM_NUMPY[np.dtype(np.str_)] = "BYTES"


def numpy_dtype(datatype: str) -> np.dtype:
    """The NumPy dtype of arrays of V2 ``datatype`` (``"FP32"`` -> float32).

    Raises:
        ValueError: ``datatype`` is not one this server supports; the message lists them.
    """
    try:
        return _NUMPY[datatype]
    except (KeyError, TypeError):
        raise ValueError(f"unknown datatype {datatype!r}; expected one of {', '.join(DATATYPES)}") from None


def v2_datatype(dtype: np.dtype | type) -> str:
    """The V2 datatype name of NumPy ``dtype`` (float32 -> ``"FP32"``)."""
    dt = np.dtype(dtype)
    if dt.kind in "SU":
        return "BYTES"
    try:
        return _FROM_NUMPY[dt]
    except KeyError:
        raise ValueError(f"NumPy dtype {dt} has no Open Inference Protocol datatype") from None


def is_bytes(datatype: str) -> bool:
    """Whether ``datatype`` is the variable-length ``BYTES`` type."""
    return datatype == "BYTES"


def triton_type(datatype: str) -> str:
    """Triton's model-configuration name for ``datatype``: ``FP32`` -> ``TYPE_FP32``."""
    if datatype == "BYTES":
        return "TYPE_STRING"
    return f"TYPE_{datatype}"
