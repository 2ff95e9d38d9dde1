"""The ``grpc.aio`` server that serves :class:`~app.grpc.servicer.InferenceServicer` beside uvicorn.

It runs in uvicorn's event loop, started and stopped by the app's lifespan
(:func:`app.main.create_app`), so both transports share one
:class:`~app.runtime.service.Service`: the same models, versions, batch queues,
deadlines, statistics and metrics. A call the client cancels, or whose deadline
passes, cancels its coroutine, which takes a request out of its batch queue.
(Why not a thread-pool ``grpc.server``: see docs/performance.md.)

Messages up to ``MININN_MAX_REQUEST_BYTES`` are received (after decompression);
larger ones get ``RESOURCE_EXHAUSTED`` from gRPC itself. With ``MININN_WORKERS`` >
1 every worker listens on the gRPC port with ``SO_REUSEPORT`` and the kernel
spreads connections over them, as uvicorn's shared socket does for HTTP; with one
worker the port is taken exclusively, so a port in use stops start-up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from app.grpc import inference_pb2 as pb
from app.grpc.servicer import SERVICE_NAME, Call, CallFailedError, InferenceServicer
from app.runtime.service import Service

__all__ = ["GRPC_SHUTDOWN_GRACE_S", "GrpcPortError", "GrpcServer", "grpc_address"]

logger = logging.getLogger("app")

GRPC_SHUTDOWN_GRACE_S = 10.0
"""How long calls in flight may finish at shutdown (uvicorn's graceful shutdown is 10 s too)."""

_NO_DEADLINE_S = 1e9  # gRPC reports about 2**63 s left when the client set no deadline


class GrpcPortError(RuntimeError):
    """The gRPC port cannot be listened on (in use, or the address is not this host's)."""


def grpc_address(host: str, port: int) -> str:
    """``host:port`` as gRPC binds it (``[::1]:8001`` for IPv6 hosts)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class GrpcServer:
    """``inference.GRPCInferenceService`` on ``MININN_HOST``:``MININN_GRPC_PORT`` for ``service``.

    Args:
        service: what it serves.
    """

    def __init__(self, service: Service) -> None:
        settings = service.settings
        self.address = grpc_address(settings.host, settings.grpc_port)
        self.servicer = InferenceServicer(service)
        options = [
            ("grpc.max_receive_message_length", settings.max_request_bytes),
            ("grpc.max_send_message_length", -1),
            ("grpc.so_reuseport", 1 if settings.workers > 1 else 0),
        ]
        self._server = grpc.aio.server(options=options)
        # registered, not generic: gRPC's core matches the method path, no Python lookup per call
        self._server.add_registered_method_handlers(SERVICE_NAME, self._handlers())

    @classmethod
    async def start(cls, service: Service) -> GrpcServer:
        """Listen and serve in the running event loop; the caller :meth:`stop` s it.

        Raises:
            GrpcPortError: the port cannot be bound.
        """
        server = cls(service)
        try:
            server._server.add_insecure_port(server.address)
        except RuntimeError as exc:
            raise GrpcPortError(
                f"cannot listen for gRPC on {server.address} ({exc}); is the port in use? Set "
                "MININN_GRPC_PORT to a free port, or to 0 to turn gRPC off"
            ) from None
        await server._server.start()
        logger.debug("gRPC listening on %s", server.address)
        return server

    async def stop(self, grace: float | None = GRPC_SHUTDOWN_GRACE_S) -> None:
        """Refuse new calls, let the ones in flight finish for up to ``grace`` seconds, then cancel them."""
        await self._server.stop(grace)

    def _handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        service = pb.DESCRIPTOR.services_by_name[SERVICE_NAME.split(".")[-1]]
        handlers = {}
        for method in service.methods:
            streaming = method.client_streaming and method.server_streaming
            kind = grpc.stream_stream_rpc_method_handler if streaming else grpc.unary_unary_rpc_method_handler
            handlers[method.name] = kind(
                self._stream_handler(method.name) if streaming else self._handler(method.name),
                request_deserializer=getattr(pb, method.input_type.name).FromString,
                response_serializer=getattr(pb, method.output_type.name).SerializeToString,
            )
        return handlers

    def _handler(self, name: str) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
        serve = self.servicer.serve

        async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                return await serve(name, request, _call(context))
            except CallFailedError as failure:
                await context.abort(failure.code, failure.message)

        return handle

    def _stream_handler(self, name: str) -> Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]:
        stream = self.servicer.stream

        async def handle(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            try:
                async for response in stream(name, requests, _call(context)):
                    yield response
            except CallFailedError as failure:
                await context.abort(failure.code, failure.message)

        return handle


def _call(context: grpc.aio.ServicerContext) -> Call:
    sent = context.invocation_metadata() or ()
    metadata = {key: value for key, value in sent if isinstance(value, str)}
    remaining = context.time_remaining()
    limited = remaining is not None and remaining < _NO_DEADLINE_S
    return Call(metadata, time.monotonic() + remaining if limited else None)
