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

Writes never leave a torn state, even when the process is killed:

- ``model.json`` is written to ``.model.json.<token>.tmp`` beside it, fsynced,
  and renamed over it.
- An upload is prepared in a staging folder ``<model>/.upload-<token>/``, whose
  owner holds an ``flock`` on ``<model>/.upload-<token>.lock`` while it lives.
  The complete folder is renamed to ``<model>/<n>``: the rename is the commit,
  and it claims the number atomically (a rename onto a folder that already
  holds a version fails, and the next number is tried), so two writers
  racing, in one process or in many sharing the volume, get distinct versions.
- Deleting a version renames it to ``.deleted-<n>-<token>`` first, then
  removes it.

Staging folders whose lock nobody holds (their writer died) and half-deleted
versions are removed by :meth:`ModelRepository.clean_stale`; none of these
dot-names can ever be mistaken for a model or a version.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from app.errors import BadRequestError, ConflictError, NotFoundError, UnprocessableError, unknown_model_error
from app.http import json_limits
from app.settings import check_device, check_float_dtype

__all__ = [
    "MODEL_NAME_PATTERN",
    "SPEC_FILE",
    "TEXT_GENERATION",
    "WEIGHTS_FILES",
    "DiskState",
    "FileIdentity",
    "ModelRepository",
    "ModelSpec",
    "Staging",
    "file_identity",
    "fsync_dir",
    "is_model_file_name",
    "parse_spec",
    "parse_version",
    "spec_from_document",
    "validate_file_name",
    "validate_model_name",
    "write_file_atomically",
]

logger = logging.getLogger("app.store.repository")

MODEL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
SPEC_FILE = "model.json"
WEIGHTS_FILES = ("weights.safetensors", "weights.npz", "weights.pt", "weights.pth")
GGUF_PATTERN = "*.gguf"  # a llama version may hold a GGUF file (weights, tokenizer, chat template) instead
_VERSION_PATTERN = re.compile(r"[1-9][0-9]{0,17}")
_FILE_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_HTTP_CODE_FILE = ".code-from-http.json"  # the .py files of a model that arrived over HTTP
_STAGING_PREFIX = ".upload-"
_LOCK_SUFFIX = ".lock"
_DELETED_PREFIX = ".deleted-"
_SPEC_TMP_PREFIX = ".model.json."
_LOCK_GRACE_S = 1.0  # a lock file this young may not be flocked by its creator yet
_ORPHAN_AGE_S = 3600.0  # staging folders without a lock file are removed after this
_CLAIM_ATTEMPTS = 10_000
TEXT_GENERATION = "text-generation"  # the task of language models (models.causal_lm.TEXT_GENERATION)


class FileIdentity(NamedTuple):
    """What tells one file from another at the same path: inode, size, modification time."""

    inode: int
    size: int
    mtime_ns: int


def file_identity(path: Path) -> FileIdentity | None:
    """The identity of the file at ``path``, or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileIdentity(st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class DiskState:
    """One model's folder as a scan saw it: ``model.json`` and each version's weights file.

    Two scans compare equal exactly when nothing a loader reads has changed
    (a replaced file has a new inode, so even a reused version number shows).
    """

    spec: FileIdentity | None
    versions: tuple[tuple[int, FileIdentity], ...]
    files: tuple[tuple[str, FileIdentity], ...] = ()  # the folder's code and data files

    def same_model(self, other: DiskState) -> bool:
        """Whether ``model.json`` and the code and data files are unchanged (versions aside)."""
        return self.spec == other.spec and self.files == other.files

    @property
    def numbers(self) -> list[int]:
        """The version numbers, ascending."""
        return [number for number, _ in self.versions]

    @property
    def newest(self) -> tuple[int, FileIdentity] | None:
        """The highest version and its weights file's identity."""
        return self.versions[-1] if self.versions else None

    def identity_of(self, version: int) -> FileIdentity | None:
        """The identity of ``version``'s weights file, or None when it is not on disk."""
        return dict(self.versions).get(version)


def is_model_file_name(name: str) -> bool:
    """Whether ``name`` can be a code or data file of a model folder (no model.json, version, dot-file)."""
    return bool(_FILE_NAME_PATTERN.fullmatch(name)) and name != SPEC_FILE and not name.isdigit()


