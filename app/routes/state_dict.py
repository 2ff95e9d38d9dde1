"""State dicts over HTTP: upload a new version, download a version, delete a version.

``PUT /v2/models/{m}/state_dict`` takes the raw bytes of a safetensors, ``.npz``
or PyTorch ``.pt`` file (see :mod:`app.store.uploads`); ``GET .../state_dict``
streams a version back in the format asked for; ``DELETE
/v2/models/{m}/versions/{v}`` removes one. Uploads and deletions are write
endpoints (``MININN_API_KEY``).

The model name is matched as a path, so a name with a slash reaches the name
check and gets 400, like ``..``, NUL or an over-long name, before any path is
built from it.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse

import models.gguf
from app.errors import NotFoundError
from app.http.auth import require_read, require_write
from app.http.dependencies import ManagerDep
from app.runtime.manager import ModelManager
from app.store.repository import parse_version, validate_model_name
from app.store.uploads import UploadOptions, upload_state_dict
from mininn.serialization import detect_format
from mininn.serialization import load as load_checkpoint
from mininn.serialization import save as save_checkpoint

__all__ = ["router"]

router = APIRouter(tags=["state dicts"])

DownloadFormat = Literal["safetensors", "pt", "npz"]
_SUFFIXES = {"safetensors": ".safetensors", "pt": ".pt", "npz": ".npz"}
_CHUNK = 1 << 20

_UPLOAD_EXAMPLE = {
    "model_name": "digits",
    "model_version": "2",
    "sha256": "9f2b...e1",
    "bytes": 248_344,
    "source_format": "pt",
    "strict": True,
    "missing_keys": [],
    "unexpected_keys": [],
    "served": True,
    "state": "READY",
    "reason": "",
    "seconds": 0.21,
}
_UPLOAD_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "The bytes of a safetensors, .npz or PyTorch .pt file (format read from the bytes).",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}
_UPLOAD_RESPONSES: dict[int | str, dict[str, Any]] = {
    201: {"content": {"application/json": {"example": _UPLOAD_EXAMPLE}}},
    400: {"description": "bad name, empty body, or not a readable checkpoint (truncated, hostile pickle)"},
    401: {"description": "no bearer key"},
    403: {"description": "wrong key, or no MININN_API_KEY configured"},
    404: {"description": "unknown model (create its model.json first)"},
    413: {"description": "over MININN_MAX_UPLOAD_BYTES"},
    422: {
        "description": "does not fit the architecture (missing_keys, unexpected_keys, size_mismatches, "
        "dtype_mismatches in the body) or has non-finite values",
    },
}

Strict = Annotated[bool, Query(description="Refuse missing and unexpected keys, as load_state_dict does.")]
AllowNonfinite = Annotated[bool, Query(description="Accept NaN and infinite values.")]
StripPrefix = Annotated[
    str,
    Query(max_length=128, description="Remove this key prefix where present, e.g. module. or _orig_mod."),
]
CheckpointKey = Annotated[
    str,
    Query(max_length=128, description="The entry of a training checkpoint that holds the state dict, "
          "e.g. model_state_dict."),
]
Format = Annotated[DownloadFormat, Query(description="File format of the download.")]


@router.put(
    "/v2/models/{model_name:path}/state_dict",
    summary="Upload a state dict as the next version",
    status_code=201,
    dependencies=[Depends(require_write)],
    openapi_extra=_UPLOAD_OPENAPI,
    responses=_UPLOAD_RESPONSES,
)
async def upload(
    model_name: str,
    request: Request,
    response: Response,
    manager: ManagerDep,
    strict: Strict = True,
    allow_nonfinite: AllowNonfinite = False,
    strip_prefix: StripPrefix = "",
    key: CheckpointKey = "",
) -> dict[str, Any]:
    """Check the uploaded weights against the model's architecture, store them as a new version, serve it.

    Requests that arrive after this response use the new version; requests
    already running finish on the one they started with.
    """
    options = UploadOptions(
        strict=strict, allow_nonfinite=allow_nonfinite, strip_prefix=strip_prefix, key=key
    )
    result = await upload_state_dict(
        manager,
        model_name,
        request.stream(),
        content_length=request.headers.get("content-length"),
        options=options,
    )
    response.headers["Location"] = f"/v2/models/{model_name}/versions/{result.publication.version}"
    return result.as_dict()


@router.get(
    "/v2/models/{model_name:path}/versions/{model_version}/state_dict",
    summary="Download a version's state dict",
    dependencies=[Depends(require_read)],
    response_class=StreamingResponse,
)
async def download_version(
    model_name: str, model_version: str, manager: ManagerDep, format: Format = "safetensors"
) -> StreamingResponse:
    """The version's weights as a file (``attachment``), converted to ``format`` if needed."""
    return await _download(manager, model_name, parse_version(model_version), format)


