"""NumPy ``.npz``: a zip of ``<key>.npy`` members, always read with ``allow_pickle=False``.

Before NumPy reads anything, every member is checked: a ``.npy`` name, a
plain dtype, and a declared uncompressed size that equals what its own
header's shape needs and that deflate could really produce from the
compressed bytes. A zip bomb or a lying header therefore fails before any
allocation.

NumPy has no bfloat16 and no string metadata, so when either is needed the
archive gets one extra member, ``__mininn__.npy``: a 0-d unicode array
holding ``{"dtypes": {key: "bfloat16"}, "metadata": {...}}`` as JSON.
bfloat16 arrays are stored as their uint16 bit patterns.
"""

from __future__ import annotations

import json
import math
import tokenize
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from mininn.serialization._dtypes import SUPPORTED, numpy_dtype
from mininn.serialization._errors import CheckpointError
from mininn.serialization._io import Source
from mininn.serialization._zip import ZIP_ERRORS, check_sizes, open_zip

__all__ = ["MANIFEST", "load", "load_metadata", "save"]

MANIFEST = "__mininn__"
_MAX_NPY_HEADER = 10_000
_MAX_MANIFEST_BYTES = 100_000_000
# NumPy reads a .npy header with a tokenize pass and ast.literal_eval: a hostile
# header makes those raise their own errors besides the zip layer's
_NPY_ERRORS = (*ZIP_ERRORS, SyntaxError, tokenize.TokenError, RecursionError, TypeError, KeyError)


@dataclass(frozen=True)
class _Member:
    key: str
    info: zipfile.ZipInfo
    dtype: np.dtype
    shape: tuple[int, ...]


