"""Inference: ``POST /v2/models/{m}[/versions/{v}]/infer``, JSON or binary tensors.

The body is read raw (``tritonclient`` sends no ``Content-Type`` and a binary
tail after the JSON), decompressed per ``Content-Encoding``, parsed against
the model's inputs, run by the model's :class:`~app.runner.ModelRunner`, and
encoded per the requested outputs; the response is compressed when the client
sends ``Accept-Encoding: gzip`` or ``deflate``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from app.activations import encode_capture_response, infer_capture
from app.auth import require_read
from app.batching import BatchingPolicy, cancel_on_disconnect
from app.dependencies import ServiceDep
from app.errors import ServiceError, render_service_error
from app.log import request_id_var
from app.model_manager import ModelVersion
from app.protocol import (
    choose_encoding,
    compress,
    decompress,
    encode_inference_response,
    parse_inference_request,
)
from app.protocol.compression import MIN_COMPRESS_BYTES
from app.repository import parse_version
from app.routes._body import read_body
from app.routes._params import ModelName, ModelVersionText
from app.service import Service

if TYPE_CHECKING:
    from app.protocol.request import InferenceRequest
    from mininn.nn import ActivationCapture

__all__ = ["InferenceFastPath", "router"]

logger = logging.getLogger("app.infer")

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
_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "description": (
            "An Open Inference Protocol request: JSON, or JSON followed by binary tensors whose "
            "JSON length is in the Inference-Header-Content-Length header. May be gzip- or "
            "deflate-compressed (Content-Encoding)."
        ),
        "content": {
            "application/json": {"example": _REQUEST_EXAMPLE},
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        },
    },
}
_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/json": {"example": _RESPONSE_EXAMPLE}}},
    400: {"description": "malformed body, header or binary framing"},
    404: {"description": "unknown model or version"},
    413: {"description": "body over MININN_MAX_REQUEST_BYTES"},
    422: {"description": "inputs or outputs do not fit the model (names, datatypes, shapes)"},
    503: {"description": "model not ready, or its queue is full (Retry-After)"},
    504: {"description": "its timeout (parameter, microseconds, or MININN_REQUEST_TIMEOUT_MS) passed"},
}


@router.post(
    "/v2/models/{model_name}/infer",
    summary="Inference",
    response_class=Response,
    openapi_extra=_OPENAPI,
    responses=_RESPONSES,
)
async def infer(model_name: ModelName, request: Request, service: ServiceDep) -> Response:
    """Run the model's highest version on the request's inputs."""
    return await _infer(request, service, service.manager.version(model_name))


@router.post(
    "/v2/models/{model_name}/versions/{model_version}/infer",
    summary="Inference with a given version",
    response_class=Response,
    openapi_extra=_OPENAPI,
    responses=_RESPONSES,
)
async def infer_version(
    model_name: ModelName, model_version: ModelVersionText, request: Request, service: ServiceDep
) -> Response:
    """Run one version of the model on the request's inputs."""
    return await _infer(request, service, service.manager.version(model_name, parse_version(model_version)))


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
    ``manager.version``, :func:`_infer`) and renders errors with the same
    handler, so answers are the same either way
    (``benchmarks/serve_breakdown.py`` measures the difference).

    The routes stay in the app for the OpenAPI schema, other methods (405) and
    mounts under a ``root_path``, which this path leaves to them. It sets
    ``path_params`` and ``route`` in the scope as the router would, for the
    request log and the metrics' ``endpoint`` label.

    Args:
        service: the service whose models it serves.
    """

    def __init__(self, service: Service) -> None:
        self.service = service

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
        version = params.get("model_version")
        request = Request(scope, receive)
        try:
            await require_read(request)
            model = self.service.manager.version(
                params["model_name"], None if version is None else parse_version(version)
            )
            response = await _infer(request, self.service, model)
        except ServiceError as exc:
            response = render_service_error(request, exc)
        await response(scope, receive, send)


async def _infer(request: Request, service: Service, model: ModelVersion) -> Response:
    max_elements = service.settings.max_activation_elements
    return await serve_inference(
        request,
        service,
        model,
        lambda parsed: infer_capture(parsed.parameters, model.module, max_elements=max_elements),
    )


async def serve_inference(
    request: Request,
    service: Service,
    model: ModelVersion,
    capture_for: Callable[[InferenceRequest], ActivationCapture | None],
) -> Response:
    """Parse, run and encode one inference request; shared by ``/infer`` and ``/activations``.

    ``capture_for`` reads the capture the parsed request asks for (None: plain inference).
    """
    started = time.perf_counter_ns()
    settings = service.settings
    ok, batch_size, input_ns, output_ns = False, 1, 0, 0
    try:
        body = await read_body(request, settings.max_request_bytes)
        body = decompress(body, request.headers.get("content-encoding"), settings.max_request_bytes)
        parsed = parse_inference_request(
            body,
            request.headers.get("inference-header-content-length"),
            model=model.name,
            inputs=model.inputs,
            outputs=model.outputs,
            max_batch_size=model.max_batch_size,
        )
        capture = capture_for(parsed)
        batch_size, parsed_at = parsed.batch_size, time.perf_counter_ns()
        input_ns = parsed_at - started
        timeout_s = parsed.timeout_us / 1e6 if parsed.timeout_us else settings.request_timeout_ms / 1e3
        work = model.runner.infer(
            parsed.inputs,
            parameters=parsed.parameters,
            deadline=time.monotonic() + timeout_s,
            batch_size=batch_size,
            capture=capture,
            batching=BatchingPolicy.for_model(model.spec, model.max_batch_size, settings),
        )
        outputs = await cancel_on_disconnect(request.receive, work)
        inferred_at = time.perf_counter_ns()
        if capture is None:
            encoded = encode_inference_response(
                model_name=model.name,
                model_version=str(model.version),
                request_id=parsed.id,
                outputs=outputs,
                requested=parsed.outputs,
                datatypes={spec.name: spec.datatype for spec in model.outputs},
            )
        else:
            encoded = encode_capture_response(model, parsed, outputs)
        response = _response(encoded.body, encoded.header_length, request.headers.get("accept-encoding"))
        output_ns = time.perf_counter_ns() - inferred_at
        ok = True
        logger.debug(
            "request %s: model %s version %d, batch %d, %.2f ms",
            request_id_var.get(),
            model.name,
            model.version,
            batch_size,
            (time.perf_counter_ns() - started) / 1e6,
        )
        return response
    finally:
        model.statistics.record_request(
            ok=ok,
            total_ns=time.perf_counter_ns() - started,
            batch_size=batch_size,
            input_ns=input_ns,
            output_ns=output_ns,
        )


def _response(body: bytes, header_length: int | None, accept_encoding: str | None) -> Response:
    headers = {"Vary": "Accept-Encoding"}
    if header_length is not None:
        headers["Inference-Header-Content-Length"] = str(header_length)
    encoding = choose_encoding(accept_encoding)
    if encoding is not None and len(body) >= MIN_COMPRESS_BYTES:
        body = compress(body, encoding)
        headers["Content-Encoding"] = encoding
    media_type = "application/json" if header_length is None else "application/octet-stream"
    return Response(body, headers=headers, media_type=media_type)
