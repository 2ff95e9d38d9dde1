"""An uploaded checkpoint, read for checking and for copying into a module.

A safetensors upload is never loaded whole: its header (read by
:func:`mininn.serialization.open_checkpoint`, so a hostile one fails there)
gives each tensor's key, shape, dtype and place in the file; the check runs
``load_state_dict`` on zero-byte stand-ins of those shapes, and then each
tensor is read from the file straight into its parameter, one at a time. So
checking a safetensors upload needs the fresh module and nothing more. A
``.pt`` or ``.npz`` upload is loaded whole (``mininn.load``) and checked with
its own values.

Both kinds answer the same questions (:class:`Checkpoint`): which keys, what
shape and dtype each has, what to hand ``load_state_dict``, and how to copy a
tensor into a parameter's array.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

import mininn
from app.errors import BadRequestError, UnprocessableError
from mininn.serialization import Checkpoint as LazyCheckpoint
from mininn.serialization import CheckpointError, detect_format
from mininn.serialization import load as load_checkpoint
from mininn.serialization import open_checkpoint as open_lazy
from models.gguf import GGUFError, is_gguf, open_reader, read_for_config

__all__ = ["Checkpoint", "detect", "open_checkpoint", "open_gguf"]

_MAX_LISTED = 50


def detect(path: Path) -> str:
    """The checkpoint format of the file: ``safetensors``, ``npz``, ``pt`` or ``gguf``.

    Raises:
        BadRequestError: it is none of them (400).
    """
    if is_gguf(path):
        return "gguf"
    try:
        return detect_format(path)
    except CheckpointError as exc:
        raise BadRequestError(
            f"the body is not a safetensors, .npz, PyTorch .pt or GGUF checkpoint: {exc}"
        ) from None


def open_gguf(path: Path, config: Any) -> tuple[Checkpoint, Any]:
    """An uploaded GGUF file as a checkpoint, and its ``GGUFReader`` (for the tokenizer).

    Raises:
        BadRequestError: malformed or truncated bytes (400).
        UnprocessableError: a GGUF file of another architecture, with a tensor a llama model does
            not have, or whose metadata gives another config than the model's ``model.json`` (422).
    """
    try:
        reader = open_reader(path)
    except GGUFError as exc:
        raise BadRequestError(f"cannot read the uploaded GGUF file: {exc}") from None
    try:
        model = read_for_config(path, config, reader) if config is not None else None
    except GGUFError as exc:
        raise UnprocessableError(f"cannot serve the uploaded GGUF file: {exc}") from None
    if model is None:
        raise UnprocessableError("a GGUF upload needs a model whose architecture is 'llama'")
    return _Loaded("gguf", model.tensors), reader


def open_checkpoint(path: Path, source_format: str, key: str = "") -> Checkpoint:
    """The uploaded checkpoint at ``path`` (safetensors: its header only; others: loaded whole).

    Args:
        path: the uploaded file.
        source_format: its format (:func:`detect`).
        key: the entry of a training checkpoint (a dict) that holds the state dict.

    Raises:
        BadRequestError: malformed, truncated or hostile bytes (400).
        UnprocessableError: readable, but not a flat state dict (422), or no entry ``key``.
    """
    try:
        if source_format == "safetensors" and not key:
            return _Streamed.open(path)
        loaded = load_checkpoint(path)
    except CheckpointError as exc:
        hint = _PICKLED_MODULE_HINT if "refused pickle global torch.nn." in str(exc) else ""
        raise BadRequestError(f"cannot read the uploaded {source_format} checkpoint: {exc}{hint}") from None
    if key:
        loaded = _entry(loaded, key)
    return _Loaded(source_format, _as_state_dict(loaded, source_format))


_PICKLED_MODULE_HINT = (
    "; this file holds a whole pickled module (torch.save(model)): save the weights with "
    "torch.save(model.state_dict(), path) instead"
)


def _entry(loaded: Any, key: str) -> Any:
    if not isinstance(loaded, Mapping) or key not in loaded:
        keys = ", ".join(repr(k) for k in list(loaded)[:_MAX_LISTED]) if isinstance(loaded, Mapping) else ""
        raise UnprocessableError(f"?key={key}: the uploaded checkpoint has no entry {key!r}; entries: {keys}")
    return loaded[key]


class Checkpoint:
    """The keys, shapes and dtypes of an uploaded state dict, and its values on request."""

    format: str

    def keys(self) -> list[str]:
        """The keys, in file order."""
        raise NotImplementedError

    def describe(self, key: str) -> tuple[tuple[int, ...], np.dtype] | None:
        """Shape and dtype of ``key``'s tensor; None when the value is not a tensor."""
        raise NotImplementedError

    def for_check(self, expected: Mapping[str, Any]) -> Mapping[str, Any]:
        """What ``load_state_dict`` is given to check the keys and shapes against ``expected``."""
        raise NotImplementedError

    def copy_into(self, key: str, target: Any) -> None:
        """Write ``key``'s values into the tensor ``target`` (after the check), cast to its dtype."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the file, if one is open."""

    def renamed(self, prefix: str) -> tuple[Checkpoint, int]:
        """The checkpoint with ``prefix`` removed where keys start with it, and how many did.

        Raises:
            UnprocessableError: two keys would become one.
        """
        raise NotImplementedError


