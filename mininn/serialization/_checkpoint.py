"""A checkpoint opened lazily: its keys, dtypes and shapes first, each tensor's values on request.

A safetensors file is read tensor by tensor, straight from its bytes into
the destination; its header (checked against the file before anything is
allocated) gives each tensor's place. ``.npz`` and PyTorch files keep their
tensors inside zip members or pickles, so they are loaded whole when opened
and their entries have no byte offset.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._backend import CPU, to_device
from mininn.serialization import _npz, _safetensors, _torch_load
from mininn.serialization._detect import detect
from mininn.serialization._errors import CheckpointError
from mininn.serialization._io import FileLike, Source, byte_view, empty_array, open_source
from mininn.serialization._tensors import as_array, is_tensor_like, to_tensor
from mininn.tensor import Tensor

__all__ = ["Checkpoint", "Entry", "open_checkpoint"]

_MAX_LISTED = 20


@dataclass(frozen=True)
class Entry:
    """One tensor of a checkpoint.

    Attributes:
        key: its name in the state dict.
        dtype: its mininn dtype (``mininn.float32``, ...).
        shape: its shape.
        offset: where its bytes start in the file; ``None`` where the format
            does not store them as one plain run (``.npz``, PyTorch files).
        nbytes: its size in bytes.
    """

    key: str
    dtype: _dtype.dtype
    shape: tuple[int, ...]
    offset: int | None
    nbytes: int


class Checkpoint:
    """An open checkpoint; use :func:`open_checkpoint` and close it (``with``) when done."""

    def __init__(
        self, fmt: str, entries: list[Entry], metadata: dict[str, str], reader: _Reader, close: Any
    ) -> None:
        self.format = fmt
        self.metadata = metadata
        self._entries = {entry.key: entry for entry in entries}
        self._reader = reader
        self._close = close

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Checkpoint(format={self.format!r}, {len(self._entries)} tensors)"

    def close(self) -> None:
        """Close the file (a file object given to :func:`open_checkpoint` stays open)."""
        self._close()

    def keys(self) -> list[str]:
        """The tensors' keys, in the order of their bytes in the file (archive order for npz)."""
        return list(self._entries)

    def entries(self) -> list[Entry]:
        """Each tensor's key, dtype, shape and place in the file, in :meth:`keys` order."""
        return list(self._entries.values())

    def entry(self, key: str) -> Entry:
        """The entry of ``key``.

        Raises:
            KeyError: the checkpoint has no tensor ``key`` (the message lists some that it has).
        """
        try:
            return self._entries[key]
        except KeyError:
            shown = ", ".join(repr(k) for k in list(self._entries)[:_MAX_LISTED])
            raise KeyError(f"the checkpoint has no tensor {key!r}; it has {shown}") from None

    def read(self, key: str) -> Tensor:
        """``key``'s tensor, read on its own (a new cpu Tensor)."""
        entry = self.entry(key)
        array = empty_array(entry.shape, entry.dtype.np)
        self._reader.fill(entry, array)
        return to_tensor(array, CPU)

    def copy_into(self, key: str, dest: Tensor | np.ndarray) -> None:
        """Copy ``key``'s values into ``dest`` in place, cast to its dtype (as ``Tensor.copy_`` casts).

        ``dest`` must have the tensor's shape (a 0-d ``dest`` also takes a
        tensor of shape ``(1,)``, as ``load_state_dict`` allows). Nothing is
        written when that fails.

        Raises:
            KeyError: no tensor ``key``.
            ValueError: the shapes differ (the message names the key and both shapes).
        """
        entry = self.entry(key)
        array = dest._data if isinstance(dest, Tensor) else dest
        shape = tuple(array.shape)
        if shape != entry.shape and not (shape == () and entry.shape == (1,)):
            raise ValueError(
                f"cannot copy {key!r}: the checkpoint's tensor has shape {entry.shape}, "
                f"the destination has shape {shape}"
            )
        direct = (
            isinstance(array, np.ndarray)
            and array.dtype == entry.dtype.np
            and array.flags.c_contiguous
            and array.flags.writeable
        )
        if direct:
            self._reader.fill(entry, array)
            return
        buffer = empty_array(entry.shape, entry.dtype.np)
        self._reader.fill(entry, buffer)
        if isinstance(array, np.ndarray):
            np.copyto(array, buffer.reshape(shape), casting="unsafe")
        else:  # on an accelerator: one copy to the device
            array[...] = to_device(buffer.reshape(shape).astype(array.dtype), dest.device)

    def load_into(self, module: Any, strict: bool = True) -> Any:
        """Copy the tensors one by one into ``module``'s parameters and buffers.

        The keys and shapes are checked first by ``module.load_state_dict``
        itself, given zero-byte stand-ins of the checkpoint's shapes, so the
        errors are its (torch's) report and nothing is changed when it
        raises. Then each tensor is read from the file into its destination;
        the checkpoint is never in memory whole.

        Returns:
            ``load_state_dict``'s ``(missing_keys, unexpected_keys)``.

        Raises:
            RuntimeError: torch's ``Error(s) in loading state_dict for <Class>:`` report.
        """
        expected = module.state_dict()
        stand_ins = {}
        for key, entry in self._entries.items():
            target = expected.get(key)
            dtype = target.dtype.np if target is not None else entry.dtype.np  # no cast, no copy
            stand_ins[key] = np.broadcast_to(np.zeros((), dtype), entry.shape)
        result = module.load_state_dict(stand_ins, strict=strict)
        for key, tensor in module.state_dict().items():
            if key in self._entries:
                self.copy_into(key, tensor)
        return result


