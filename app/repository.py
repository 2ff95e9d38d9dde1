"""The model repository on disk: ``<model>/model.json`` and ``<model>/<version>/weights.*``.

::

    model_repository/
      digits/
        model.json                 {"architecture": "lenet5", "config": {...}, ...}
        1/weights.safetensors
        2/weights.safetensors

Names are checked against :data:`MODEL_NAME_PATTERN` before any path is
built from them, so no request can reach outside the repository. A version is
a folder named by a positive integer that holds a weights file; a folder still
being written (no weights file yet) is not a version.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.errors import BadRequestError, NotFoundError, UnprocessableError
from app.settings import check_float_dtype

__all__ = [
    "MODEL_NAME_PATTERN",
    "SPEC_FILE",
    "WEIGHTS_FILES",
    "ModelRepository",
    "ModelSpec",
    "parse_spec",
    "parse_version",
    "validate_model_name",
]

MODEL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
SPEC_FILE = "model.json"
WEIGHTS_FILES = ("weights.safetensors", "weights.npz", "weights.pt", "weights.pth")
_VERSION_PATTERN = re.compile(r"[1-9][0-9]{0,17}")


def validate_model_name(name: str) -> str:
    """``name`` if it is a valid model name.

    Raises:
        BadRequestError: it does not match ``[A-Za-z0-9][A-Za-z0-9_.-]{0,63}``.
    """
    if not isinstance(name, str) or not MODEL_NAME_PATTERN.fullmatch(name):
        raise BadRequestError(
            f"invalid model name {name!r}: use 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return name


def parse_version(version: str | int | None) -> int | None:
    """A requested version as an int (None: the highest).

    Raises:
        BadRequestError: not a positive integer.
    """
    if version is None or version == "":
        return None
    text = str(version)
    if not _VERSION_PATTERN.fullmatch(text):
        raise BadRequestError(f"invalid model version {text!r}: versions are positive integers such as 1")
    return int(text)


class ModelSpec(BaseModel):
    """The contents of ``model.json``; keys other issues add are kept as extras.

    Attributes:
        architecture: the registered architecture name (``models.available()``).
        config: the architecture's config keys and values.
        max_batch_size: largest batch per request; 0 disables batching; None:
            ``MININN_MAX_BATCH_SIZE`` for batchable architectures, else 0.
        device: this model's device; None: ``MININN_DEVICE``.
        dtype: this model's floating dtype; None: ``MININN_DTYPE``.
        description: one line for listings.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    architecture: str
    config: dict[str, Any] = Field(default_factory=dict)
    max_batch_size: int | None = Field(None, ge=0)
    device: str | None = None
    dtype: str | None = None
    description: str = ""

    @field_validator("device")
    @classmethod
    def _check_device(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from mininn import device

        try:
            return str(device(value))
        except (RuntimeError, TypeError) as exc:
            raise ValueError(str(exc)) from None

    @field_validator("dtype")
    @classmethod
    def _check_dtype(cls, value: str | None) -> str | None:
        return None if value is None else check_float_dtype(value)


def parse_spec(text: str | bytes, where: str) -> ModelSpec:
    """The :class:`ModelSpec` in JSON ``text``.

    Raises:
        UnprocessableError: not JSON, not an object, or a bad key or value; the
            message names ``where`` and the key.
    """
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UnprocessableError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise UnprocessableError(f"{where} must be a JSON object with an 'architecture' key")
    try:
        return ModelSpec.model_validate(document)
    except ValidationError as exc:
        problems = "; ".join(
            f"key '{'.'.join(str(p) for p in e['loc'])}': {str(e['msg']).removeprefix('Value error, ')}"
            for e in exc.errors()
        )
        raise UnprocessableError(f"{where}: {problems}") from None


class ModelRepository:
    """Reads the repository folder; every method validates the name first.

    Args:
        root: the repository folder (it need not exist yet).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def is_empty(self) -> bool:
        """Whether the folder is missing or holds no model folder."""
        return not self.model_names()

    def model_names(self) -> list[str]:
        """Every subfolder whose name is a valid model name, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name for p in self.root.iterdir() if p.is_dir() and MODEL_NAME_PATTERN.fullmatch(p.name)
        )

    def has_model(self, name: str) -> bool:
        """Whether ``<root>/<name>/`` exists."""
        return self.model_dir(name).is_dir()

    def model_dir(self, name: str) -> Path:
        """``<root>/<name>``, after checking ``name``."""
        return self.root / validate_model_name(name)

    def read_spec(self, name: str) -> ModelSpec:
        """The model's ``model.json``.

        Raises:
            NotFoundError: no such model folder.
            UnprocessableError: ``model.json`` is missing or invalid.
        """
        folder = self._existing_dir(name)
        path = folder / SPEC_FILE
        try:
            text = path.read_bytes()
        except FileNotFoundError:
            raise UnprocessableError(f"model '{name}' has no {SPEC_FILE}") from None
        return parse_spec(text, f"{name}/{SPEC_FILE}")

    def versions(self, name: str) -> list[int]:
        """The model's versions (folders holding a weights file), ascending."""
        folder = self._existing_dir(name)
        found = [
            int(p.name)
            for p in folder.iterdir()
            if p.is_dir() and _VERSION_PATTERN.fullmatch(p.name) and _weights_in(p) is not None
        ]
        return sorted(found)

    def weights_path(self, name: str, version: int) -> Path:
        """The weights file of ``version``.

        Raises:
            NotFoundError: no such model or version.
        """
        folder = self._existing_dir(name) / str(version)
        path = _weights_in(folder) if folder.is_dir() else None
        if path is None:
            raise NotFoundError(f"model '{name}' has no version {version}")
        return path

    def _existing_dir(self, name: str) -> Path:
        folder = self.model_dir(name)
        if not folder.is_dir():
            raise NotFoundError(f"unknown model '{name}'{_available(self.model_names())}")
        return folder


def _weights_in(folder: Path) -> Path | None:
    for filename in WEIGHTS_FILES:
        path = folder / filename
        if path.is_file():
            return path
    return None


def _available(names: list[str]) -> str:
    if not names:
        return "; the repository is empty"
    shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
    return f"; available models: {shown}"
