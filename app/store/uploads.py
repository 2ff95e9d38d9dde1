"""State-dict uploads: stream to a staging folder, check, write the next version, serve it.

``PUT /v2/models/{m}/state_dict`` hands the body to :func:`upload_state_dict`,
which runs these steps; any failure before the last one leaves the
repository and the served version as they were (the staging folder goes)::

    1. receive   the body is streamed into <model>/.upload-<token>/upload.part,
                 hashed (sha256) on the way, refused with 413 as soon as it passes
                 MININN_MAX_UPLOAD_BYTES (a Content-Length over it: before any byte)
    2. read      the format comes from the bytes (safetensors, .npz, PyTorch .pt, GGUF);
                 malformed, truncated or hostile files are 400
    3. check     a fresh instance of the model's architecture is built, and
                 ``load_state_dict(strict=...)`` checks the state dict against it:
                 missing / unexpected keys, size and dtype mismatches are 422 with
                 torch's report and the lists as JSON; then the values are copied in
                 (safetensors: tensor by tensor from the file, see
                 :mod:`app.store.checkpoints`); non-finite values are 422 unless allowed
    4. write     weights.safetensors beside it, streamed tensor by tensor, with
                 metadata (source format, sha256, size, time), fsynced; a GGUF
                 upload (``llama`` models only; its metadata must give the model's
                 config) is kept as it is, as model.gguf, for its tokenizer and chat template
    5. warm up   the instance moves to its device and dtype and runs one forward
    6. publish   the staging folder is renamed to <model>/<n> (claiming the next
                 number atomically), and the instance becomes the served version

Memory: the body never sits in memory. Checking a safetensors upload holds
the fresh instance and one tensor at a time; a ``.pt`` or ``.npz`` one is
loaded whole beside the instance (about twice the file). One upload at a time
per process is checked, so concurrent uploads cannot multiply that.

A non-strict upload (``?strict=false``) drops unexpected keys; missing keys
take their values from the newest version on disk (like ``load_state_dict(
strict=False)`` into the served model) or, where it has none, from the
architecture's initialization. The version written is always complete, so
every worker loads it strictly and serves the same weights.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from starlette.requests import ClientDisconnect

import mininn
import models
import models.gguf
from app.errors import (
    BadRequestError,
    ClientDisconnectedError,
    NotFoundError,
    PayloadTooLargeError,
    UnprocessableError,
)
from app.runtime.manager import LoadError, ModelManager, Publication
from app.runtime.versions import build_servable
from app.store.checkpoints import Checkpoint, detect, open_checkpoint, open_gguf
from app.store.repository import ModelRepository, ModelSpec, Staging, file_identity, validate_model_name
from mininn.serialization import CheckpointError, write_safetensors
from mininn.serialization import load as load_checkpoint

__all__ = [
    "UPLOAD_FILE",
    "WEIGHTS_FILE",
    "UploadOptions",
    "UploadResult",
    "check_declared_length",
    "upload_state_dict",
]

logger = logging.getLogger("app.store.uploads")

UPLOAD_FILE = "upload.part"
WEIGHTS_FILE = "weights.safetensors"
GGUF_FILE = "model.gguf"
_WRITE_BYTES = 1 << 20  # the body is written and hashed in slices of this size, off the event loop
_MAX_LISTED = 50  # keys named in a message; the JSON lists have them all


@dataclass(frozen=True)
class UploadOptions:
    """The query options of an upload.

    Attributes:
        strict: refuse missing and unexpected keys (``load_state_dict(strict=True)``).
        allow_nonfinite: accept NaN and infinite values.
        strip_prefix: a key prefix to remove where present (``module.``, ``_orig_mod.``).
        key: the entry of a training checkpoint that holds the state dict (``model_state_dict``).
    """

    strict: bool = True
    allow_nonfinite: bool = False
    strip_prefix: str = ""
    key: str = ""


@dataclass(frozen=True)
class _Body:
    path: Path
    size: int
    sha256: str


@dataclass
class _Checked:
    servable: Any
    source_format: str
    missing_keys: list[str]
    unexpected_keys: list[str]
    stripped_keys: int = 0
    filled_from_version: int | None = None
    initialized_keys: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class UploadResult:
    """What an upload did; :meth:`as_dict` is the response body."""

    name: str
    publication: Publication
    body: _Body
    checked: _Checked
    options: UploadOptions
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        """The JSON response of ``PUT /v2/models/{m}/state_dict``."""
        checked = self.checked
        document: dict[str, Any] = {
            "model_name": self.name,
            "model_version": str(self.publication.version),
            "sha256": self.body.sha256,
            "bytes": self.body.size,
            "source_format": checked.source_format,
            "strict": self.options.strict,
            "missing_keys": checked.missing_keys,
            "unexpected_keys": checked.unexpected_keys,
            "served": self.publication.served,
            "state": self.publication.state.value,
            "reason": self.publication.reason,
            "seconds": round(self.seconds, 4),
        }
        if self.options.strip_prefix:
            document["strip_prefix"] = self.options.strip_prefix
            document["stripped_keys"] = checked.stripped_keys
        if checked.missing_keys:
            version = checked.filled_from_version
            document["filled_from_version"] = None if version is None else str(version)
            document["initialized_keys"] = checked.initialized_keys
        return document


def check_declared_length(content_length: str | None, limit: int) -> None:
    """Refuse a body whose ``Content-Length`` is over ``limit`` before reading any of it.

    Raises:
        PayloadTooLargeError: it is (413).
        BadRequestError: the header is not a number (400).
    """
    if content_length is None:
        return
    text = content_length.strip()
    if not (text.isascii() and text.isdigit()):  # str.isdigit() alone accepts '²'; int() does not
        raise BadRequestError(f"invalid Content-Length {content_length!r}")
    if int(content_length) > limit:
        raise PayloadTooLargeError(
            f"upload of {int(content_length)} bytes is over the {limit}-byte limit (MININN_MAX_UPLOAD_BYTES)"
        )


async def upload_state_dict(
    manager: ModelManager,
    name: str,
    chunks: AsyncIterator[bytes],
    *,
    content_length: str | None = None,
    options: UploadOptions = UploadOptions(),
) -> UploadResult:
    """Receive, check, write and serve an uploaded state dict as the model's next version.

    Raises:
        BadRequestError: bad name, empty body, or bytes that are no readable checkpoint (400).
        NotFoundError: no such model (404).
        PayloadTooLargeError: over ``MININN_MAX_UPLOAD_BYTES`` (413).
        UnprocessableError: it does not fit the architecture, or has non-finite values (422).
    """
    started = time.perf_counter()
    repository = manager.repository
    validate_model_name(name)
    spec = _spec_of(repository, name)
    limit = manager.settings.max_upload_bytes
    check_declared_length(content_length, limit)
    staging = await asyncio.to_thread(repository.new_staging, name)
    try:
        body = await _receive(chunks, staging.path / UPLOAD_FILE, limit)
        async with manager.upload_slot:
            checked = await asyncio.to_thread(_check_and_write, manager, name, spec, body, options)
        seconds = time.perf_counter() - started
        publication = await manager.publish(
            name, spec, checked.servable, lambda: _commit(repository, name, staging), seconds
        )
    finally:
        await asyncio.to_thread(staging.close)
    logger.info(
        "model %s: uploaded %d bytes (%s, sha256 %s) as version %d in %.0f ms",
        name,
        body.size,
        checked.source_format,
        body.sha256[:12],
        publication.version,
        (time.perf_counter() - started) * 1e3,
    )
    return UploadResult(name, publication, body, checked, options, time.perf_counter() - started)


def _spec_of(repository: ModelRepository, name: str) -> ModelSpec:
    try:
        return repository.read_spec(name)
    except NotFoundError as exc:
        raise NotFoundError(
            f"{exc.message}; create it first with PUT /v2/repository/models/{name} (its model.json)"
        ) from None


# -- 1. receive ---------------------------------------------------------------


async def _receive(chunks: AsyncIterator[bytes], path: Path, limit: int) -> _Body:
    hasher = hashlib.sha256()
    size = 0
    with open(path, "xb") as fh:
        try:
            size = await _copy(chunks, fh, hasher, limit)
        except ClientDisconnect:
            raise ClientDisconnectedError(
                f"the client disconnected after sending {fh.tell()} bytes of the upload; nothing was stored"
            ) from None
    if size == 0:
        raise BadRequestError(
            "the body is empty: send the bytes of a safetensors, .npz, PyTorch .pt or GGUF file"
        )
    return _Body(path, size, hasher.hexdigest())


async def _copy(chunks: AsyncIterator[bytes], fh: Any, hasher: Any, limit: int) -> int:
    """Write and hash the body in slices of ``_WRITE_BYTES`` on a worker thread; its size."""
    size, pending, pending_bytes = 0, [], 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise PayloadTooLargeError(f"upload is over the {limit}-byte limit (MININN_MAX_UPLOAD_BYTES)")
        pending.append(chunk)
        pending_bytes += len(chunk)
        if pending_bytes >= _WRITE_BYTES:
            await asyncio.to_thread(_write_and_hash, fh, hasher, pending)
            pending, pending_bytes = [], 0
    if pending:
        await asyncio.to_thread(_write_and_hash, fh, hasher, pending)
    return size


def _write_and_hash(fh: Any, hasher: Any, chunks: list[bytes]) -> None:
    data = b"".join(chunks)
    hasher.update(data)
    fh.write(data)


# -- 2.-5. read, check, write, warm up (on a worker thread) ---------------------


def _check_and_write(
    manager: ModelManager, name: str, spec: ModelSpec, body: _Body, options: UploadOptions
) -> _Checked:
    source_format = detect(body.path)
    if source_format == "gguf":
        _check_gguf_upload(spec, options)
    servable = _build(manager.repository, name, spec)  # first: its initialization's scratch is gone by
    gguf_reader = None
    if source_format == "gguf":
        checkpoint, gguf_reader = open_gguf(body.path, servable.config)
    else:
        checkpoint = open_checkpoint(body.path, source_format, options.key)  # when a whole .pt / .npz loads
    try:
        checkpoint, stripped = checkpoint.renamed(options.strip_prefix)
        missing, unexpected = _load_into(servable.module, checkpoint, options.strict, spec)
    finally:
        checkpoint.close()
    del checkpoint  # the module holds the values now
    checked = _Checked(servable, source_format, missing, unexpected, stripped)
    if checked.missing_keys:
        _fill_missing(manager.repository, name, servable.module, checked)
    if not options.allow_nonfinite:
        _check_finite(servable.module)
    if gguf_reader is not None:  # kept as uploaded: its metadata holds the tokenizer and chat template
        _keep_gguf(body.path)
        models.gguf.attach_tokenizer(servable, gguf_reader)
    else:
        metadata = _metadata(spec, body, checked, options)
        _write_weights(body.path.parent / WEIGHTS_FILE, servable.module.state_dict(), metadata)
    try:
        manager.prepare(name, spec, servable)
    except LoadError as exc:
        raise UnprocessableError(f"the uploaded weights do not serve: {exc}") from None
    return checked


def _check_gguf_upload(spec: ModelSpec, options: UploadOptions) -> None:
    """A GGUF upload is stored as it is: only for ``llama`` models, without key rewriting options."""
    if spec.module is not None or spec.architecture != "llama":
        raise UnprocessableError(
            f"a GGUF file holds a llama model; this model is built from {spec.built_from}: "
            "upload a safetensors, .npz or .pt state dict instead"
        )
    flags = (("strict=false", not options.strict), ("strip_prefix", options.strip_prefix),
             ("key", options.key))
    used = [flag for flag, on in flags if on]
    if used:
        raise BadRequestError(
            f"?{', ?'.join(used)} do(es) not apply to a GGUF upload, which is stored as it is; leave them out"
        )


def _keep_gguf(path: Path) -> None:
    """The uploaded GGUF file becomes the version's weights file (fsynced, renamed in the staging folder)."""
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())
    os.rename(path, path.parent / GGUF_FILE)


