"""safetensors: an 8-byte little-endian header length, a JSON header, raw tensor bytes.

Writing streams the tensors one by one after the header. Reading checks
the whole header here first (dtypes, shapes, offsets tiling the data exactly,
nothing past the file's end), the same rules the package applies, so that a
hostile header fails before any allocation; then each tensor's bytes are read
straight into its own array. (The package's reader allocates its arrays page
fault by page fault and cannot read a file object without a second copy;
measured in ``benchmarks/checkpoint_io.py``, it is slower than ``torch.load``,
which this reader is not.)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from mininn.serialization._dtypes import numpy_dtype
from mininn.serialization._errors import CheckpointError
from mininn.serialization._io import Source, byte_view, empty_array

__all__ = ["MAX_HEADER_BYTES", "Entry", "Header", "looks_like_safetensors", "read_header", "load", "write"]

MAX_HEADER_BYTES = 100_000_000  # the safetensors package's own limit
_MAX_NDIM = 64

_DTYPES = {
    "BOOL": "bool",
    "U8": "uint8",
    "I8": "int8",
    "I16": "int16",
    "I32": "int32",
    "I64": "int64",
    "F16": "float16",
    "BF16": "bfloat16",
    "F32": "float32",
    "F64": "float64",
}
_CODES = {name: code for code, name in _DTYPES.items()}


@dataclass(frozen=True)
class Entry:
    """One tensor of the header; ``begin``/``end`` are offsets into the data section."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class Header:
    """A checked header: its tensors in data order (``read_header``), string metadata, where data starts."""

    entries: list[Entry]
    metadata: dict[str, str]
    data_start: int


def looks_like_safetensors(prefix: bytes) -> bool:
    """Whether a file's first bytes look like a safetensors header (length, then JSON's ``{``).

    The length itself is checked by ``read_header``, whose message is more useful than
    "unrecognized format" for a header that lies about it.
    """
    return len(prefix) >= 9 and prefix[8:9] == b"{"


def read_header(source: Source) -> Header:
    """Read and check the header against the file; nothing is allocated for tensors.

    The entries come in the order of their bytes in the file, the order in which
    ``safetensors.numpy.load_file`` (and ``safetensors.torch.load_file``) return them.
    (The package writes its header in that order too; ``safe_open(...).keys()``
    sorts the names instead.) Empty tensors that share an offset keep their
    header order, which the package leaves undefined.
    """
    n = int.from_bytes(source.read_at(0, 8, "safetensors header length"), "little")
    if n > MAX_HEADER_BYTES:
        raise CheckpointError(f"safetensors header length {n} exceeds the limit of {MAX_HEADER_BYTES} bytes")
    if n > source.size - 8:
        raise CheckpointError(
            f"truncated file: safetensors header length {n} exceeds the {source.size - 8} bytes after it"
        )
    raw = _parse_json(source.read_at(8, n, "safetensors header"))
    metadata = _metadata(raw.pop("__metadata__", {}))
    entries = sorted((_entry(name, spec) for name, spec in raw.items()), key=lambda e: (e.begin, e.end))
    _check_layout(entries, source.size - 8 - n)
    return Header(entries, metadata, 8 + n)


def load(source: Source) -> dict[str, np.ndarray]:
    """All tensors of a safetensors checkpoint, in data order (as ``read_header``), as writable arrays."""
    header = read_header(source)
    return {e.name: _read_entry(source, header.data_start, e) for e in header.entries}


def write(
    fileobj: BinaryIO, arrays: Iterable[tuple[str, np.ndarray]], metadata: Mapping[str, str] | None
) -> None:
    """Write ``arrays`` (name, array pairs, in the order given) tensor by tensor to ``fileobj``.

    Only the header is built in memory; each array's bytes go to the file in
    turn. The header is padded with spaces to a multiple of 8 bytes, as the
    ``safetensors`` package pads it, and its tensors are in data order.
    """
    pairs = list(arrays)
    header: dict[str, Any] = {} if metadata is None else {"__metadata__": dict(metadata)}
    offset = 0
    for name, array in pairs:
        end = offset + array.nbytes
        header[name] = {
            "dtype": _CODES[array.dtype.name],
            "shape": list(array.shape),
            "data_offsets": [offset, end],
        }
        offset = end
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    fileobj.write(len(text).to_bytes(8, "little"))
    fileobj.write(text)
    for _, array in pairs:
        if array.nbytes:
            fileobj.write(byte_view(np.ascontiguousarray(array)))


