"""Checkpoints: ``save`` and ``load`` in safetensors (default), ``.npz`` and PyTorch ``.pt``/``.pth``.

=============  =====  =====  ==============================================
format         read   write  notes
=============  =====  =====  ==============================================
safetensors    yes    yes    flat dict of tensors + string metadata; default
npz            yes    yes    flat dict of tensors; ``allow_pickle=False``
pt (zip)       yes    yes    any nesting of dicts/lists/tuples of tensors;
                             read and written without torch
pt (legacy)    yes    no     ``torch.save(..., _use_new_zipfile_serialization=False)``
=============  =====  =====  ==============================================

Public names:

- ``save(obj, f, format=None, metadata=None)`` and ``load(f, map_location=None)``:
  a whole checkpoint at once, as ``torch.save``/``torch.load``.
- ``open_checkpoint(f) -> Checkpoint``: a checkpoint opened lazily (MLX's
  ``mx.load`` plus ``Module.load_weights``). ``Checkpoint.entries()`` gives
  each tensor's ``Entry`` (key, dtype, shape, byte offset and size, the offset
  ``None`` where the format keeps no plain run of bytes); ``read(key)``,
  ``copy_into(key, dest)`` and ``load_into(module, strict=True)`` read one
  tensor at a time. Safetensors files are read lazily; npz and PyTorch files
  are loaded whole when opened. ``Checkpoint.metadata`` holds the string
  metadata.
- ``write_safetensors(f, tensors, metadata=None)``: safetensors written tensor
  by tensor (``save`` writes safetensors through it).
- ``load_metadata(f)``, ``detect_format(f)``, ``FORMATS``.

``load`` decides the format from the bytes, never from the file name. Pickles
are run by a restricted interpreter that builds tensors and plain containers
only: untrusted bytes never reach ``pickle.load`` or
``np.load(allow_pickle=True)``.

Exceptions::

    ValueError
     └── CheckpointError   malformed, truncated, hostile or unwritable checkpoint

Arguments of the wrong type raise ``TypeError``; a missing file raises
``FileNotFoundError``, as ``open`` does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, BinaryIO

import numpy as np

from mininn._backend import device as Device
from mininn.serialization import _npz, _safetensors, _torch_load, _torch_save
from mininn.serialization._checkpoint import Checkpoint, Entry, open_checkpoint
from mininn.serialization._detect import detect
from mininn.serialization._dtypes import dtype_name
from mininn.serialization._errors import CheckpointError
from mininn.serialization._io import FileLike, atomic_path, is_path, open_source
from mininn.serialization._tensors import as_array, is_tensor_like, resolve_device, to_tensor
from mininn.tensor import Tensor

__all__ = [
    "FORMATS",
    "Checkpoint",
    "CheckpointError",
    "Entry",
    "detect_format",
    "load",
    "load_metadata",
    "open_checkpoint",
    "save",
    "write_safetensors",
]

FORMATS = ("safetensors", "npz", "pt")
_SUFFIXES = {".safetensors": "safetensors", ".npz": "npz", ".pt": "pt", ".pth": "pt", ".bin": "pt"}


def save(
    obj: Any,
    f: FileLike,
    *,
    format: str | None = None,  # noqa: A002 - torch-style argument name
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Save a state dict (or, for ``.pt``, any nesting of tensors and plain containers).

    Args:
        obj: for safetensors and npz, a flat mapping of ``str`` to tensors
            (``Tensor``, ``Parameter`` or ``np.ndarray``); for ``pt``, tensors in
            any nesting of dict, OrderedDict (its ``_metadata`` is kept), list
            and tuple, with str, bytes, int, float, bool and None.
        f: a path (written atomically through a temporary file beside it) or a
            writable binary file object.
        format: ``"safetensors"``, ``"npz"`` or ``"pt"``. By default it follows
            the path's suffix (``.safetensors``, ``.npz``, ``.pt``/``.pth``/``.bin``),
            else safetensors.
        metadata: string key/value pairs stored with the tensors (safetensors and
            npz only), e.g. ``{"mininn.architecture": "resnet18"}``.

    Raises:
        CheckpointError: ``obj`` cannot be stored in the chosen format (the
            message names the key and the type or dtype).
        ValueError: ``format`` is not one of ``FORMATS``.
    """
    fmt = _choose_format(format, f)
    meta = _checked_metadata(metadata, fmt)
    payload = obj if fmt == "pt" else _flat_arrays(obj, fmt)
    _to_file(f, lambda fh: _write(payload, fmt, meta, fh))


def write_safetensors(
    f: FileLike,
    tensors: Mapping[str, Tensor | np.ndarray] | Iterable[tuple[str, Tensor | np.ndarray]],
    metadata: Mapping[str, str] | None = None,
) -> None:
    """Write a safetensors file tensor by tensor: only the header is built in memory.

    ``save(..., format="safetensors")`` writes through this function too.

    Args:
        f: a path (written atomically through a temporary file beside it) or a
            writable binary file object (the caller flushes and closes it).
        tensors: a mapping of ``str`` to ``Tensor``/``np.ndarray``, or
            ``(key, tensor)`` pairs; the file keeps their order.
        metadata: string key/value pairs stored as ``__metadata__``.

    Raises:
        CheckpointError: a key is not a string, a value is not a tensor, or its
            dtype has no safetensors code (the message names the key).
    """
    pairs = tensors.items() if isinstance(tensors, Mapping) else tensors
    arrays = _flat_arrays(dict(pairs), "safetensors")
    meta = _checked_metadata(metadata, "safetensors")
    _to_file(f, lambda fh: _safetensors.write(fh, arrays.items(), meta))


