"""The V2 gRPC service: a thin adapter over the data plane that the REST routes use too.

Each method reads its message, calls the same :class:`~app.runtime.dataplane.DataPlane`
(or model manager) method as its REST route, and writes the answer as
protobuf; :meth:`InferenceServicer.serve` wraps every call in what the HTTP
middleware does for REST: the request id (``x-request-id`` metadata or a new
one), the bearer key (``authorization`` metadata, :mod:`app.auth`), metrics
(the same families as HTTP, with the gRPC method path as ``endpoint``,
``GRPC`` as ``method`` and the status code's name as ``status``), and one
place that turns a :class:`~app.errors.ServiceError` into a :class:`CallFailedError`:
the gRPC status (:data:`GRPC_STATUS`) with the same message as REST.

The methods are coroutines on the server's event loop, where the data plane
lives; :mod:`app.grpc.server` routes each call to :meth:`InferenceServicer.serve`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from app.auth import check_read, check_write
from app.errors import ServiceError, loggable
from app.grpc import inference_pb2 as pb
from app.grpc.codec import infer_response, parameters_from_proto, request_document
from app.grpc.raw_request import decode_raw_request
from app.grpc.stream import FINAL, Send, StreamAnswers, generation_responses
from app.log import request_id_for, request_id_var
from app.routes.health import EXTENSIONS
from app.runtime.service import Service
from app.v2.captures import infer_capture
from app.v2.request import InferenceRequest, decode_inference_document
from app.version import SERVER_NAME, __version__

__all__ = ["GRPC_STATUS", "SERVICE_NAME", "Call", "CallFailedError", "InferenceServicer", "grpc_status"]

logger = logging.getLogger("app.errors")

SERVICE_NAME = "inference.GRPCInferenceService"

GRPC_STATUS: dict[int, grpc.StatusCode] = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    408: grpc.StatusCode.DEADLINE_EXCEEDED,
    409: grpc.StatusCode.ABORTED,
    413: grpc.StatusCode.RESOURCE_EXHAUSTED,
    415: grpc.StatusCode.INVALID_ARGUMENT,
    422: grpc.StatusCode.INVALID_ARGUMENT,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    499: grpc.StatusCode.CANCELLED,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.DEADLINE_EXCEEDED,
}
"""The gRPC status of each HTTP status a :class:`ServiceError` carries (Triton's choices: a full queue
is ``UNAVAILABLE`` as the 503 it is over HTTP)."""

Access = Literal["open", "read", "write"]


@dataclass(frozen=True)
class Call:
    """What a method needs of its gRPC call besides the message.

    Attributes:
        metadata: the call's metadata (text values; keys lower-case, as gRPC sends them).
        deadline: the client's deadline on :func:`time.monotonic`'s clock (None: none).
    """

    metadata: Mapping[str, str]
    deadline: float | None = None

    def remaining_us(self) -> int | None:
        """Microseconds left before the deadline (at least 1), or None without one."""
        if self.deadline is None:
            return None
        return max(1, math.floor((self.deadline - time.monotonic()) * 1e6))


class CallFailedError(Exception):
    """A call's failure: the gRPC status and the message the client gets."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_Handler = Callable[[Any, Any, Call], Awaitable[Message]]
_PARSE = {"ignore_unknown_fields": True}  # the REST answers carry keys the protocol's messages have not


def grpc_status(http_status: int) -> grpc.StatusCode:
    """The gRPC status of an error with HTTP status ``http_status`` (other 4xx: INVALID_ARGUMENT)."""
    if http_status in GRPC_STATUS:
        return GRPC_STATUS[http_status]
    return grpc.StatusCode.INVALID_ARGUMENT if 400 <= http_status < 500 else grpc.StatusCode.INTERNAL


def _rpc(access: Access) -> Callable[[_Handler], _Handler]:
    """Mark a method of the service, with the key it needs (``open``: none, as for health)."""

    def decorate(method: _Handler) -> _Handler:
        method.access = access  # type: ignore[attr-defined]
        return method

    return decorate


