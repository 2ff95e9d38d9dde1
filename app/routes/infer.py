"""Inference: ``POST /v2/models/{m}[/versions/{v}]/infer``, JSON or binary tensors.

The endpoint is the REST adapter (:mod:`app.routes._inference`) over
:meth:`DataPlane.infer <app.runtime.dataplane.DataPlane.infer>`, with the
capture that an ``/infer`` request's ``capture`` parameter asks for.
:class:`InferenceFastPath` serves the same endpoint in front of FastAPI.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute
from starlette.types import Message, Receive, Scope, Send

from app.auth import check_read
from app.errors import ServiceError, loggable, render_service_error
from app.http.auth import require_read
from app.http.dependencies import PlaneDep
from app.http.exchange import RequestHead, read_body, send_response
from app.http.middleware import internal_error, observe_request
from app.log import request_id_var
from app.routes._inference import inference_openapi, inference_responses, serve_rest_inference
from app.routes._params import on_both_forms
from app.runtime.batching import cancel_on_disconnect
from app.runtime.dataplane import DataPlane
from app.runtime.manager import ModelVersion
from app.runtime.metrics import Metrics
from app.v2 import InferenceRequest, choose_encoding, compress, decompress, parse_inference_request
from app.v2.captures import encode_results, infer_capture
from app.v2.compression import MIN_COMPRESS_BYTES
from mininn.nn import ActivationCapture

__all__ = ["InferenceFastPath", "router"]

_errors_logger = logging.getLogger("app.errors")  # the request middleware's logger, for the same lines

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
    """Serves ``POST .../infer`` in front of FastAPI, on raw ASGI: the app hands such requests to it first.

    A batch-1 request of a small model costs the server less than a
    millisecond of Python, so every layer counts: FastAPI's router (route
    matching over every route, dependency solving, its exception and exit-stack
    layers), its middleware, Starlette's ``Request`` and ``Response`` objects,
    and the closures between them cost about as much as parsing the request.
    This endpoint does each step once, in one object per request
    (:class:`_RestInference`): the headers it reads in one pass over the scope,
    the request id, the key check (:func:`app.auth.check_read`), the version
    (:meth:`DataPlane.model`), the body with its size limit and deadline
    (:func:`app.http.exchange.read_body`), then :meth:`DataPlane.infer`, the
    response as two ASGI messages, and the request's metrics
    (:meth:`Metrics.request_ended`). Errors are rendered by the service's one
    handler, so answers are those of the routes above
    (``tests/app/routes/test_infer_routes.py`` compares them;
    ``benchmarks/serve_breakdown.py`` measures the difference).

    The routes stay in the app for the OpenAPI schema, other methods (405),
    mounts under a ``root_path`` and traced requests, which this path leaves
    to them. It sets ``path_params`` and ``route`` in the scope as the router
    would, for the request log and the metrics' ``endpoint`` label.

    Args:
        plane: the data plane of the models it serves.
        metrics: where requests are counted.
    """

    def __init__(self, plane: DataPlane, metrics: Metrics) -> None:
        self.plane = plane
        self.metrics = metrics
        self.is_known_model = plane.manager.is_known

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
        started = time.perf_counter()
        head = RequestHead(scope)
        token = request_id_var.set(head.request_id)
        self.metrics.request_started()
        exchange = _RestInference(self.plane, scope, receive, send, head)
        try:
            await exchange.answer()
        except Exception as exc:  # the last resort: log it, answer without the stack
            _errors_logger.error(
                "request %s: %s %s failed unexpectedly",
                head.request_id,
                scope["method"],
                loggable(scope["path"]),
                exc_info=exc,
            )
            if not exchange.responded:
                exchange.status = 500
                await internal_error(exchange.send_with_id, head.request_id)
        finally:
            observe_request(self.metrics, self.is_known_model, scope, exchange.status, started)
            request_id_var.reset(token)


class _RestInference:
    """One inference request over HTTP: what :meth:`DataPlane.infer` asks of its transport, as methods."""

    __slots__ = ("began", "head", "model", "plane", "receive", "responded", "scope", "send", "status")

    def __init__(
        self, plane: DataPlane, scope: Scope, receive: Receive, send: Send, head: RequestHead
    ) -> None:
        self.plane = plane
        self.scope, self.receive, self.send = scope, receive, send
        self.head = head
        self.began = time.monotonic()  # the body deadline counts from here
        self.status = 500
        self.responded = False
        self.model: ModelVersion | None = None

    async def answer(self) -> None:
        """Resolve the model, infer, and send the response or the error's."""
        params = self.scope["path_params"]
        try:
            check_read(self.plane.settings, self.head.authorization)
            self.model = await self.plane.model(params["model_name"], params.get("model_version"))
            body, headers = await self.plane.infer(
                self.model, self.decode, self.encode, capture_for=self.capture_for, wait=self.wait
            )
        except ServiceError as exc:
            rendered = render_service_error(Request(self.scope, self.receive), exc)
            headers = [header for header in rendered.raw_headers if header[0] != b"content-length"]
            await self._send(rendered.status_code, bytes(rendered.body), headers)
            return
        await self._send(200, body, headers)

    async def decode(self) -> InferenceRequest:
        """Read, decompress and parse the body against the model's inputs."""
        model, head = self.model, self.head
        assert model is not None
        settings = self.plane.settings
        limit = settings.max_request_bytes
        body = await read_body(
            self.receive, head, limit=limit, timeout_s=settings.body_timeout_s, started=self.began
        )
        if head.content_encoding is not None:
            body = decompress(body, head.content_encoding, limit)
        return parse_inference_request(
            body,
            head.header_length,
            model=model.name,
            inputs=model.inputs,
            outputs=model.outputs,
            max_batch_size=model.max_batch_size,
        )

    def encode(self, parsed: InferenceRequest, results: dict[str, Any]) -> tuple[bytes, Headers]:
        """The response body and headers: JSON or binary tensors, compressed per ``Accept-Encoding``."""
        model = self.model
        assert model is not None
        encoded = encode_results(
            model_name=model.name,
            model_version=str(model.version),
            request=parsed,
            results=results,
            datatypes=model.output_datatypes,
        )
        body, header_length = encoded.body, encoded.header_length
        headers = [(b"vary", b"Accept-Encoding")]
        if header_length is not None:
            headers.append((b"inference-header-content-length", b"%d" % header_length))
        if self.head.accept_encoding and len(body) >= MIN_COMPRESS_BYTES:
            encoding = choose_encoding(self.head.accept_encoding)
            if encoding is not None:
                body = compress(body, encoding)
                headers.append((b"content-encoding", encoding.encode()))
        headers.append((b"content-type", _JSON if header_length is None else _BINARY))
        return body, headers

    def capture_for(self, parsed: InferenceRequest) -> ActivationCapture | None:
        """The capture its ``capture`` parameter asks for (:func:`~app.v2.captures.infer_capture`)."""
        model = self.model
        assert model is not None
        if not parsed.parameters:
            return None
        return infer_capture(parsed, model.module, max_elements=self.plane.settings.max_activation_elements)

    def wait(self, work: Awaitable[dict[str, Any]]) -> Awaitable[dict[str, Any]]:
        """Wait for ``work``, dropping it if the client disconnects."""
        return cancel_on_disconnect(self.receive, work)  # type: ignore[arg-type]

    async def send_with_id(self, message: Message) -> None:
        """``send``, with ``X-Request-ID`` on the response's head."""
        if message["type"] == "http.response.start":
            self.status, self.responded = message["status"], True
            request_id = (b"x-request-id", self.head.request_id.encode())
            message["headers"] = [*message.get("headers", []), request_id]
        await self.send(message)

    async def _send(self, status: int, body: bytes, headers: Headers) -> None:
        headers.append((b"content-length", b"%d" % len(body)))
        headers.append((b"x-request-id", self.head.request_id.encode()))
        self.status, self.responded = status, True
        await send_response(self.send, status, body, headers)


Headers = list[tuple[bytes, bytes]]
_JSON = b"application/json"
_BINARY = b"application/octet-stream"
