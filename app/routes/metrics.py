"""``GET /metrics``: Prometheus text exposition of this process's metrics."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from app.http.auth import require_read
from app.http.dependencies import ServiceDep
from app.runtime.metrics import CONTENT_TYPE_LATEST

__all__ = ["router"]

router = APIRouter(tags=["metrics"])


@router.get(
    "/metrics", summary="Prometheus metrics", response_class=Response, dependencies=[Depends(require_read)]
)
async def metrics(service: ServiceDep) -> Response:
    """Requests and failures by model and endpoint, latency histograms, requests in flight,
    forward-pass time, model load time and failures, model readiness."""
    return Response(service.metrics.render(), media_type=CONTENT_TYPE_LATEST)
