"""Zip archives (``.npz``, torch's zip format) opened defensively.

Python's ``zipfile`` checks names, CRCs and the central directory; these
helpers add what it does not: declared sizes compared with the compressed
bytes before anything is decompressed or allocated, and the byte offset of a
stored member so that it can be read straight into an array.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from mininn.serialization._errors import CheckpointError
from mininn.serialization._io import Source

__all__ = ["ZIP_ERRORS", "open_zip", "check_sizes", "stored_data_offset"]

ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    OSError,
    EOFError,
    ValueError,
    NotImplementedError,
    RuntimeError,  # zipfile's "encrypted, password required"
    OverflowError,
    struct.error,
    zlib.error,
)
_MAX_DEFLATE_RATIO = 1100  # deflate expands at most ~1032:1; a member claiming more is lying
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, skipped fields, name length, extra length


@contextmanager
def open_zip(source: Source, what: str) -> Iterator[zipfile.ZipFile]:
    """The archive's directory, or CheckpointError naming ``what`` if it is corrupt."""
    source.fileobj.seek(0)
    try:
        with zipfile.ZipFile(source.fileobj) as zf:
            yield zf
    except CheckpointError:
        raise
    except ZIP_ERRORS as e:
        raise CheckpointError(f"corrupt {what} archive: {e}") from e


def check_sizes(info: zipfile.ZipInfo, what: str) -> None:
    """Refuse a member whose declared size is impossible for its compressed bytes (zip bombs)."""
    name, packed, size = info.filename, info.compress_size, info.file_size
    if info.flag_bits & 0x1:
        raise CheckpointError(f"{what} member {name!r} is encrypted")
    if info.compress_type == zipfile.ZIP_STORED:
        if packed != size:
            raise CheckpointError(f"{what} member {name!r} is stored but declares {size} bytes in {packed}")
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        if size > packed * _MAX_DEFLATE_RATIO + 1024:
            raise CheckpointError(
                f"{what} member {name!r} declares {size} uncompressed bytes from {packed} compressed "
                f"bytes, more than deflate can produce (zip bomb?)"
            )
    else:
        raise CheckpointError(f"{what} member {name!r} uses unsupported zip compression {info.compress_type}")


def stored_data_offset(source: Source, info: zipfile.ZipInfo) -> int:
    """Where the bytes of a stored (uncompressed) member start in the file."""
    header = source.read_at(info.header_offset, _LOCAL_HEADER.size, f"zip header of {info.filename!r}")
    signature, name_len, extra_len = _LOCAL_HEADER.unpack(header)
    if signature != b"PK\x03\x04":
        raise CheckpointError(f"bad zip local header for {info.filename!r} at byte {info.header_offset}")
    return info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
