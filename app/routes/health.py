"""Server metadata and health: ``GET /v2``, ``/v2/health/live``, ``/v2/health/ready``.

The health bodies are the Open Inference Protocol's: ``{"live": true}`` and
``{"ready": true}`` (KServe's ``InferenceRESTClient`` reads them); readiness
keeps its status codes, 200 or 503.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from app.errors import ServiceUnavailableError
from app.http.auth import require_read
from app.http.dependencies import ManagerDep
from app.version import SERVER_NAME, __version__

__all__ = ["EXTENSIONS", "router"]

EXTENSIONS = [
    "classification",
    "binary_tensor_data",
    "model_repository",
    "model_configuration",
    "statistics",
    "parameters",
]

router = APIRouter(tags=["health"])


@router.get(
    "/v2",
    summary="Server metadata",
    dependencies=[Depends(require_read)],
    responses={
        200: {
            "content": {
                "application/json": {
                    "example": {"name": SERVER_NAME, "version": __version__, "extensions": EXTENSIONS}
                }
            }
        }
    },
)
async def server_metadata() -> dict[str, Any]:
    """Name, version and the protocol extensions this server implements."""
    return {"name": SERVER_NAME, "version": __version__, "extensions": EXTENSIONS}


@router.get(
    "/v2/health/live",
    summary="Liveness",
    responses={200: {"content": {"application/json": {"example": {"live": True}}}}},
)
async def live() -> dict[str, bool]:
    """``{"live": true}`` (200) while the process answers requests."""
    return {"live": True}


@router.get(
    "/v2/health/ready",
    summary="Readiness",
    responses={
        200: {"content": {"application/json": {"example": {"ready": True}}}},
        503: {"description": 'still loading the start-up models: {"ready": false, "error": ...}'},
    },
)
async def ready(manager: ManagerDep) -> dict[str, bool]:
    """``{"ready": true}`` (200) once the start-up load pass is over; 503 with ``"ready": false`` before.

    A model that failed to load does not hold the server back: the other
    models serve, and ``/v2/models/{m}/ready`` or the repository index report it.
    """
    if not manager.ready:
        error = ServiceUnavailableError("the server is still loading its models")
        error.details["ready"] = False
        raise error
    return {"ready": True}