class InferenceServicer:
    """``inference.GRPCInferenceService`` over one :class:`~app.runtime.service.Service`.

    :meth:`serve` runs the method a call names (``ModelInfer``, ...), as a coroutine on
    the event loop of the service.

    Args:
        service: the service whose models, data plane, settings and metrics it uses.
    """

    def __init__(self, service: Service) -> None:
        self.service = service
        self.plane = service.plane
        self.manager = service.manager
        self.metrics = service.metrics
        # (model, endpoint, status) -> its series; like the HTTP middleware's, never removed
        self._series: dict[tuple[str, str, str], tuple[Any, Any, Any]] = {}

    # ---- health and metadata --------------------------------------------------------------
    @_rpc("open")
    async def ServerLive(self, request: pb.ServerLiveRequest, call: Call) -> pb.ServerLiveResponse:
        """Always live while the process answers."""
        return pb.ServerLiveResponse(live=True)

    @_rpc("open")
    async def ServerReady(self, request: pb.ServerReadyRequest, call: Call) -> pb.ServerReadyResponse:
        """Ready once the start-up load pass is over."""
        return pb.ServerReadyResponse(ready=self.manager.ready)

    @_rpc("read")
    async def ModelReady(self, request: pb.ModelReadyRequest, call: Call) -> pb.ModelReadyResponse:
        """Whether the model (version) serves; an unknown, loading or unloaded one is not ready, as in
        Triton. Loads nothing."""
        try:
            self.plane.check_ready(request.name, request.version)
        except ServiceError as exc:
            if exc.status_code not in (404, 503):
                raise
            return pb.ModelReadyResponse(ready=False)
        return pb.ModelReadyResponse(ready=True)

    @_rpc("read")
    async def ServerMetadata(
        self, request: pb.ServerMetadataRequest, call: Call
    ) -> pb.ServerMetadataResponse:
        """Name, version and protocol extensions, as ``GET /v2``."""
        return pb.ServerMetadataResponse(name=SERVER_NAME, version=__version__, extensions=EXTENSIONS)

    @_rpc("read")
    async def ModelMetadata(self, request: pb.ModelMetadataRequest, call: Call) -> pb.ModelMetadataResponse:
        """As ``GET /v2/models/{m}[/versions/{v}]``."""
        metadata = self.plane.metadata(request.name, request.version)
        return json_format.ParseDict(metadata, pb.ModelMetadataResponse(), **_PARSE)

    @_rpc("read")
    async def ModelConfig(self, request: pb.ModelConfigRequest, call: Call) -> pb.ModelConfigResponse:
        """As ``GET /v2/models/{m}[/versions/{v}]/config``."""
        config = self.plane.config(await self.plane.model(request.name, request.version))
        return pb.ModelConfigResponse(config=json_format.ParseDict(config, pb.ModelConfig(), **_PARSE))

    @_rpc("read")
    async def ModelStatistics(
        self, request: pb.ModelStatisticsRequest, call: Call
    ) -> pb.ModelStatisticsResponse:
        """As ``GET /v2/models/stats`` (no name) or ``GET /v2/models/{m}[/versions/{v}]/stats``."""
        stats = self.plane.statistics(request.name or None, request.version or None)
        return json_format.ParseDict(stats, pb.ModelStatisticsResponse(), **_PARSE)

    # ---- inference ------------------------------------------------------------------------
    @_rpc("read")
    async def ModelInfer(self, request: pb.ModelInferRequest, call: Call) -> pb.ModelInferResponse:
        """As ``POST /v2/models/{m}[/versions/{v}]/infer``, captures included; the call's deadline
        bounds the request's ``timeout``."""
        model = await self.plane.model(request.model_name, request.model_version)
        max_elements = self.service.settings.max_activation_elements

        async def decode() -> InferenceRequest:
            parsed = decode_raw_request(
                request, inputs=model.inputs, outputs=model.outputs, max_batch_size=model.max_batch_size
            )
            if parsed is None:  # not a plain raw-contents request: the general path, and its errors
                document, tail = request_document(request)
                parsed = decode_inference_document(
                    document,
                    tail,
                    model=model.name,
                    inputs=model.inputs,
                    outputs=model.outputs,
                    max_batch_size=model.max_batch_size,
                )
            deadline_us = call.remaining_us()
            if deadline_us is not None:
                parsed.timeout_us = min(parsed.timeout_us or deadline_us, deadline_us)
            return parsed

        def encode(parsed: InferenceRequest, results: dict[str, Any]) -> pb.ModelInferResponse:
            return infer_response(
                model_name=model.name,
                model_version=str(model.version),
                request=parsed,
                results=results,
                datatypes=model.output_datatypes,
            )

        return await self.plane.infer(
            model,
            decode,
            encode,
            capture_for=lambda parsed: infer_capture(parsed, model.module, max_elements=max_elements),
        )

    async def ModelStreamInfer(
        self, requests: AsyncIterator[pb.ModelInferRequest], call: Call
    ) -> AsyncIterator[pb.ModelStreamInferResponse]:
        """Triton's decoupled streaming: a text model's tokens a response at a time, another
        model's one response (:mod:`app.grpc.stream`); each request is answered concurrently."""

        async def answer(request: pb.ModelInferRequest, send: Send) -> None:
            request_id_var.set(request_id_for(request.id or call.metadata.get("x-request-id")))
            model = await self.plane.model(request.model_name, request.model_version)
            if model.generator is None:
                response = await self.ModelInfer(request, call)
                response.parameters[FINAL].bool_param = True
                send(pb.ModelStreamInferResponse(infer_response=response))
                return
            deadline_s = None if call.deadline is None else max(call.deadline - time.monotonic(), 1e-3)
            async for response in generation_responses(self.plane, model, request, deadline_s):
                send(pb.ModelStreamInferResponse(infer_response=response))

        async for response in StreamAnswers(answer).run(requests):
            yield response

    # ---- the model repository -------------------------------------------------------------
    @_rpc("read")
    async def RepositoryIndex(
        self, request: pb.RepositoryIndexRequest, call: Call
    ) -> pb.RepositoryIndexResponse:
        """As ``POST /v2/repository/index``; ``ready`` lists only ready models."""
        rows = self.manager.index(ready_only=request.ready)
        return json_format.ParseDict({"models": rows}, pb.RepositoryIndexResponse(), **_PARSE)

    @_rpc("write")
    async def RepositoryModelLoad(
        self, request: pb.RepositoryModelLoadRequest, call: Call
    ) -> pb.RepositoryModelLoadResponse:
        """As ``POST /v2/repository/models/{m}/load`` (``config``: a ``model.json`` for this load)."""
        parameters = parameters_from_proto(request.parameters)
        await self.plane.load(request.model_name, parameters or None)
        return pb.RepositoryModelLoadResponse()

    @_rpc("write")
    async def RepositoryModelUnload(
        self, request: pb.RepositoryModelUnloadRequest, call: Call
    ) -> pb.RepositoryModelUnloadResponse:
        """As ``POST /v2/repository/models/{m}/unload``."""
        await self.plane.unload(request.model_name)
        return pb.RepositoryModelUnloadResponse()

    # ---- what every call goes through -----------------------------------------------------
    async def serve(self, name: str, request: Any, call: Call) -> Message:
        """Run method ``name`` on ``request``: keys, request id, metrics, errors.

        Raises:
            CallFailedError: the call failed; its status and message are the client's answer.
        """
        method: _Handler = getattr(type(self), name)
        endpoint = f"/{SERVICE_NAME}/{name}"
        metadata = call.metadata
        request_id = request_id_for(metadata.get("x-request-id"))
        token = request_id_var.set(request_id)
        model = getattr(request, "model_name", None) or getattr(request, "name", "")
        started, status = time.perf_counter(), grpc.StatusCode.UNKNOWN
        self.metrics.in_flight.inc()
        try:
            settings = self.service.settings
            access: Access = method.access  # type: ignore[attr-defined]
            if access == "read":
                check_read(settings, metadata.get("authorization"))
            elif access == "write":
                check_write(settings, metadata.get("authorization"))
            response = await method(self, request, call)
            status = grpc.StatusCode.OK
            return response
        except ServiceError as exc:
            status = grpc_status(exc.status_code)
            _log_client_error(endpoint, model, status, exc)
            raise CallFailedError(status, exc.message) from None
        except Exception as exc:
            status = grpc.StatusCode.INTERNAL
            logger.error("request %s: gRPC %s failed unexpectedly", request_id, endpoint, exc_info=exc)
            message = f"internal server error (request id {request_id}); the server log has the details"
            raise CallFailedError(status, message) from None
        except BaseException:  # asyncio.CancelledError: the client went away or its deadline passed
            status = grpc.StatusCode.CANCELLED
            raise
        finally:
            self.metrics.in_flight.dec()
            self._observe(model, endpoint, status, time.perf_counter() - started)
            request_id_var.reset(token)

    async def stream(self, name: str, requests: Any, call: Call) -> AsyncIterator[Message]:
        """Run streaming method ``name`` over ``requests``: the key once, metrics for the whole call.

        Raises:
            CallFailedError: the key was refused (the call ends; requests' own errors travel in the stream).
        """
        method = getattr(type(self), name)
        endpoint = f"/{SERVICE_NAME}/{name}"
        token = request_id_var.set(request_id_for(call.metadata.get("x-request-id")))
        started, status = time.perf_counter(), grpc.StatusCode.UNKNOWN
        self.metrics.in_flight.inc()
        try:
            try:
                check_read(self.service.settings, call.metadata.get("authorization"))
            except ServiceError as exc:
                status = grpc_status(exc.status_code)
                _log_client_error(endpoint, "", status, exc)
                raise CallFailedError(status, exc.message) from None
            async for response in method(self, requests, call):
                yield response
            status = grpc.StatusCode.OK
        except BaseException:
            if status is grpc.StatusCode.UNKNOWN:
                status = grpc.StatusCode.CANCELLED
            raise
        finally:
            self.metrics.in_flight.dec()
            self._observe("", endpoint, status, time.perf_counter() - started)
            request_id_var.reset(token)

    def _observe(self, name: str, endpoint: str, status: grpc.StatusCode, seconds: float) -> None:
        model = "" if not name else (name if self.manager.is_known(name) else "_unknown")
        key = (model, endpoint, status.name)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = (
                self.metrics.requests.labels(model, endpoint, "GRPC", status.name),
                self.metrics.latency.labels(model, endpoint),
                self.metrics.failures.labels(model, endpoint, status.name)
                if status is not grpc.StatusCode.OK
                else None,
            )
        requests, latency, failures = series
        requests.inc()
        latency.observe(seconds)
        if failures is not None:
            failures.inc()


def _log_client_error(endpoint: str, model: str, status: grpc.StatusCode, exc: ServiceError) -> None:
    level = exc.log_level
    if level is None:
        level = logging.WARNING if exc.status_code >= 500 else logging.INFO
    logger.log(
        level,
        "request %s: gRPC %s model=%s -> %s %s",
        request_id_var.get(),
        endpoint,
        loggable(model or "-"),
        status.name,
        loggable(exc.message),
    )