def _build(repository: ModelRepository, name: str, spec: ModelSpec) -> Any:
    try:
        return build_servable(spec, repository.model_dir(name))
    except models.ResourceError as exc:
        raise UnprocessableError(
            f"model '{name}' cannot be built: {exc}; upload it with "
            f"PUT /v2/repository/models/{name}/files/{exc.filename}"
        ) from None
    except models.ArchitectureError as exc:
        raise UnprocessableError(
            f"model '{name}' cannot be built from its model.json: {exc}; fix it with "
            f"PUT /v2/repository/models/{name}"
        ) from None


def _load_into(
    module: Any, checkpoint: Checkpoint, strict: bool, spec: ModelSpec
) -> tuple[list[str], list[str]]:
    """``module.load_state_dict(checkpoint, strict)``; 422 with the key report when it does not fit."""
    expected = module.state_dict()
    present = set(checkpoint.keys())
    described = {key: checkpoint.describe(key) for key in expected if key in present}
    details = {
        "missing_keys": [key for key in expected if key not in present],
        "unexpected_keys": [key for key in checkpoint.keys() if key not in expected],
        "size_mismatches": [m for k, d in described.items() if (m := _size_mismatch(k, d, expected[k]))],
        "dtype_mismatches": [m for k, d in described.items() if (m := _dtype_mismatch(k, d, expected[k]))],
    }
    where = f"the uploaded state dict does not fit {spec.built_from}"
    if details["dtype_mismatches"]:
        lines = [
            f"dtype mismatch for {d['key']}: copying a {d['checkpoint_dtype']} tensor from the checkpoint "
            f"into a {d['model_dtype']} tensor of the model"
            for d in details["dtype_mismatches"][:_MAX_LISTED]
        ]
        raise UnprocessableError(f"{where}: " + "\n\t".join(lines), details=details)
    try:
        result = module.load_state_dict(checkpoint.for_check(expected), strict=strict)
    except (RuntimeError, TypeError) as exc:
        raise UnprocessableError(f"{where}: {exc}", details=details) from None
    for key, tensor in module.state_dict().items():
        if key in present:
            checkpoint.copy_into(key, tensor)
    return list(result.missing_keys), list(result.unexpected_keys)


