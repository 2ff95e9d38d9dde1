"""The model repository extension: index, load and unload; a model's ``model.json`` and files; architectures.

``tritonclient`` posts an empty body to ``/v2/repository/index`` and ``{}``
or ``{"parameters": {...}}`` to load and unload; all of these are accepted.
Load, unload and ``PUT /v2/repository/models/{m}`` are write endpoints
(``MININN_API_KEY``; ``tritonclient`` sends the key through its ``headers``).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Request, Response

import models
from app.errors import ForbiddenError, UnprocessableError
from app.http.auth import require_read, require_write
from app.http.body import read_body, read_json_object
from app.http.dependencies import ManagerDep, PlaneDep
from app.http.json_limits import load_json
from app.routes._params import ModelName
from app.store.repository import (
    spec_from_document,
    validate_file_name,
    validate_model_name,
)

__all__ = ["CODE_UPLOAD_DISABLED", "router"]

CODE_UPLOAD_DISABLED = (
    "model code (.py) over HTTP is refused: the server would run it. Place the code in the model "
    "repository yourself (mininn-serve add-model makes the folder), or, if every holder of the write key "
    "may run code on this server, set MININN_ALLOW_CODE_UPLOAD=true (see SECURITY.md)"
)

router = APIRouter(tags=["repository"])

_INDEX_EXAMPLE = [
    {"name": "digits", "version": "1", "state": "READY", "reason": ""},
    {
        "name": "broken",
        "version": "1",
        "state": "UNAVAILABLE",
        "reason": "version 1: loading the state dict: ...",
    },
]


@router.post(
    "/v2/repository/index",
    summary="Repository index",
    dependencies=[Depends(require_read)],
    responses={200: {"content": {"application/json": {"example": _INDEX_EXAMPLE}}}},
    openapi_extra={
        "requestBody": {"required": False, "content": {"application/json": {"example": {"ready": True}}}}
    },
)
async def repository_index(request: Request, manager: ManagerDep) -> list[dict[str, str]]:
    """Every model with its highest version, state and the reason it is not ready.

    The body is optional; ``{"ready": true}`` lists only ready models.
    """
    body = await read_json_object(request)
    ready = body.get("ready", False)
    if not isinstance(ready, bool):
        raise UnprocessableError(f"'ready' must be true or false, got {ready!r}")
    return manager.index(ready_only=ready)


@router.post(
    "/v2/repository/models/{model_name}/load",
    summary="Load or reload a model",
    dependencies=[Depends(require_write)],
    openapi_extra={
        "requestBody": {
            "required": False,
            "content": {
                "application/json": {
                    "example": {"parameters": {"config": '{"max_batch_size": 16, "dynamic_batching": false}'}}
                }
            },
        }
    },
)
async def load_model(model_name: ModelName, request: Request, plane: PlaneDep) -> dict[str, Any]:
    """Read the model's ``model.json`` and weights again and serve them once warmed up.

    ``{"parameters": {"config": "<JSON object as a string>"}}`` (Triton's
    ``load_model(config=...)``) applies the given ``model.json`` keys over the
    file for this load; it is not written to disk. 400 for unknown keys or bad
    values, 422 with the reason when loading fails; a model that was serving
    keeps its previous versions.
    """
    body = await read_json_object(request)
    entry = await plane.load(model_name, body.get("parameters"))
    return {
        "name": entry.name,
        "state": entry.state.value,
        "versions": [str(v) for v in sorted(entry.versions)],
        "reason": entry.reason,
    }


@router.post(
    "/v2/repository/models/{model_name}/unload",
    summary="Unload a model",
    dependencies=[Depends(require_write)],
)
async def unload_model(model_name: ModelName, request: Request, plane: PlaneDep) -> dict[str, Any]:
    """Stop serving the model; its files stay. Requests then get 503 until it is loaded again."""
    await read_json_object(request)  # {"parameters": {"unload_dependents": ...}} has nothing to do here
    await plane.unload(model_name)
    return {"name": model_name, "state": "UNAVAILABLE"}


@router.get("/v2/repository/architectures", summary="Architectures", dependencies=[Depends(require_read)])
async def list_architectures() -> dict[str, Any]:
    """The registered architectures (the zoo's and pip-installed plug-ins'), for ``"architecture"``.

    Each lists its config keys with types and defaults, and its inputs and outputs
    for the default config. A model of your own code uses ``"module"`` instead.
    """
    return {"architectures": [models.get_architecture(name).describe() for name in models.available()]}


_WRITTEN: dict[int | str, dict[str, Any]] = {
    200: {"description": "replaced"},
    201: {"description": "created"},
}


@router.put(
    "/v2/repository/models/{model_name}/files/{file_name}",
    summary="Upload a file the model needs",
    dependencies=[Depends(require_write)],
    responses={
        **_WRITTEN,
        403: {"description": "code (.py) while MININN_ALLOW_CODE_UPLOAD is off"},
        422: {"description": "code that does not serve (nothing changed)"},
    },
    openapi_extra={"requestBody": {"required": True, "content": {"application/octet-stream": {}}}},
)
async def put_model_file(
    model_name: ModelName, file_name: str, request: Request, response: Response, manager: ManagerDep
) -> dict[str, Any]:
    """Create or replace a data file in the model's folder (``tokenizer.json``, ``labels.txt``, ...).

    The body is the file's bytes. Model code (``.py``) runs on the server, so it is
    refused (403) unless the operator sets ``MININN_ALLOW_CODE_UPLOAD=true``; then it
    is checked like ``mininn-serve add-model --check`` first and, if it does not
    serve, refused with 422 and nothing changed. The model reloads with the file.
    """
    validate_model_name(model_name)
    validate_file_name(file_name)
    if file_name.endswith(".py") and not manager.settings.allow_code_upload:
        raise ForbiddenError(CODE_UPLOAD_DISABLED)
    limit = manager.settings.max_upload_bytes
    data = await read_body(request, limit, "MININN_MAX_UPLOAD_BYTES")
    created, entry, error = await manager.put_file(model_name, file_name, data)
    response.status_code = 201 if created else 200
    return {
        "name": model_name,
        "file": file_name,
        "bytes": len(data),
        "created": created,
        "state": entry.state.value if entry else None,
        "reason": entry.reason if entry else "no model.json yet: PUT /v2/repository/models/{m} creates it",
        "load_error": error,
    }


_SPEC_EXAMPLE = {
    "architecture": "mlp",
    "config": {"in_features": 4, "hidden_sizes": [8], "out_features": 3},
    "max_batch_size": 16,
    "description": "a small classifier",
}


@router.put(
    "/v2/repository/models/{model_name:path}",
    summary="Create or replace a model's model.json",
    dependencies=[Depends(require_write)],
    responses={
        **_WRITTEN,
        422: {
            "description": "unknown architecture (lists 'architectures'), bad config ('accepted_keys'), or a "
            "model.json that does not load the newest version or warm up; nothing changed"
        },
    },
    openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"example": _SPEC_EXAMPLE}}}
    },
)
async def put_model(
    model_name: str, request: Request, response: Response, manager: ManagerDep
) -> dict[str, Any]:
    """Check that the new ``model.json`` serves, then write it atomically and serve the model from it.

    The check is a load: build the architecture (or the code) with its config, load the
    newest version's weights strictly and run the warm-up forward; a model without
    versions yet is built and warmed up on its initial weights. A ``model.json`` that
    fails any step is refused with 422 naming the step, and nothing changes: the file
    on disk and the served model stay as they were. 201 for a new model, 200 for a
    replaced one; the model then serves its versions under the new ``model.json`` (one
    without versions waits for ``PUT /v2/models/{m}/state_dict``).
    """
    validate_model_name(model_name)
    text = await read_body(request, 1 << 20, "the 1 MiB limit of model.json")
    document = load_json(text, "model.json")  # 400: not JSON, or nested too deep
    spec = spec_from_document(document, "model.json")
    if spec.module is not None and not manager.settings.allow_code_upload:
        uploaded = manager.repository.http_code_files(model_name)
        if uploaded:
            raise ForbiddenError(
                f"model '{model_name}' holds code that arrived over HTTP ({', '.join(sorted(uploaded))}); "
                f"{CODE_UPLOAD_DISABLED}"
            )
    pretty = (json.dumps(document, indent=2) + "\n").encode()
    created, entry = await manager.put_spec(model_name, pretty, spec)
    response.status_code = 201 if created else 200
    return {
        "name": model_name,
        "created": created,
        "model": document,
        "state": entry.state.value,
        "reason": entry.reason,
        "versions": [str(v) for v in sorted(entry.versions)],
    }
