"""Steering vectors, named and stored with their model: ``<repository>/<model>/steering/<name>.safetensors``.

A vector is a set of directions: module name -> 1-D float32 array as wide as the last dimension
of that module's output (``model.layers.12`` -> ``hidden_size`` values). Uploads come as
safetensors or ``.npz`` of exactly that, or as a GGUF control vector as repeng's
``export_gguf`` and llama.cpp's ``cvector-generator`` write it: tensors ``direction.{N}``, which
both add to the output of decoder layer ``N`` (0-based; llama.cpp's ``apply_to(cur, il)`` adds
``tensors[il]`` after layer ``il``, repeng's ``direction.{layer}`` is ``hidden_states[layer + 1]``,
the output of ``model.layers[layer]``). They map to ``<layers>.{N}`` of the model's decoder
layer list (``model.layers`` for llama).

Files are written atomically (a temporary file in the same folder, fsynced, renamed, the folder
fsynced), so a reader sees the old vector or the new one, never half of one; every worker reads
the folder, so all of them see a change at once. The folder sits beside the version folders and
is not part of what the repository watch follows, so storing a vector never reloads the model.
"""

from __future__ import annotations

import io
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from app.errors import BadRequestError, NotFoundError, UnprocessableError
from app.store.repository import ModelRepository, fsync_dir, write_file_atomically

__all__ = ["STEERING_FOLDER", "SteeringStore", "check_directions", "read_upload", "validate_vector_name"]

STEERING_FOLDER = "steering"
_SUFFIX = ".safetensors"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_DIRECTION = re.compile(r"direction\.(\d+)")


def validate_vector_name(name: str) -> str:
    """``name`` if it can name a vector (letters, digits, ``_.-``, up to 64, not ending ``.tmp``).

    Raises:
        BadRequestError: any other name.
    """
    if not _NAME.fullmatch(name) or name.endswith(".tmp"):
        raise BadRequestError(
            f"steering vector name {name!r} is not valid: use 1 to 64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


class SteeringStore:
    """The steering vectors of the models of one repository.

    Args:
        repository: the model repository.
    """

    def __init__(self, repository: ModelRepository) -> None:
        self.repository = repository
        self._cache: dict[Path, tuple[tuple[int, int, int], dict[str, np.ndarray]]] = {}
        self._lock = threading.Lock()

    def folder(self, model: str) -> Path:
        """``<repository>/<model>/steering``."""
        return self.repository.model_dir(model) / STEERING_FOLDER

    def names(self, model: str) -> list[str]:
        """The model's vectors, sorted."""
        folder = self.folder(model)
        if not folder.is_dir():
            return []
        return sorted(
            p.name.removesuffix(_SUFFIX)
            for p in folder.iterdir()
            if p.name.endswith(_SUFFIX) and _NAME.fullmatch(p.name.removesuffix(_SUFFIX))
        )

    def read(self, model: str, name: str) -> dict[str, np.ndarray]:
        """The directions of vector ``name`` (module -> float32 array); cached per file identity.

        Raises:
            UnprocessableError: no such vector (the stored names listed).
        """
        path = self.folder(model) / f"{validate_vector_name(name)}{_SUFFIX}"
        try:
            stat = path.stat()
        except FileNotFoundError:
            known = ", ".join(map(repr, self.names(model))) or "none yet"
            raise UnprocessableError(
                f"model '{model}' has no steering vector '{name}' (stored: {known}); upload one with "
                f"PUT /v2/models/{model}/steering/{name} or compute one with POST .../compute"
            ) from None
        identity = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            cached = self._cache.get(path)
        if cached is not None and cached[0] == identity:
            return cached[1]
        directions = _load_safetensors(path.read_bytes())
        with self._lock:
            self._cache[path] = (identity, directions)
        return directions

    def file_bytes(self, model: str, name: str) -> bytes:
        """The stored safetensors file of ``name``.

        Raises:
            NotFoundError: no such vector.
        """
        path = self.folder(model) / f"{validate_vector_name(name)}{_SUFFIX}"
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"model '{model}' has no steering vector '{name}'") from None

    def write(self, model: str, name: str, directions: dict[str, np.ndarray]) -> bool:
        """Store ``directions`` as ``name`` atomically; whether it is new."""
        from safetensors.numpy import save

        folder = self.folder(model)
        folder.mkdir(exist_ok=True)
        path = folder / f"{validate_vector_name(name)}{_SUFFIX}"
        created = not path.exists()
        data = save({key: np.ascontiguousarray(v, dtype=np.float32) for key, v in directions.items()})
        write_file_atomically(folder, path.name, data)
        return created

    def delete(self, model: str, name: str) -> None:
        """Remove vector ``name``.

        Raises:
            NotFoundError: no such vector.
        """
        path = self.folder(model) / f"{validate_vector_name(name)}{_SUFFIX}"
        try:
            path.unlink()
        except FileNotFoundError:
            raise NotFoundError(f"model '{model}' has no steering vector '{name}'") from None
        fsync_dir(path.parent)


