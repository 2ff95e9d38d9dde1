"""Steering vectors of a language model over HTTP.

- ``GET /v2/models/{m}/steering``: the stored vectors (name, modules, widths);
- ``PUT /v2/models/{m}/steering/{name}`` (write key): store a safetensors, ``.npz`` or GGUF
  control vector file (checked against the model first; a bad one changes nothing);
- ``GET /v2/models/{m}/steering/{name}``: the vector as safetensors;
- ``DELETE /v2/models/{m}/steering/{name}`` (write key);
- ``POST /v2/models/{m}/steering/{name}/compute`` (write key): compute one from contrasting
  prompts, ``{"positive": [...], "negative": [...], "modules": [...], "chat": true}``.

Requests apply a stored vector with ``"steering": [{"name": ..., "scale": ...}]``
(:mod:`app.v2.generation_fields`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import APIRouter, Depends, Request, Response

from app.errors import BadRequestError, ErrorBody, PayloadTooLargeError
from app.http.auth import require_read, require_write
from app.http.dependencies import PlaneDep, SettingsDep
from app.http.json_limits import parse_json
from app.store.steering import validate_vector_name

__all__ = ["router"]

router = APIRouter(tags=["steering"])

_PATH = "/v2/models/{model_name}/steering/{vector_name}"
_UPLOAD_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "safetensors or .npz of module name -> 1-D direction, or a GGUF control vector "
        "(direction.N tensors, decoder layer N).",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
}


def _errors(**codes: str) -> dict[int | str, dict[str, Any]]:
    described = {404: "no such model, or no such vector", **{int(k[1:]): v for k, v in codes.items()}}
    return {code: {"model": ErrorBody, "description": text} for code, text in described.items()}


@router.get("/v2/models/{model_name}/steering", summary="List steering vectors",
            dependencies=[Depends(require_read)], responses=_errors())
async def list_vectors(model_name: str, plane: PlaneDep) -> dict[str, Any]:
    """The model's stored steering vectors."""
    return await asyncio.to_thread(plane.steering.list, model_name)


@router.put(_PATH, summary="Store a steering vector", status_code=201,
            dependencies=[Depends(require_write)], openapi_extra=_UPLOAD_OPENAPI,
            responses=_errors(e413="body over MININN_MAX_UPLOAD_BYTES", e503="the model is not ready"))
async def put_vector(model_name: str, vector_name: str, request: Request, plane: PlaneDep,
                     settings: SettingsDep) -> dict[str, Any]:
    """Check the directions against the model (modules, widths) and store them under ``vector_name``."""
    validate_vector_name(vector_name)
    data = await _body(request, settings.max_upload_bytes)
    return await plane.steering.upload(model_name, vector_name, data)


@router.get(_PATH, summary="Download a steering vector (safetensors)", dependencies=[Depends(require_read)],
            responses=_errors())
async def get_vector(model_name: str, vector_name: str, plane: PlaneDep) -> Response:
    """The stored directions as a safetensors file."""
    data = await asyncio.to_thread(plane.steering.store.file_bytes, model_name, vector_name)
    headers = {"Content-Disposition": f'attachment; filename="{vector_name}.safetensors"'}
    return Response(data, media_type="application/octet-stream", headers=headers)


@router.delete(_PATH, summary="Delete a steering vector", dependencies=[Depends(require_write)],
               responses=_errors())
async def delete_vector(model_name: str, vector_name: str, plane: PlaneDep) -> dict[str, Any]:
    """Remove the vector; requests already running keep the copy they read."""
    await asyncio.to_thread(plane.steering.store.delete, model_name, vector_name)
    return {"model": model_name, "deleted": vector_name}


@router.post(_PATH + "/compute", summary="Compute a steering vector from contrasting prompts",
             status_code=201, dependencies=[Depends(require_write)],
             responses=_errors(e503="the model is not ready"))
async def compute_vector(
    model_name: str, vector_name: str, request: Request, plane: PlaneDep
) -> dict[str, Any]:
    """Per module, the mean output at the last prompt token over ``positive`` minus over ``negative``."""
    validate_vector_name(vector_name)
    try:
        body = parse_json(await request.body(), "the body")
    except json.JSONDecodeError as exc:
        raise BadRequestError(f"the body is not JSON: {exc}") from None
    return await plane.steering.compute(model_name, vector_name, body)


async def _body(request: Request, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLargeError(
                f"the steering vector file is over {limit} bytes (MININN_MAX_UPLOAD_BYTES)"
            )
        chunks.append(chunk)
    return b"".join(chunks)
