"""Server metadata and health: ``GET /v2``, ``/v2/health/live``, ``/v2/health/ready``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Response

from app.errors import ServiceUnavailableError
from app.http.auth import require_read
from app.http.dependencies import ManagerDep
from app.version import SERVER_NAME, __version__

__all__ = ["EXTENSIONS", "router"]

EXTENSIONS = [
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


@router.get("/v2/health/live", summary="Liveness", response_class=Response)
async def live() -> Response:
    """200 with an empty body while the process answers requests."""
    return Response(status_code=200)


@router.get(
    "/v2/health/ready",
    summary="Readiness",
    response_class=Response,
    responses={503: {"description": "still loading the start-up models"}},
)
async def ready(manager: ManagerDep) -> Response:
    """200 once the start-up load pass is over; 503 before.

    A model that failed to load does not hold the server back: the other
    models serve, and ``/v2/models/{m}/ready`` or the repository index report it.
    """
    if not manager.ready:
        raise ServiceUnavailableError("the server is still loading its models")
    return Response(status_code=200)
