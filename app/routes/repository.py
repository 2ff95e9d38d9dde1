"""The model repository extension: index, load and unload.

``tritonclient`` posts an empty body to ``/v2/repository/index`` and ``{}``
or ``{"parameters": {...}}`` to load and unload; all of these are accepted.
Load and unload are write endpoints (``MININN_API_KEY``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from app.auth import require_read, require_write
from app.dependencies import ManagerDep
from app.errors import UnprocessableError
from app.repository import ModelSpec, parse_spec
from app.routes._body import read_json_object
from app.routes._params import ModelName

__all__ = ["router"]

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
                    "example": {
                        "parameters": {"config": '{"architecture": "mlp", "config": {"in_features": 4}}'}
                    }
                }
            },
        }
    },
)
async def load_model(model_name: ModelName, request: Request, manager: ManagerDep) -> dict[str, Any]:
    """Read the model's ``model.json`` and weights again and serve them once warmed up.

    ``{"parameters": {"config": "<model.json as a string>"}}`` overrides
    ``model.json`` for this load (it is not saved). 422 with the reason when
    loading fails; a model that was serving keeps its previous versions.
    """
    body = await read_json_object(request)
    entry = await manager.load(model_name, _config_override(model_name, body))
    return {
        "name": entry.name,
        "state": entry.state.value,
        "versions": [str(v) for v in sorted(entry.versions)],
    }


@router.post(
    "/v2/repository/models/{model_name}/unload",
    summary="Unload a model",
    dependencies=[Depends(require_write)],
)
async def unload_model(model_name: ModelName, request: Request, manager: ManagerDep) -> dict[str, Any]:
    """Stop serving the model; its files stay. Requests then get 503 until it is loaded again."""
    await read_json_object(request)  # {"parameters": {"unload_dependents": ...}} has nothing to do here
    await manager.unload(model_name)
    return {"name": model_name, "state": "UNAVAILABLE"}


def _config_override(name: str, body: dict[str, Any]) -> ModelSpec | None:
    parameters = body.get("parameters")
    if parameters is None:
        return None
    if not isinstance(parameters, dict):
        raise UnprocessableError("'parameters' must be a JSON object")
    files = sorted(key for key in parameters if key.startswith("file:"))
    if files:
        raise UnprocessableError(
            f"file overrides ({', '.join(files)}) are not supported; put weights in the repository "
            f"under {name}/<version>/weights.safetensors"
        )
    config = parameters.get("config")
    if config is None:
        return None
    if not isinstance(config, str):
        raise UnprocessableError("load parameter 'config' must be a string holding model.json")
    return parse_spec(config, "load parameter 'config'")