class _Loaded(Checkpoint):
    """A checkpoint loaded whole: ``load_state_dict`` copies its values itself."""

    def __init__(self, source_format: str, values: Mapping[str, Any]) -> None:
        self.format, self.values = source_format, values

    def keys(self) -> list[str]:
        return list(self.values)

    def describe(self, key: str) -> tuple[tuple[int, ...], np.dtype] | None:
        value = self.values[key]
        if isinstance(value, mininn.Tensor):
            return tuple(value.shape), value.dtype.np
        if isinstance(value, np.ndarray):
            return value.shape, value.dtype
        return None

    def for_check(self, expected: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.values

    def copy_into(self, key: str, target: Any) -> None:
        pass  # load_state_dict copied it

    def renamed(self, prefix: str) -> tuple[Checkpoint, int]:
        names, count = _strip(self.keys(), prefix)
        values: OrderedDict[str, Any] = OrderedDict((new, self.values[old]) for old, new in names.items())
        metadata = getattr(self.values, "_metadata", None)
        if metadata is not None:
            values._metadata = OrderedDict(  # type: ignore[attr-defined]
                (k[len(prefix) :] if k.startswith(prefix) else k, v) for k, v in metadata.items()
            )
        return _Loaded(self.format, values), count


class _Streamed(Checkpoint):
    """A safetensors file read tensor by tensor, straight into the parameters.

    It is opened with :func:`mininn.serialization.open_checkpoint`; ``names`` maps each
    key (after ``renamed``) to the key in the file.
    """

    def __init__(self, lazy: LazyCheckpoint, names: Mapping[str, str]) -> None:
        self.format, self.lazy, self.names = lazy.format, lazy, names

    @classmethod
    def open(cls, path: Path) -> _Streamed:
        lazy = open_lazy(path)  # the header, checked against the file: dtypes, shapes, offsets
        return cls(lazy, {key: key for key in lazy.keys()})

    def keys(self) -> list[str]:
        return list(self.names)

    def describe(self, key: str) -> tuple[tuple[int, ...], np.dtype] | None:
        entry = self.lazy.entry(self.names[key])
        return entry.shape, entry.dtype.np

    def for_check(self, expected: Mapping[str, Any]) -> Mapping[str, Any]:
        stand_ins = {}
        for key, name in self.names.items():
            entry = self.lazy.entry(name)
            target = expected.get(key)
            dtype = target.dtype.np if target is not None else entry.dtype.np  # no cast, no copy
            stand_ins[key] = np.broadcast_to(np.zeros((), dtype), entry.shape)  # zero bytes
        return stand_ins

    def copy_into(self, key: str, target: Any) -> None:
        try:
            self.lazy.copy_into(self.names[key], target)
        except CheckpointError as exc:  # the file changed under us
            raise BadRequestError(f"cannot read the uploaded safetensors file: {exc}") from None

    def close(self) -> None:
        self.lazy.close()

    def renamed(self, prefix: str) -> tuple[Checkpoint, int]:
        names, count = _strip(self.keys(), prefix)
        return _Streamed(self.lazy, {new: self.names[old] for old, new in names.items()}), count


def _strip(keys: list[str], prefix: str) -> tuple[dict[str, str], int]:
    names: dict[str, str] = {}
    seen: set[str] = set()
    for key in keys:
        new = key[len(prefix) :] if prefix and key.startswith(prefix) else key
        if new in seen:
            raise UnprocessableError(f"removing the prefix {prefix!r} gives the key {new!r} twice")
        seen.add(new)
        names[key] = new
    return names, sum(old != new for old, new in names.items())


def _looks_like_state_dict(value: Any) -> bool:
    """A non-empty dict of string keys to arrays: a state dict kept inside a training checkpoint."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, str) and hasattr(v, "shape") for k, v in value.items())
    )


def _as_state_dict(loaded: Any, source_format: str) -> Mapping[str, Any]:
    if not isinstance(loaded, Mapping):
        raise UnprocessableError(
            f"the uploaded {source_format} file holds a {type(loaded).__name__}, not a state dict "
            "(a dict of parameter names to tensors)"
        )
    bad = [key for key in loaded if not isinstance(key, str)]
    if bad:
        raise UnprocessableError(f"state-dict keys must be strings, got {bad[0]!r}")
    holders = [key for key, value in loaded.items() if _looks_like_state_dict(value)]
    if holders:
        entries = ", ".join(repr(k) for k in list(loaded)[:_MAX_LISTED])
        raise UnprocessableError(
            f"the uploaded {source_format} file is a training checkpoint ({entries}), not a state dict; "
            f"upload its state dict with ?key={holders[0]}, or save model.state_dict() on its own"
        )
    nested = [key for key, value in loaded.items() if isinstance(value, Mapping)]
    if nested and len(nested) == len(loaded):
        shown = ", ".join(nested[:_MAX_LISTED]) + (", ..." if len(nested) > _MAX_LISTED else "")
        raise UnprocessableError(
            f"the uploaded {source_format} file holds a dict of dicts ({shown}), not a state "
            "dict; upload the model's state_dict() itself, e.g. checkpoint['state_dict']"
        )
    return loaded