def load(source: Source) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file, in archive order."""
    with open_zip(source, "npz") as zf:
        members = [_check_member(zf, info) for info in _infos(zf)]
    manifest = _manifest(source, members)
    arrays: dict[str, np.ndarray] = {}
    source.fileobj.seek(0)
    try:
        with np.load(source.fileobj, allow_pickle=False) as npz:
            for m in members:
                if m.key != MANIFEST:
                    arrays[m.key] = _as_loaded(npz[m.key], m, manifest["dtypes"].get(m.key))
    except CheckpointError:
        raise
    except _NPY_ERRORS as e:
        raise CheckpointError(f"cannot read npz: {e}") from e
    return arrays


def load_metadata(source: Source) -> dict[str, str]:
    """The string metadata that mininn stored with the arrays (``{}`` if none)."""
    with open_zip(source, "npz") as zf:
        members = [_check_member(zf, info) for info in _infos(zf) if info.filename == MANIFEST + ".npy"]
    return _manifest(source, members)["metadata"]


def save(arrays: Mapping[str, np.ndarray], fileobj: BinaryIO, metadata: Mapping[str, str] | None) -> None:
    """Write ``arrays`` (a flat mapping) as an uncompressed ``.npz``."""
    dtypes = {}
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for key, array in arrays.items():
            if key == MANIFEST:
                raise CheckpointError(f"the key {MANIFEST!r} is reserved in npz checkpoints")
            if _is_bfloat16(array.dtype):
                dtypes[key] = "bfloat16"
                array = array.view(np.uint16)
            _write_member(zf, key, array)
        if dtypes or metadata:
            doc = json.dumps({"dtypes": dtypes, "metadata": dict(metadata or {})})
            _write_member(zf, MANIFEST, np.array(doc))


def _write_member(zf: zipfile.ZipFile, key: str, array: np.ndarray) -> None:
    with zf.open(key + ".npy", "w", force_zip64=True) as member:
        np.lib.format.write_array(member, array, allow_pickle=False)


def _infos(zf: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    seen: set[str] = set()
    for info in zf.infolist():
        if not info.filename.endswith(".npy"):
            raise CheckpointError(f"npz member {info.filename!r} is not a .npy array")
        if info.filename in seen:
            raise CheckpointError(f"npz member {info.filename!r} appears twice")
        seen.add(info.filename)
    return zf.infolist()


def _check_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> _Member:
    """Check sizes and the .npy header of one member, reading only its first bytes."""
    name = info.filename
    check_sizes(info, "npz")
    try:
        with zf.open(info) as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(f, max_header_size=_MAX_NPY_HEADER)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(f, max_header_size=_MAX_NPY_HEADER)
            else:
                raise CheckpointError(f"npz member {name!r} has unsupported .npy version {version}")
            header_bytes = f.tell()
    except CheckpointError:
        raise
    except _NPY_ERRORS as e:
        raise CheckpointError(f"npz member {name!r} has a bad .npy header: {e}") from e
    dtype = _plain_dtype(name, dtype)
    needed = header_bytes + math.prod(shape) * dtype.itemsize
    if needed != info.file_size:
        raise CheckpointError(
            f"npz member {name!r}: shape {shape} of {dtype} needs {needed} bytes "
            f"but the archive declares {info.file_size}"
        )
    return _Member(name[: -len(".npy")], info, dtype, shape)


def _plain_dtype(name: str, dtype: np.dtype) -> np.dtype:
    if dtype.hasobject:
        raise CheckpointError(f"npz member {name!r} holds Python objects, which need pickle: refused")
    if dtype.kind == "U" and name == MANIFEST + ".npy":
        return dtype
    native = dtype.newbyteorder("=")
    if native == np.dtype("V2") or native.name in SUPPORTED or native == np.uint16:
        return dtype  # V2 and uint16 are bfloat16 only with a manifest entry; checked on load
    raise CheckpointError(
        f"npz member {name!r} has unsupported dtype {dtype}; supported: {', '.join(SUPPORTED)}"
    )


def _manifest(source: Source, members: list[_Member]) -> dict[str, dict[str, str]]:
    empty: dict[str, dict[str, str]] = {"dtypes": {}, "metadata": {}}
    entry = next((m for m in members if m.key == MANIFEST), None)
    if entry is None:
        return empty
    if entry.dtype.kind != "U" or entry.shape != () or entry.info.file_size > _MAX_MANIFEST_BYTES:
        raise CheckpointError(f"npz member {MANIFEST!r} must be a 0-d unicode array")
    try:
        with open_zip(source, "npz") as zf, zf.open(entry.info) as f:
            doc = json.loads(str(np.lib.format.read_array(f, allow_pickle=False)))
    except _NPY_ERRORS as e:
        raise CheckpointError(f"npz member {MANIFEST!r} is not valid JSON: {e}") from e
    return _check_manifest(doc)


def _check_manifest(doc: object) -> dict[str, dict[str, str]]:
    if not isinstance(doc, dict) or set(doc) != {"dtypes", "metadata"}:
        raise CheckpointError(f"npz member {MANIFEST!r} must hold {{'dtypes': ..., 'metadata': ...}}")
    for part in ("dtypes", "metadata"):
        table = doc[part]
        if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
            raise CheckpointError(f"npz member {MANIFEST!r}: {part!r} must map strings to strings")
    bad = {k: v for k, v in doc["dtypes"].items() if v != "bfloat16"}
    if bad:
        raise CheckpointError(f"npz member {MANIFEST!r} declares unsupported dtypes {bad}")
    return doc


def _as_loaded(array: np.ndarray, member: _Member, declared: str | None) -> np.ndarray:
    """Native byte order, and bfloat16 restored from its bit patterns when the manifest says so."""
    where = f"npz member {member.key!r}"
    if array.dtype != member.dtype or array.shape != member.shape:
        raise CheckpointError(f"{where} changed while it was read")
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    if declared == "bfloat16":
        if array.dtype.itemsize != 2 or array.dtype.kind not in "uV":
            raise CheckpointError(f"{where} is declared bfloat16 but stored as {array.dtype}")
        return array.view(np.uint16).view(numpy_dtype("bfloat16", where=where))
    if array.dtype.name not in SUPPORTED:
        raise CheckpointError(
            f"{where} has unsupported dtype {array.dtype}; supported: {', '.join(SUPPORTED)}"
        )
    return array


def _is_bfloat16(dtype: np.dtype) -> bool:
    return dtype.name == "bfloat16"
