"""Per-request context: the request id, metrics, and the last-resort 500.

A pure ASGI middleware (no per-request task or body copy): it takes the
``X-Request-ID`` header or makes one, echoes it on the response, counts the
request in the metrics by model and route, and turns an unexpected exception
into ``{"error": ...}`` naming the request id, with the traceback only in the
log.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import loggable
from app.log import request_id_for, request_id_var
from app.runtime.metrics import Metrics

__all__ = ["RequestContextMiddleware", "internal_error", "observe_request"]

logger = logging.getLogger("app.errors")


class RequestContextMiddleware:
    """Request id, metrics and unexpected errors for every HTTP request.

    Args:
        app: the wrapped ASGI app.
        metrics: where requests are counted.
        is_known_model: whether a name may be used as a ``model`` label.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics, is_known_model: Callable[[str], bool]) -> None:
        self.app = app
        self.metrics = metrics
        self.is_known_model = is_known_model

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope)
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        state = {"status": 500, "started": False}

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                state["status"], state["started"] = message["status"], True
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            await send(message)

        self.metrics.request_started()
        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:  # the last resort: log it, answer without the stack
            logger.error(
                "request %s: %s %s failed unexpectedly",
                request_id,
                scope["method"],
                loggable(scope["path"]),
                exc_info=exc,
            )
            if not state["started"]:
                await internal_error(send_with_id, request_id)
        finally:
            observe_request(self.metrics, self.is_known_model, scope, int(state["status"]), started)
            request_id_var.reset(token)


def observe_request(
    metrics: Metrics, is_known_model: Callable[[str], bool], scope: Scope, status: int, started: float
) -> None:
    """Count an HTTP request that ended with ``status``, begun at ``time.perf_counter()`` ``started``.

    Labels: the model the path names (``_unknown`` for a name the repository
    lacks), the route template (``unmatched``), the method and the status.
    """
    route = scope.get("route")
    endpoint = getattr(route, "path", None) or "unmatched"
    name = (scope.get("path_params") or {}).get("model_name")
    model = "" if name is None else (name if is_known_model(name) else "_unknown")
    metrics.request_ended(model, endpoint, scope["method"], status, time.perf_counter() - started)


def _request_id(scope: Scope) -> str:
    for key, value in scope.get("headers", ()):
        if key == b"x-request-id":
            return request_id_for(value.decode("latin-1"))
    return request_id_for(None)


async def internal_error(send: Callable[[Message], Any], request_id: str) -> None:
    """Answer 500 with a body that names the request id and nothing of the error."""
    body = json.dumps(
        {"error": f"internal server error (request id {request_id}); the server log has the details"}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 500,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