def load(
    f: FileLike,
    map_location: str | Device | None = None,
    *,
    device: str | Device | None = None,
    weights_only: bool | None = None,
) -> Any:
    """Load a checkpoint written by ``save``, ``torch.save``, safetensors or ``np.savez``.

    Args:
        f: a path or a readable binary file object.
        map_location: torch's name for ``device``.
        device: where the tensors go (default ``"cpu"``).
        weights_only: accepted for torch compatibility; loading is always
            weights-only (tensors and plain containers).

    Returns:
        For safetensors and npz a ``dict`` of ``str`` to ``Tensor`` (safetensors
        in the order of the tensors' bytes in the file, as
        ``safetensors.numpy.load_file`` returns them); for
        PyTorch files the saved object, with ``Tensor`` in place of torch
        tensors, ``mininn.Size`` for ``torch.Size``, and ``OrderedDict``s that
        keep their ``_metadata``. Tensors that shared a storage share memory.

    Raises:
        CheckpointError: the bytes are not a supported checkpoint, or are
            truncated, corrupt or hostile (the message names the problem).
    """
    del weights_only  # always weights-only
    dev = resolve_device(map_location, device)
    with open_source(f) as source:
        fmt = detect(source)
        if fmt == "pt-zip":
            return _torch_load.load_zip(source, dev)
        if fmt == "pt-legacy":
            return _torch_load.load_legacy(source, dev)
        reader = _safetensors.load if fmt == "safetensors" else _npz.load
        return {name: to_tensor(array, dev) for name, array in reader(source).items()}


def load_metadata(f: FileLike) -> dict[str, str]:
    """The string metadata saved with a checkpoint, without reading its tensors.

    Returns:
        The safetensors ``__metadata__`` or the npz metadata that ``save`` stored;
        ``{}`` for a file without metadata and for PyTorch files.

    Raises:
        CheckpointError: the file is not a valid checkpoint header.
    """
    with open_source(f) as source:
        fmt = detect(source)
        if fmt == "safetensors":
            return _safetensors.read_header(source).metadata
        if fmt == "npz":
            return _npz.load_metadata(source)
        return {}


def detect_format(f: FileLike) -> str:
    """The format of a checkpoint from its bytes: ``"safetensors"``, ``"npz"`` or ``"pt"``.

    Raises:
        CheckpointError: the bytes are in none of them.
    """
    with open_source(f) as source:
        return detect(source).removesuffix("-zip").removesuffix("-legacy")


def _choose_format(format: str | None, f: FileLike) -> str:  # noqa: A002
    if format is not None:
        if format not in FORMATS:
            raise ValueError(f"unknown checkpoint format {format!r}; choose one of {', '.join(FORMATS)}")
        return format
    if is_path(f):
        suffix = os.path.splitext(os.fspath(f))[1].lower()
        return _SUFFIXES.get(suffix, "safetensors")
    return "safetensors"


def _checked_metadata(metadata: Mapping[str, str] | None, fmt: str) -> dict[str, str] | None:
    if metadata is None:
        return None
    if fmt == "pt":
        raise CheckpointError("metadata is stored only by safetensors and npz, not by .pt checkpoints")
    if not isinstance(metadata, Mapping):
        raise CheckpointError(f"metadata must be a mapping of str to str, got {type(metadata).__name__}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise CheckpointError(f"metadata must map str to str, got {key!r:.60}: {value!r:.60}")
    return dict(metadata)


def _to_file(f: FileLike, write: Callable[[BinaryIO], None]) -> None:
    if not is_path(f):
        write(f)
        return
    with atomic_path(f) as tmp, open(tmp, "wb") as fh:
        write(fh)


def _write(payload: Any, fmt: str, metadata: dict[str, str] | None, fileobj: BinaryIO) -> None:
    if fmt == "pt":
        _torch_save.save(payload, fileobj)
    elif fmt == "npz":
        _npz.save(payload, fileobj, metadata)
    else:
        _safetensors.write(fileobj, payload.items(), metadata)


def _flat_arrays(obj: Any, fmt: str) -> dict[str, np.ndarray]:
    if not isinstance(obj, Mapping):
        raise CheckpointError(
            f"{fmt} stores a flat dict of tensors, got {type(obj).__name__}; "
            f"use format='pt' for other objects"
        )
    arrays = {}
    for key, value in obj.items():
        if not isinstance(key, str):
            raise CheckpointError(f"{fmt} keys must be strings, got {key!r:.60}")
        if not is_tensor_like(value):
            raise CheckpointError(
                f"{fmt} stores only tensors, but {key!r} is {type(value).__name__}; "
                f"use format='pt' for nested checkpoints"
            )
        array = as_array(value)
        dtype_name(array.dtype, where=repr(key))
        arrays[key] = array
    return arrays