def validate_file_name(filename: str) -> str:
    """``filename`` if it can be a code or data file of a model folder.

    Raises:
        BadRequestError: it cannot (:func:`is_model_file_name`).
    """
    if not isinstance(filename, str) or not is_model_file_name(filename):
        raise BadRequestError(
            f"invalid file name {filename!r}: use 1-128 letters, digits, '_', '.' or '-', starting with "
            "a letter or digit; not model.json (PUT /v2/repository/models/{m}) and not a version number"
        )
    return filename


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
    """The contents of ``model.json``: a registered architecture, or code in the model's folder.

    Exactly one of ``architecture`` and ``module`` is given. Other keys are kept as extras.

    Attributes:
        architecture: the registered architecture name (``models.available()``).
        config: the architecture's config keys and values.
        module: ``"<file>.py:<name>"``, a class or factory in the model's folder (``models.code``).
        init: its keyword arguments.
        inputs: ``{"name"?, "datatype", "shape"}`` per positional argument of its ``forward``.
        outputs: ``{"name", "datatype", "shape"}`` per output; None: found by the warm-up.
        max_batch_size: largest batch per request; 0 disables batching; None:
            ``MININN_MAX_BATCH_SIZE`` for batchable architectures, else 0.
        device: this model's device; None: ``MININN_DEVICE``.
        dtype: this model's floating dtype; None: ``MININN_DTYPE``.
        description: one line for listings.
        task: ``"text-generation"`` for a language model (``module`` code whose ``forward`` maps
            token ids to logits, or a text architecture); None: tensors in, tensors out.
        context_length: a text-generation ``module``'s longest sequence, prompt plus generated
            tokens; None: its ``block_size`` or ``max_position_embeddings``.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    architecture: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    module: str | None = None
    init: dict[str, Any] = Field(default_factory=dict)
    inputs: list[dict[str, Any]] | None = None
    outputs: list[dict[str, Any]] | None = None
    max_batch_size: int | None = Field(None, ge=0)
    device: str | None = None
    dtype: str | None = None
    description: str = ""
    task: str | None = None
    context_length: int | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _architecture_or_module(self) -> ModelSpec:
        if (self.architecture is None) == (self.module is None):
            raise ValueError(
                "give either 'architecture' (a registered one: GET /v2/repository/architectures) or "
                "'module' (code in the model's folder, e.g. \"model.py:Net\"), not both or neither"
            )
        code_keys = self.init or self.inputs is not None or self.outputs is not None
        if self.architecture is not None and code_keys:
            raise ValueError("'init', 'inputs' and 'outputs' go with 'module'; architectures take 'config'")
        if self.module is not None and self.config:
            raise ValueError("'config' goes with 'architecture'; code in the model's folder takes 'init'")
        self._check_task()
        if self.module is not None and not self.inputs and self.task is None:
            raise ValueError(
                "'module' needs 'inputs': one {\"name\", \"datatype\", \"shape\"} per tensor argument of "
                'forward, e.g. [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 32, 32]}]'
            )
        return self

    def _check_task(self) -> None:
        if self.task is not None and self.task != TEXT_GENERATION:
            raise ValueError(
                f"unknown task {self.task!r}: the one task is '{TEXT_GENERATION}' (language models); "
                "leave 'task' out for tensors in, tensors out"
            )
        if self.context_length is not None and (self.task is None or self.module is None):
            raise ValueError(
                "'context_length' goes with 'module' code and \"task\": \"text-generation\" "
                "(architectures take it from their config)"
            )
        if self.task is not None and self.module is not None and (self.inputs or self.outputs):
            raise ValueError(
                "a text-generation model takes 'input_ids' [batch, tokens] and gives 'logits' "
                "[batch, tokens, vocab]: leave 'inputs' and 'outputs' out"
            )

    @property
    def label(self) -> str:
        """What the model is built from: the architecture name or the ``module`` reference."""
        return self.architecture if self.architecture is not None else str(self.module)

    @property
    def built_from(self) -> str:
        """For messages: ``architecture 'mlp'`` or ``module 'model.py:Net'``."""
        return f"architecture '{self.architecture}'" if self.module is None else f"module '{self.module}'"

    @field_validator("device")
    @classmethod
    def _check_device(cls, value: str | None) -> str | None:
        return None if value is None else check_device(value)

    @field_validator("dtype")
    @classmethod
    def _check_dtype(cls, value: str | None) -> str | None:
        return None if value is None else check_float_dtype(value)


def parse_spec(text: str | bytes, where: str) -> ModelSpec:
    """The :class:`ModelSpec` in JSON ``text``.

    Raises:
        UnprocessableError: not JSON, nested too deep, not an object, or a bad key
            or value; the message names ``where`` and the key.
    """
    try:
        document = json_limits.load_json(text, where)
    except BadRequestError as exc:
        raise UnprocessableError(exc.message) from None
    return spec_from_document(document, where)


def spec_from_document(document: Any, where: str) -> ModelSpec:
    """The :class:`ModelSpec` in an already parsed JSON ``document``.

    Raises:
        UnprocessableError: not an object, or a bad key or value; the message names ``where`` and the key.
    """
    if not isinstance(document, dict):
        raise UnprocessableError(f"{where} must be a JSON object with an 'architecture' or 'module' key")
    try:
        return ModelSpec.model_validate(document)
    except ValidationError as exc:
        problems = "; ".join(_problem(e) for e in exc.errors())
        raise UnprocessableError(f"{where}: {problems}") from None


def _problem(error: Any) -> str:
    message = str(error["msg"]).removeprefix("Value error, ")
    key = ".".join(str(p) for p in error["loc"])
    return f"key '{key}': {message}" if key else message


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

    def disk_state(self, name: str) -> DiskState | None:
        """A scan of the model's folder (None when the folder is gone); a few ``stat`` calls."""
        folder = self.model_dir(name)
        try:
            scanned = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return None
        entries = [e.name for e in scanned if _VERSION_PATTERN.fullmatch(e.name)]
        files = []
        for e in sorted(scanned, key=lambda e: e.name):
            if is_model_file_name(e.name) and e.is_file(follow_symlinks=False):
                identity = file_identity(Path(e.path))
                if identity is not None:
                    files.append((e.name, identity))
        versions = []
        for number in sorted(int(n) for n in entries):
            path = _weights_in(folder / str(number))
            identity = file_identity(path) if path is not None else None
            if identity is not None:
                versions.append((number, identity))
        return DiskState(file_identity(folder / SPEC_FILE), tuple(versions), tuple(files))

    # -- writes ------------------------------------------------------------

    def write_spec(self, name: str, text: bytes) -> bool:
        """Create or replace ``<name>/model.json`` atomically; whether the model is new.

        The bytes go to a temporary file in the model's folder, are fsynced, and
        are renamed over ``model.json``; the folder is fsynced after.
        """
        created = not (self.model_dir(name) / SPEC_FILE).is_file()
        self._write_atomically(name, SPEC_FILE, text)
        return created

    def write_file(self, name: str, filename: str, data: bytes, *, from_http: bool) -> bool:
        """Create or replace a code or data file of the model atomically; whether it is new.

        ``from_http`` records a ``.py`` file as code that arrived over HTTP
        (:meth:`http_code_files`), which only ``MININN_ALLOW_CODE_UPLOAD`` lets a model use.

        Raises:
            BadRequestError: ``filename`` is not a valid model file name.
        """
        validate_file_name(filename)
        created = not (self.model_dir(name) / filename).is_file()
        if from_http and filename.endswith(".py"):
            marked = self.http_code_files(name) | {filename}
            self._write_atomically(name, _HTTP_CODE_FILE, json.dumps(sorted(marked)).encode())
        self._write_atomically(name, filename, data)
        return created

    def http_code_files(self, name: str) -> set[str]:
        """The model's ``.py`` files that arrived over HTTP."""
        try:
            return set(json.loads((self.model_dir(name) / _HTTP_CODE_FILE).read_text()))
        except (FileNotFoundError, ValueError):
            return set()

    def _write_atomically(self, name: str, filename: str, data: bytes) -> None:
        folder = self.model_dir(name)
        if not folder.is_dir():
            self.root.mkdir(parents=True, exist_ok=True)
            folder.mkdir(exist_ok=True)
            fsync_dir(self.root)
        write_file_atomically(folder, filename, data, tmp_prefix=_SPEC_TMP_PREFIX)

    def new_staging(self, name: str) -> Staging:
        """A locked staging folder in the model's folder for one upload.

        Raises:
            NotFoundError: no such model.
        """
        return Staging(self._existing_dir(name))

    def commit_version(self, name: str, staging: Staging) -> int:
        """Rename the complete staging folder to the next free version number; that number.

        The staging folder must hold the weights file, already fsynced. The
        number is claimed by the rename itself: when another writer took it
        first, the next one is tried.
        """
        folder = self._existing_dir(name)
        fsync_dir(staging.path)
        number = _next_number(folder)
        for _ in range(_CLAIM_ATTEMPTS):
            try:
                os.rename(staging.path, folder / str(number))
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                    raise
                number = max(number + 1, _next_number(folder))
                continue
            fsync_dir(folder)
            staging.committed = True
            return number
        raise ConflictError(f"model '{name}': could not claim a version number after {_CLAIM_ATTEMPTS} tries")

    def delete_version(self, name: str, version: int) -> None:
        """Remove ``version`` from the repository: rename it aside (atomic), then delete it.

        Raises:
            NotFoundError: no such model or version.
        """
        path = self.weights_path(name, version)
        folder = path.parent.parent
        doomed = folder / f"{_DELETED_PREFIX}{version}-{secrets.token_hex(8)}"
        try:
            os.rename(path.parent, doomed)
        except FileNotFoundError:
            raise NotFoundError(f"model '{name}' has no version {version}") from None
        fsync_dir(folder)
        shutil.rmtree(doomed, ignore_errors=True)

    def clean_stale(self) -> list[Path]:
        """Remove what dead writers left behind in every model folder; the paths removed.

        Staging folders whose lock is free (their writer is gone), half-deleted
        versions, and ``model.json`` temporaries older than a minute. A live
        writer's files are never touched: its lock is held.
        """
        removed: list[Path] = []
        for name in self.model_names():
            with contextlib.suppress(OSError):
                removed += _clean_model_dir(self.root / name)
        return removed

    def _existing_dir(self, name: str) -> Path:
        folder = self.model_dir(name)
        if not folder.is_dir():
            raise unknown_model_error(name, self.model_names())
        return folder