def _size_mismatch(key: str, described: Any, target: Any) -> dict[str, Any] | None:
    if described is None:
        return None  # not a tensor: load_state_dict reports it
    shape, wanted = described[0], tuple(target.shape)
    if shape == wanted or (wanted == () and shape == (1,)):
        return None
    return {"key": key, "checkpoint_shape": list(shape), "model_shape": list(wanted)}


def _dtype_mismatch(key: str, described: Any, target: Any) -> dict[str, Any] | None:
    if described is None:
        return None
    have, want = described[1], target.dtype.np
    if _kind(have) == _kind(want):
        return None
    return {"key": key, "checkpoint_dtype": have.name, "model_dtype": want.name}


def _kind(dtype: np.dtype) -> str:
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return "floating-point"
    return {"b": "bool", "i": "integer", "u": "integer", "c": "complex"}.get(dtype.kind, dtype.name)


def _fill_missing(repository: ModelRepository, name: str, module: Any, checked: _Checked) -> None:
    """Missing keys of a non-strict upload: from the newest version on disk, else initialized."""
    checked.initialized_keys = list(checked.missing_keys)
    versions = repository.versions(name)
    if not versions:
        return
    newest = versions[-1]
    try:
        base = load_checkpoint(repository.weights_path(name, newest))
        subset = {key: base[key] for key in checked.missing_keys if key in base}
        del base
        module.load_state_dict(subset, strict=False)
    except (CheckpointError, RuntimeError, OSError, NotFoundError) as exc:
        logger.warning(
            "model %s: missing keys keep their initialization (version %d does not fit: %s)",
            name,
            newest,
            exc,
        )
        return
    checked.filled_from_version = newest
    checked.initialized_keys = [key for key in checked.missing_keys if key not in subset]