# ---- reading an upload -----------------------------------------------------------------------
def read_upload(data: bytes, *, layers: str | None, layer_count: int) -> dict[str, np.ndarray]:
    """The directions in an uploaded file: safetensors, ``.npz`` or a GGUF control vector.

    Args:
        data: the file's bytes.
        layers: the name of the model's decoder layer list (``model.layers``), for GGUF files.
        layer_count: how many decoder layers the model has.

    Raises:
        BadRequestError: empty, or not a readable safetensors, npz or GGUF file.
        UnprocessableError: no tensors, a GGUF tensor other than ``direction.N``, or a layer past
            the model's.
    """
    if not data:
        raise BadRequestError("the body is empty: send a safetensors, .npz or GGUF file of directions")
    if data[:4] == b"GGUF":
        directions = _control_vector(data, layers, layer_count)
    elif data[:2] == b"PK":
        directions = _load_npz(data)
    else:
        directions = _load_safetensors(data)
    if not directions:
        raise UnprocessableError("the file holds no tensors: send module name -> 1-D direction")
    return directions


def _load_safetensors(data: bytes) -> dict[str, np.ndarray]:
    from safetensors.numpy import load

    try:
        return {key: np.asarray(value) for key, value in load(data).items()}
    except Exception as exc:
        raise BadRequestError(
            f"the body is not a safetensors, .npz or GGUF file of directions ({exc}); "
            "send module name -> 1-D tensor"
        ) from None


def _load_npz(data: bytes) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            return {key: np.asarray(archive[key]) for key in archive.files}
    except Exception as exc:
        raise BadRequestError(f"the body is not a readable .npz file ({exc})") from None


def _control_vector(data: bytes, layers: str | None, layer_count: int) -> dict[str, np.ndarray]:
    try:
        import gguf
    except ImportError:
        raise UnprocessableError(
            "reading GGUF control vectors needs the 'gguf' package: pip install gguf"
        ) from None
    with tempfile.NamedTemporaryFile(suffix=".gguf") as fh:
        fh.write(data)
        fh.flush()
        try:
            reader = gguf.GGUFReader(fh.name)
            tensors = [(t.name, np.array(t.data, dtype=np.float32).reshape(-1)) for t in reader.tensors]
        except Exception as exc:
            raise BadRequestError(f"the body is not a readable GGUF file ({exc})") from None
    if layers is None:
        raise UnprocessableError(
            "this model has no decoder layer list, so a GGUF control vector has no layers to steer; "
            "upload safetensors of module name -> direction"
        )
    directions: dict[str, np.ndarray] = {}
    for name, values in tensors:
        match = _DIRECTION.fullmatch(name)
        if match is None:
            raise UnprocessableError(
                f"GGUF tensor '{name}' is not a control vector direction: expected 'direction.N' (layer N)"
            )
        layer = int(match.group(1))
        if layer >= layer_count:
            raise UnprocessableError(
                f"the control vector has '{name}' for layer {layer}, but this model has {layer_count} "
                f"decoder layers (0 to {layer_count - 1}): it was made for another model"
            )
        directions[f"{layers}.{layer}"] = values
    return directions


def check_directions(
    directions: dict[str, Any], shapes: dict[str, tuple[int, ...] | None], model: str
) -> dict[str, np.ndarray]:
    """Directions checked against the model's per-token output shapes, as float32 arrays.

    Raises:
        UnprocessableError: an unknown module, a module without a per-token output, a direction
            that is not 1-D, of the wrong width, or not finite.
    """
    checked: dict[str, np.ndarray] = {}
    for module, value in directions.items():
        if module not in shapes:
            raise UnprocessableError(
                f"'{module}' is not a module of model '{model}'; directions are keyed by module "
                "names such as 'model.layers.12'"
            )
        shape = shapes[module]
        if not shape:
            raise UnprocessableError(
                f"module '{module}' of model '{model}' has no per-token output of features to steer"
            )
        array = np.asarray(value)
        if array.ndim != 1 or array.shape[0] != shape[-1]:
            raise UnprocessableError(
                f"the direction for '{module}' has shape {list(array.shape)}, but that module's output "
                f"has {shape[-1]} features per token: send a 1-D tensor of {shape[-1]} values"
            )
        if not np.issubdtype(array.dtype, np.floating) and not np.issubdtype(array.dtype, np.integer):
            raise UnprocessableError(f"the direction for '{module}' is {array.dtype}, not numbers")
        array = array.astype(np.float32)
        if not np.isfinite(array).all():
            raise UnprocessableError(f"the direction for '{module}' has NaN or infinite values")
        checked[module] = array
    return checked
