"""Where checkpoint bytes come from and go to: paths or binary file objects.

Reads are random access and bounds-checked, so a declared size is compared
with the file before anything is allocated. Tensor bytes are read straight
into their final arrays (``pread`` on a path), so a file is never held in
memory twice. Writes to a path go to a temporary file in the same folder
that replaces the target only when complete: a failed save never leaves a
torn checkpoint.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Union

import numpy as np

from mininn.serialization._errors import CheckpointError

__all__ = ["FileLike", "Source", "atomic_path", "byte_view", "empty_array", "is_path", "open_source"]


FileLike = Union[str, "os.PathLike[str]", BinaryIO]


def is_path(f: object) -> bool:
    """Whether ``f`` names a file (str or PathLike) rather than being a file object."""
    return isinstance(f, (str, os.PathLike))


@dataclass
class Source:
    """A checkpoint open for reading.

    Attributes:
        fileobj: seekable binary file whose offset 0 is the checkpoint's first byte.
        size: the checkpoint's length in bytes.
        fd: the OS file descriptor, for ``pread``, when ``load`` opened a path itself.
    """

    fileobj: BinaryIO
    size: int
    fd: int | None = None

    def read_at(self, offset: int, n: int, what: str) -> bytes:
        """``n`` bytes at ``offset``; CheckpointError naming ``what`` if the file is shorter."""
        self._check_range(offset, n, what)
        self.fileobj.seek(offset)
        data = self.fileobj.read(n)
        if len(data) != n:
            raise CheckpointError(
                f"truncated file: {what} needs bytes {offset}..{offset + n}, got {len(data)}"
            )
        return data

    def readinto_at(self, offset: int, buffer: memoryview, what: str) -> None:
        """Fill ``buffer`` (a byte view of a fresh array) from ``offset``."""
        n = buffer.nbytes
        self._check_range(offset, n, what)
        done = 0
        while done < n:
            got = self._readinto(offset + done, buffer[done:])
            if not got:
                raise CheckpointError(f"truncated file: {what} needs bytes {offset}..{offset + n}")
            done += got

    def _readinto(self, offset: int, view: memoryview) -> int:
        if self.fd is not None and hasattr(os, "preadv"):
            return os.preadv(self.fd, [view], offset)
        self.fileobj.seek(offset)
        return self.fileobj.readinto(view) or 0

    def _check_range(self, offset: int, n: int, what: str) -> None:
        if offset < 0 or n < 0 or offset + n > self.size:
            raise CheckpointError(
                f"{what} needs bytes {offset}..{offset + n} but the file has {self.size} bytes"
            )


@contextlib.contextmanager
def open_source(f: FileLike) -> Iterator[Source]:
    """Open a path, or adopt a binary file object, for random-access reading.

    A file object is read from its current position; if it cannot seek, or
    does not start at 0, its remaining bytes are read into memory first.
    """
    if is_path(f):
        path = os.fspath(f)
        with open(path, "rb") as fh:
            yield Source(fh, os.fstat(fh.fileno()).st_size, fh.fileno())
        return
    if not hasattr(f, "read") or isinstance(f, io.TextIOBase):
        raise TypeError(f"expected a path or a binary file object, got {type(f).__name__}")
    fileobj = f if _starts_at_zero(f) else io.BytesIO(_read_all(f))
    size = fileobj.seek(0, os.SEEK_END)
    fileobj.seek(0)
    yield Source(fileobj, size)


def _starts_at_zero(f: BinaryIO) -> bool:
    try:
        return f.seekable() and f.tell() == 0
    except (AttributeError, OSError, ValueError):
        return False


def _read_all(f: BinaryIO) -> bytes:
    data = f.read()
    if not isinstance(data, bytes):
        raise TypeError(f"expected a binary file object, but read() returned {type(data).__name__}")
    return data


def empty_array(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A new writable array to read tensor bytes into.

    Its pages are left unmapped: the read that fills them faults them in with
    the GIL released. (Pre-faulting them with an anonymous ``MAP_POPULATE``
    mapping was no faster, and CPython's ``mmap`` holds the GIL while the kernel
    populates the mapping: 50-140 ms per 64 MB tensor during which no other
    thread, such as a server's event loop while a model loads, could run.)
    """
    return np.empty(shape, dtype=dtype)


def byte_view(array: np.ndarray) -> memoryview:
    """The bytes of a C-contiguous array, writable, for ``readinto``."""
    return memoryview(array.reshape(-1).view(np.uint8))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary path beside ``path`` that replaces it when the block succeeds."""
    target = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(target))
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(8)}.tmp")
    open(tmp, "xb").close()  # created by open(), so it gets open()'s permissions (umask)
    mode = os.stat(tmp).st_mode
    try:
        yield tmp
        os.chmod(tmp, mode)  # writers that recreate the file (safetensors) may narrow them
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