def _check_finite(module: Any) -> None:
    bad = []
    for key, tensor in module.state_dict().items():
        if _kind(tensor.dtype.np) != "floating-point":
            continue
        finite = mininn.isfinite(tensor)
        if not finite.all():
            bad.append({"key": key, "count": int(tensor.numel() - finite.count_nonzero())})
    if bad:
        listed = ", ".join(f"{b['key']} ({b['count']})" for b in bad[:_MAX_LISTED])
        raise UnprocessableError(
            f"the uploaded state dict has NaN or infinite values in {len(bad)} tensor(s): {listed}; "
            "fix the weights, or add ?allow_nonfinite=true to upload them anyway",
            details={"nonfinite": bad},
        )


def _metadata(spec: ModelSpec, body: _Body, checked: _Checked, options: UploadOptions) -> dict[str, str]:
    metadata = {
        **_built_from_metadata(spec),
        "mininn.source_format": checked.source_format,
        "mininn.source_sha256": body.sha256,
        "mininn.source_bytes": str(body.size),
        "mininn.uploaded_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "mininn.strict": "true" if options.strict else "false",
    }
    if options.strip_prefix:
        metadata["mininn.stripped_prefix"] = options.strip_prefix
    if checked.filled_from_version is not None:
        metadata["mininn.filled_from_version"] = str(checked.filled_from_version)
    return metadata


def _built_from_metadata(spec: ModelSpec) -> dict[str, str]:
    if spec.module is None:
        config = json.dumps(spec.config, sort_keys=True)
        return {"mininn.architecture": str(spec.architecture), "mininn.config": config}
    return {"mininn.module": spec.module, "mininn.init": json.dumps(spec.init, sort_keys=True)}


# -- 6. publish ------------------------------------------------------------------


def _commit(repository: ModelRepository, name: str, staging: Staging) -> tuple[int, Any]:
    (staging.path / UPLOAD_FILE).unlink(missing_ok=True)  # a GGUF upload was renamed to GGUF_FILE
    number = repository.commit_version(name, staging)
    return number, file_identity(repository.weights_path(name, number))


def _write_weights(path: Path, tensors: Mapping[str, Any], metadata: Mapping[str, str]) -> None:
    """The new version's weights, streamed tensor by tensor into a file of its own, fsynced."""
    with open(path, "xb") as fh:
        write_safetensors(fh, tensors, metadata)
        fh.flush()
        os.fsync(fh.fileno())
