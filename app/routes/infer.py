"""Inference: ``POST /v2/models/{m}[/versions/{v}]/infer``, JSON or binary tensors.

The endpoint is the REST adapter (:mod:`app.routes._inference`) over
:meth:`DataPlane.infer <app.runtime.dataplane.DataPlane.infer>`, with the
capture that an ``/infer`` request's ``capture`` parameter asks for.
:class:`InferenceFastPath` serves the same endpoint in front of FastAPI.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from app.errors import ServiceError, render_service_error
from app.http.auth import require_read
from app.http.dependencies import PlaneDep
from app.routes._inference import inference_openapi, inference_responses, serve_rest_inference
from app.routes._params import on_both_forms
from app.runtime.dataplane import DataPlane
from app.runtime.manager import ModelVersion
from app.v2.captures import infer_capture

__all__ = ["InferenceFastPath", "router"]

router = APIRouter(tags=["inference"], dependencies=[Depends(require_read)])

_REQUEST_EXAMPLE = {
    "id": "42",
    "inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [[0.1, 0.2, 0.3, 0.4]]}],
    "outputs": [{"name": "output"}],
}
_RESPONSE_EXAMPLE = {
    "model_name": "mlp",
    "model_version": "1",
    "id": "42",
    "outputs": [{"name": "output", "datatype": "FP32", "shape": [1, 2], "data": [0.53, -0.12]}],
}
_OPENAPI = inference_openapi(
    (
        "An Open Inference Protocol request: JSON, or JSON followed by binary tensors whose "
        "JSON length is in the Inference-Header-Content-Length header. May be gzip- or "
        "deflate-compressed (Content-Encoding)."
    ),
    _REQUEST_EXAMPLE,
)
_RESPONSES = inference_responses(
    _RESPONSE_EXAMPLE,
    e504="its timeout (parameter, microseconds, or MININN_REQUEST_TIMEOUT_MS) passed",
)


async def infer(model: ModelVersion, request: Request, plane: PlaneDep) -> Response:
    """Run the model on the request's inputs (the highest version, or the one in the path)."""
    return await serve_rest_inference(request, plane, model, infer_capture)


on_both_forms(
    router,
    "POST",
    "/infer",
    infer,
    summary="Inference",
    response_class=Response,
    openapi_extra=_OPENAPI,
    responses=_RESPONSES,
)


_INFER_PATH = re.compile(r"/v2/models/([^/]+)(?:/versions/([^/]+))?/infer")
_ROUTES: dict[bool, BaseRoute] = {  # by "names a version": the route the router would have matched
    "/versions/" in route.path: route for route in router.routes if isinstance(route, APIRoute)
}


class InferenceFastPath:
    """Serves ``POST .../infer`` in front of FastAPI: the app hands such requests to it first.

    On a batch-1 JSON request FastAPI's router (route matching over every
    route, dependency solving, its exception and exit-stack layers) cost about
    as much as parsing the request, and its outer layers (error, telemetry and
    body-limit middleware) a little more. The server's app
    (:func:`app.main.create_app`) asks :meth:`claims` of every request and
    sends the ones claimed through a short stack of the service's own
    middleware (request id and metrics, the body deadline) to this endpoint,
    which runs the same code as the routes above (:func:`require_read`,
    :meth:`DataPlane.model`, :func:`infer`) and renders errors with the same
    handler, so answers are the same either way
    (``benchmarks/serve_breakdown.py`` measures the difference).

    The routes stay in the app for the OpenAPI schema, other methods (405) and
    mounts under a ``root_path``, which this path leaves to them. It sets
    ``path_params`` and ``route`` in the scope as the router would, for the
    request log and the metrics' ``endpoint`` label.

    Args:
        plane: the data plane of the models it serves.
    """

    def __init__(self, plane: DataPlane) -> None:
        self.plane = plane

    @staticmethod
    def claims(scope: Scope) -> bool:
        """Whether ``scope`` is an inference request this path serves (it then fills in the route)."""
        if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
            return False
        match = _INFER_PATH.fullmatch(scope["path"])
        if match is None:
            return False
        name, version = match.groups()
        scope["path_params"] = {"model_name": name} if version is None else {
            "model_name": name,
            "model_version": version,
        }
        scope["route"] = _ROUTES[version is not None]
        return True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = scope["path_params"]
        request = Request(scope, receive)
        try:
            await require_read(request)
            model = await self.plane.model(params["model_name"], params.get("model_version"))
            response = await infer(model, request, self.plane)
        except ServiceError as exc:
            response = render_service_error(request, exc)
        await response(scope, receive, send)


