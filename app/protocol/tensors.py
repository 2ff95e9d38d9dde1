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
from app.protocol.datatypes import numpy_dtype, v2_datatype

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
    return array.reshape(-1).tolist()


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