class Staging:
    """A staging folder ``<model>/.upload-<token>/`` and the flock that marks its writer alive.

    Use as a context manager: leaving it removes the folder (unless it was
    committed as a version) and the lock file.

    Args:
        model_dir: the model's folder.
    """

    def __init__(self, model_dir: Path) -> None:
        token = secrets.token_hex(8)
        self.lock_path = model_dir / f"{_STAGING_PREFIX}{token}{_LOCK_SUFFIX}"
        self.path = model_dir / f"{_STAGING_PREFIX}{token}"
        self.committed = False
        self._fd = os.open(self.lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            self.path.mkdir()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the staging folder (when not committed) and the lock file; release the lock."""
        if not self.committed:
            shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self.lock_path.unlink()
        if self._fd >= 0:
            os.close(self._fd)  # releases the flock
            self._fd = -1


def _clean_model_dir(folder: Path) -> list[Path]:
    removed = []
    now = time.time()
    for entry in list(os.scandir(folder)):
        try:
            doomed = _stale(Path(entry.path), now - entry.stat(follow_symlinks=False).st_mtime)
        except FileNotFoundError:
            continue  # removed with its lock file
        for path in doomed:
            _remove(path)
            removed.append(path)
            logger.info("removed %s, left behind by a writer that did not finish", path)
    return removed


def _stale(path: Path, age: float) -> list[Path]:
    """What to remove for this entry of a model folder: nothing, itself, or a staging folder and its lock."""
    name = path.name
    if name.startswith(_DELETED_PREFIX):
        return [path]
    if name.startswith(_STAGING_PREFIX) and name.endswith(_LOCK_SUFFIX):
        if age < _LOCK_GRACE_S or _is_locked(path):
            return []
        return [path.with_name(name.removesuffix(_LOCK_SUFFIX)), path]
    if name.startswith(_STAGING_PREFIX):
        orphan = age >= _ORPHAN_AGE_S and not path.with_name(name + _LOCK_SUFFIX).exists()
        return [path] if orphan else []
    if name.startswith(_SPEC_TMP_PREFIX) and age >= 60:
        return [path]
    return []


def _is_locked(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return True  # its owner finished meanwhile: nothing to clean
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also releases a lock we took
    return False


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _next_number(folder: Path) -> int:
    """One more than every number-named entry of the folder, versions or not."""
    numbers = [int(e.name) for e in os.scandir(folder) if _VERSION_PATTERN.fullmatch(e.name)]
    return max(numbers, default=0) + 1


def write_file_atomically(folder: Path, filename: str, data: bytes, *, tmp_prefix: str = ".") -> None:
    """Write ``data`` to ``folder / filename``: a temporary file, fsynced, renamed over it, then
    the folder fsynced; a reader sees the old file or the new one, never a torn one."""
    tmp = folder / f"{tmp_prefix}{secrets.token_hex(8)}.tmp"
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / filename)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    fsync_dir(folder)


def fsync_dir(path: Path) -> None:
    """Make a folder's entries (a rename, an unlink) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _weights_in(folder: Path) -> Path | None:
    for filename in WEIGHTS_FILES:
        path = folder / filename
        if path.is_file():
            return path
    ggufs = sorted(path for path in folder.glob(GGUF_PATTERN) if path.is_file())
    return ggufs[0] if ggufs else None