@router.get(
    "/v2/models/{model_name:path}/state_dict",
    summary="Download the newest version's state dict",
    dependencies=[Depends(require_read)],
    response_class=StreamingResponse,
)
async def download(model_name: str, manager: ManagerDep, format: Format = "safetensors") -> StreamingResponse:
    """The newest version's weights as a file, converted to ``format`` if needed."""
    return await _download(manager, model_name, None, format)


@router.delete(
    "/v2/models/{model_name:path}/versions/{model_version}",
    summary="Delete a version",
    dependencies=[Depends(require_write)],
)
async def delete_version(model_name: str, model_version: str, manager: ManagerDep) -> dict[str, Any]:
    """Remove the version from the repository and stop serving it.

    When it was the newest, the next newest serves requests that arrive after
    this response; requests already running finish on the deleted one.
    """
    validate_model_name(model_name)
    version = parse_version(model_version)
    assert version is not None  # the path segment is never empty
    entry = await manager.remove_version(model_name, version)
    return {
        "name": model_name,
        "deleted_version": str(version),
        "versions": [str(v) for v in manager.disk_versions(model_name)],
        "state": entry.state.value,
        "reason": entry.reason,
    }


async def _download(
    manager: ModelManager, name: str, version: int | None, fmt: DownloadFormat
) -> StreamingResponse:
    validate_model_name(name)
    if version is None:
        versions = manager.repository.versions(name)
        if not versions:
            raise NotFoundError(f"model '{name}' has no versions to download")
        version = versions[-1]
    path = manager.repository.weights_path(name, version)
    fh = await asyncio.to_thread(_open_as, path, fmt)
    size = os.fstat(fh.fileno()).st_size
    filename = f"{name}-v{version}{_SUFFIXES[fmt]}"
    headers = {
        "Content-Disposition": f'attachment; filename="{filename}"',
        "Content-Length": str(size),
        "X-Model-Version": str(version),
    }
    return StreamingResponse(_chunks(fh), media_type="application/octet-stream", headers=headers)


def _open_as(path: os.PathLike[str], fmt: DownloadFormat) -> BinaryIO:
    """An open file with the weights in ``fmt``: the stored file itself, or a converted temporary one.

    Opening first means a version deleted meanwhile still streams whole.
    """
    try:
        fh: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by _chunks
    except FileNotFoundError:
        raise NotFoundError(f"{path} was deleted meanwhile") from None
    if models.gguf.is_gguf(Path(path)):  # a llama version kept as GGUF: its dequantized state dict
        with fh:
            state = dict(models.gguf.read_gguf(Path(path)).tensors)
        return _converted(state, fmt)
    if detect_format(fh) == fmt:
        fh.seek(0)
        return fh
    with fh:
        fh.seek(0)
        state = load_checkpoint(fh)
    return _converted(state, fmt)


def _converted(state: Any, fmt: DownloadFormat) -> BinaryIO:
    converted: BinaryIO = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _chunks
    save_checkpoint(state, converted, format=fmt)
    converted.seek(0)
    return converted


def _chunks(fh: BinaryIO) -> Iterator[bytes]:
    with fh:
        while chunk := fh.read(_CHUNK):
            yield chunk
