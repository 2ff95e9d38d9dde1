"""Model metadata, readiness, Triton-style configuration and statistics.

``GET /v2/models/{m}[/versions/{v}]``, ``.../ready``, ``.../config``,
``.../stats``, and ``GET /v2/models/stats`` for every model.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from app.errors import ServiceUnavailableError
from app.http.auth import require_read
from app.http.dependencies import PlaneDep
from app.routes._params import ModelRef, on_both_forms
from app.runtime.dataplane import PLATFORM
from app.runtime.manager import ModelVersion

__all__ = ["router"]

router = APIRouter(tags=["models"], dependencies=[Depends(require_read)])

_METADATA_EXAMPLE = {
    "name": "digits",
    "versions": ["1"],
    "platform": PLATFORM,
    "inputs": [{"name": "image", "datatype": "FP32", "shape": [-1, 1, 28, 28]}],
    "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}],
    "architecture": "lenet5",
    "state": "READY",
    "reason": "",
}


@router.get("/v2/models/stats", summary="Statistics of every model")
async def all_statistics(plane: PlaneDep) -> dict[str, Any]:
    """Triton statistics extension: ``{"model_stats": [...]}`` for every loaded version."""
    return plane.statistics()


async def model_metadata(model: ModelRef, plane: PlaneDep) -> dict[str, Any]:
    """Name, versions, platform, inputs and outputs (``-1``: any size), state and reason."""
    return plane.metadata(model.name, model.version)


async def model_ready(model: ModelRef, plane: PlaneDep) -> dict[str, Any]:
    """``{"name", "ready": true}`` (200) when the model serves; 503 with the reason; 404 when unknown.

    The 503 body is ``{"error": <reason>, "name": ..., "ready": false}``. Loads nothing: an
    older version that is loading or not loaded is not ready (a request for it loads it).
    """
    try:
        plane.check_ready(model.name, model.version)
    except ServiceUnavailableError as exc:
        exc.details.update(name=model.name, ready=False)
        raise
    return {"name": model.name, "ready": True}


async def model_config(model: ModelVersion, plane: PlaneDep) -> dict[str, Any]:
    """Triton's model configuration: inputs and outputs without the batch dimension, batching."""
    return plane.config(model)


async def model_statistics(model: ModelRef, plane: PlaneDep) -> dict[str, Any]:
    """Triton statistics extension for the model's loaded versions (or the one version named)."""
    return plane.statistics(model.name, model.version)


_METADATA_RESPONSES = {200: {"content": {"application/json": {"example": _METADATA_EXAMPLE}}}}
on_both_forms(router, "GET", "", model_metadata, summary="Model metadata", responses=_METADATA_RESPONSES)
_READY_RESPONSES = {200: {"content": {"application/json": {"example": {"name": "digits", "ready": True}}}}}
on_both_forms(router, "GET", "/ready", model_ready, summary="Model readiness", responses=_READY_RESPONSES)
on_both_forms(router, "GET", "/config", model_config, summary="Triton-style model configuration")
on_both_forms(router, "GET", "/stats", model_statistics, summary="Model statistics")
