"""One tensor on the wire: JSON ``data`` or binary bytes, to and from NumPy.

Everything here is vectorised: JSON numbers go through one ``np.asarray``,
binary tensors through ``np.frombuffer``; only ``BYTES`` elements, which are
variable-length by nature, are handled one by one. Errors name the tensor,
its datatype and both shapes or sizes.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.errors import BadRequestError, UnprocessableError
from app.v2.datatypes import numpy_dtype, v2_datatype

__all__ = [
    "decode_binary",
    "decode_json",
    "encode_binary",
    "encode_json",
    "host_array",
]

_LENGTH = struct.Struct("<I")
_JSON_KINDS = {"f": "biuf", "i": "biu", "u": "biu", "b": "b"}


def decode_json(data: Any, datatype: str, shape: Sequence[int], what: str) -> np.ndarray:
    """The array that JSON ``data`` (flat or nested, row-major) holds.

    Args:
        data: the ``data`` member of a request tensor.
        datatype: its V2 datatype, already checked to be known.
        shape: its declared shape.
        what: how messages name the tensor, e.g. ``"input 'x'"``.

    Raises:
        UnprocessableError: the values do not fit the datatype or the element
            count does not match the shape.
    """
    if datatype == "BYTES":
        return _decode_json_bytes(data, shape, what)
    dtype = numpy_dtype(datatype)
    try:
        values = np.asarray(data)
    except (ValueError, TypeError, OverflowError) as exc:
        raise UnprocessableError(f"{what}: data is not a rectangular array of numbers: {exc}") from None
    if values.size and values.dtype.kind == "U" and dtype.kind == "f":
        values = _nonfinite_from_names(data, values, datatype, what)
    if values.size and values.dtype.kind not in _JSON_KINDS.get(dtype.kind, "biuf"):
        if dtype.kind in "iu" and values.dtype.kind == "f" and np.isfinite(values).all():
            _check_range(values, dtype, datatype, what)  # integers past 64 bits arrive as floats
        raise UnprocessableError(f"{what}: data holds {_describe_kind(values)}, not {datatype} values")
    _check_count(values.size, shape, what)
    if dtype.kind in "iu" and values.size:
        _check_range(values, dtype, datatype, what)
    return values.astype(dtype, copy=False).reshape(shape)


def _decode_json_bytes(data: Any, shape: Sequence[int], what: str) -> np.ndarray:
    items = _flatten(data)
    _check_count(len(items), shape, what)
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise UnprocessableError(
                f"{what}: BYTES data must be strings, element {i} is {type(item).__name__}"
            )
        out[i] = item.encode("utf-8")
    return out.reshape(shape)


def _nonfinite_from_names(data: Any, values: np.ndarray, datatype: str, what: str) -> np.ndarray:
    """Float data with ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` strings among its numbers."""
    flat = _flatten(data)
    bad = [v for v in flat if isinstance(v, str) and v not in NONFINITE]
    if bad or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in flat):
        shown = repr(bad[0]) if bad else "a value that is not a number"
        raise UnprocessableError(
            f"{what}: data holds {shown}, not {datatype} values (strings may only be \"NaN\", "
            "\"Infinity\" or \"-Infinity\")"
        )
    return np.asarray([NONFINITE[v] if isinstance(v, str) else v for v in flat], np.float64).reshape(
        values.shape
    )


def _flatten(data: Any) -> list[Any]:
    if not isinstance(data, list):
        return [data]
    flat: list[Any] = []
    stack = [iter(data)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            flat.append(item)
        else:
            stack.pop()
    return flat


def _describe_kind(values: np.ndarray) -> str:
    return {
        "b": "booleans",
        "i": "integers",
        "u": "integers",
        "f": "non-integer numbers",
        "U": "strings",
        "O": "mixed or nested values",
    }.get(values.dtype.kind, str(values.dtype))


def _check_count(count: int, shape: Sequence[int], what: str) -> None:
    needed = math.prod(shape)
    if count != needed:
        raise UnprocessableError(f"{what}: shape {list(shape)} needs {needed} elements but data has {count}")


def _check_range(values: np.ndarray, dtype: np.dtype, datatype: str, what: str) -> None:
    info = np.iinfo(dtype)
    low, high = values.min(), values.max()
    if low < info.min or high > info.max:
        bad = low if low < info.min else high
        raise UnprocessableError(
            f"{what}: value {bad} is out of range for {datatype} [{info.min}, {info.max}]"
        )


def decode_binary(
    body: bytes | memoryview, offset: int, size: int, datatype: str, shape: Sequence[int], what: str
) -> np.ndarray:
    """The array in ``body[offset:offset + size]`` (little-endian, row-major).

    Raises:
        BadRequestError: ``size`` does not match the shape, or ``BYTES`` length
            prefixes run past the tensor's bytes.
    """
    if datatype == "BYTES":
        return _decode_binary_bytes(memoryview(body)[offset : offset + size], shape, what)
    dtype = numpy_dtype(datatype)
    count = math.prod(shape)
    needed = count * dtype.itemsize
    if size != needed:
        raise BadRequestError(
            f"{what}: binary_data_size is {size} but shape {list(shape)} of {datatype} needs {needed} bytes"
        )
    if datatype == "BOOL":
        return np.frombuffer(body, dtype=np.uint8, count=count, offset=offset).astype(bool).reshape(shape)
    array = np.frombuffer(body, dtype=dtype.newbyteorder("<"), count=count, offset=offset)
    if not array.flags.aligned or not array.dtype.isnative:
        array = array.astype(dtype)  # BLAS needs aligned, native-order memory
    return array.reshape(shape)


def _decode_binary_bytes(view: memoryview, shape: Sequence[int], what: str) -> np.ndarray:
    items: list[bytes] = []
    pos, end = 0, len(view)
    while pos < end:
        if pos + 4 > end:
            raise BadRequestError(f"{what}: BYTES element {len(items)} has a truncated 4-byte length prefix")
        (length,) = _LENGTH.unpack_from(view, pos)
        pos += 4
        if pos + length > end:
            raise BadRequestError(
                f"{what}: BYTES element {len(items)} declares {length} bytes but only {end - pos} remain"
            )
        items.append(bytes(view[pos : pos + length]))
        pos += length
    needed = math.prod(shape)
    if len(items) != needed:
        raise BadRequestError(
            f"{what}: shape {list(shape)} needs {needed} BYTES elements but the data holds {len(items)}"
        )
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


def host_array(value: Any) -> np.ndarray:
    """``value`` as a NumPy array on the host (CuPy arrays are copied back)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "get") and hasattr(value, "__cuda_array_interface__"):
        return value.get()
    if hasattr(value, "numpy"):
        return np.asarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value.numpy())
    return np.asarray(value)


def encode_json(array: np.ndarray, what: str) -> list[Any]:
    """``array`` as the flat, row-major list that JSON ``data`` carries."""
    datatype = v2_datatype(array.dtype)
    if datatype == "BYTES":
        return [_as_text(item, what) for item in array.reshape(-1)]
    if datatype in ("FP16", "BF16"):
        array = array.astype(np.float32)
    flat = array.reshape(-1)
    if flat.dtype.kind == "f" and not np.isfinite(flat).all():
        return _with_nonfinite_names(flat)
    return flat.tolist()


NONFINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
"""How JSON ``data`` spells the floats JSON has no number for (protobuf's JSON mapping)."""


def _with_nonfinite_names(flat: np.ndarray) -> list[Any]:
    values: list[Any] = flat.tolist()
    for i in np.flatnonzero(~np.isfinite(flat)).tolist():
        value = values[i]
        values[i] = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    return values


def _as_text(item: Any, what: str) -> str:
    if isinstance(item, bytes):
        try:
            return item.decode("utf-8")
        except UnicodeDecodeError:
            raise UnprocessableError(
                f"{what} holds bytes that are not UTF-8, which JSON cannot carry; request it with "
                '"parameters": {"binary_data": true}'
            ) from None
    return str(item)


def encode_binary(array: np.ndarray) -> bytes:
    """``array``'s bytes as the binary tensor extension lays them out."""
    if v2_datatype(array.dtype) == "BYTES":
        parts = []
        for item in array.reshape(-1):
            raw = item if isinstance(item, bytes) else str(item).encode("utf-8")
            parts.append(_LENGTH.pack(len(raw)))
            parts.append(raw)
        return b"".join(parts)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()