class _Reader:
    """Fills an array with an entry's values."""

    def fill(self, entry: Entry, array: np.ndarray) -> None:
        raise NotImplementedError


class _FileReader(_Reader):
    def __init__(self, source: Source) -> None:
        self.source = source

    def fill(self, entry: Entry, array: np.ndarray) -> None:
        assert entry.offset is not None  # noqa: S101 - only safetensors entries come here
        if entry.nbytes:
            self.source.readinto_at(entry.offset, byte_view(array), f"safetensors tensor {entry.key!r}")


class _LoadedReader(_Reader):
    def __init__(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.arrays = arrays

    def fill(self, entry: Entry, array: np.ndarray) -> None:
        np.copyto(array, self.arrays[entry.key].reshape(array.shape))


def open_checkpoint(f: FileLike) -> Checkpoint:
    """Open a checkpoint in any format that ``load`` reads, for reading tensor by tensor.

    Args:
        f: a path or a readable binary file object.

    Returns:
        A :class:`Checkpoint`, to be closed (``with open_checkpoint(path) as ckpt:``).

    Raises:
        CheckpointError: the bytes are not a supported checkpoint, are truncated
            or hostile, or (PyTorch files) hold something other than a flat
            dict of tensors.
    """
    stack = contextlib.ExitStack()
    try:
        source = stack.enter_context(open_source(f))
        fmt = detect(source)
        if fmt == "safetensors":
            header = _safetensors.read_header(source)
            entries = [
                Entry(
                    e.name,
                    _dtype.from_numpy_dtype(e.dtype),
                    e.shape,
                    header.data_start + e.begin,
                    e.end - e.begin,
                )
                for e in header.entries
            ]
            return Checkpoint(fmt, entries, header.metadata, _FileReader(source), stack.close)
        arrays, metadata = _load_whole(source, fmt)
    except BaseException:
        stack.close()
        raise
    stack.close()
    entries = [
        Entry(key, _dtype.from_numpy_dtype(a.dtype), tuple(a.shape), None, a.nbytes)
        for key, a in arrays.items()
    ]
    return Checkpoint(
        fmt.removesuffix("-zip").removesuffix("-legacy"), entries, metadata, _LoadedReader(arrays), _nothing
    )


def _load_whole(source: Source, fmt: str) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    if fmt == "npz":
        return _npz.load(source), _npz.load_metadata(source)
    loaded = _torch_load.load_zip(source, CPU) if fmt == "pt-zip" else _torch_load.load_legacy(source, CPU)
    if not isinstance(loaded, Mapping) or not all(
        isinstance(k, str) and is_tensor_like(v) for k, v in loaded.items()
    ):
        raise CheckpointError(
            f"open_checkpoint reads a flat dict of tensors, but the file holds {_describe(loaded)}; "
            "use mininn.serialization.load for other objects"
        )
    return {key: as_array(value) for key, value in loaded.items()}, {}


def _describe(loaded: object) -> str:
    if isinstance(loaded, Mapping):
        bad = next(k for k, v in loaded.items() if not (isinstance(k, str) and is_tensor_like(v)))
        return f"a dict whose entry {bad!r:.60} is {type(loaded[bad]).__name__}"
    return f"a {type(loaded).__name__}"


def _nothing() -> None:
    pass