def _parse_json(text: bytes) -> dict[str, Any]:
    try:
        raw = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise CheckpointError(f"safetensors header is not valid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"safetensors header must be a JSON object, got {type(raw).__name__}")
    return raw


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise CheckpointError(f"safetensors header repeats the key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise CheckpointError(f"safetensors header contains the non-JSON constant {name}")


def _metadata(raw: object) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise CheckpointError(f"safetensors __metadata__ must be an object, got {type(raw).__name__}")
    for key, value in raw.items():
        if not isinstance(value, str):
            raise CheckpointError(f"safetensors __metadata__[{key!r}] must be a string, got {value!r:.80}")
    return raw


def _entry(name: str, spec: object) -> Entry:
    where = f"safetensors tensor {name!r}"
    if not isinstance(spec, dict) or not {"dtype", "shape", "data_offsets"} <= spec.keys():
        raise CheckpointError(
            f"{where} must be an object with dtype, shape and data_offsets, got {spec!r:.200}"
        )
    code, shape, offsets = spec["dtype"], spec["shape"], spec["data_offsets"]
    if not isinstance(code, str) or code not in _DTYPES:
        raise CheckpointError(f"{where} has unsupported dtype {code!r:.80}; supported: {', '.join(_DTYPES)}")
    if not _int_list(shape, 0, _MAX_NDIM):
        raise CheckpointError(f"{where} has invalid shape {shape!r:.200}")
    if not _int_list(offsets, 2, 2) or offsets[0] > offsets[1]:
        raise CheckpointError(f"{where} has invalid data_offsets {offsets!r:.200}")
    dtype = numpy_dtype(_DTYPES[code], where=where)
    needed = math.prod(shape) * dtype.itemsize
    if offsets[1] - offsets[0] != needed:
        raise CheckpointError(
            f"{where}: shape {tuple(shape)} of {code} needs {needed} bytes "
            f"but data_offsets {offsets} span {offsets[1] - offsets[0]}"
        )
    return Entry(name, dtype, tuple(shape), offsets[0], offsets[1])


def _int_list(value: object, min_len: int, max_len: int) -> bool:
    return (
        isinstance(value, list)
        and min_len <= len(value) <= max_len
        and all(type(v) is int and v >= 0 for v in value)
    )


def _check_layout(entries: list[Entry], data_size: int) -> None:
    """Tensors must tile the data section exactly: no overlap, no gap, nothing past the end.

    ``entries`` are in data order (sorted by their offsets).
    """
    for e in entries:
        if e.end > data_size:
            raise CheckpointError(
                f"safetensors tensor {e.name!r} data_offsets [{e.begin}, {e.end}] exceed the "
                f"{data_size} data bytes in the file (truncated?)"
            )
    expected, previous = 0, None
    for e in entries:
        if e.begin < expected:
            raise CheckpointError(
                f"safetensors tensors {previous!r} and {e.name!r} overlap at data offset {e.begin}"
            )
        if e.begin > expected:
            raise CheckpointError(f"safetensors data bytes {expected}..{e.begin} belong to no tensor")
        expected, previous = e.end, e.name
    if expected != data_size:
        raise CheckpointError(f"safetensors file has {data_size - expected} bytes after the last tensor")


def _read_entry(source: Source, data_start: int, e: Entry) -> np.ndarray:
    array = empty_array(e.shape, e.dtype)
    if array.nbytes:
        source.readinto_at(data_start + e.begin, byte_view(array), f"safetensors tensor {e.name!r}")
    return array
