"""Server-sent events: the streaming responses of the generation routes.

A stream is ``data: <json>\\n\\n`` frames (``text/event-stream``). The status
line and headers go out with the first frame, so an error after that can only
travel as a frame: :func:`event_stream` turns an exception raised while the
frames are produced into the protocol's error frame (OpenAI's
``data: {"error": {...}}``, Triton's ``data: {"error": "..."}``) and ends the
stream there, never silently. A client that disconnects cancels the task that
produces the frames (Starlette listens for ``http.disconnect`` while it
streams), and the generation's stream is closed with it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import orjson
from fastapi.responses import StreamingResponse

from app.errors import ServiceError, loggable
from app.log import request_id_var

__all__ = ["EVENT_STREAM_HEADERS", "EventStreamResponse", "event_stream", "sse_frame"]

logger = logging.getLogger("app.errors")

EVENT_STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""Headers of every event stream: no caching, and no buffering in a reverse proxy (nginx)."""

ErrorFrame = Callable[[int, str], bytes]
"""The frame of an error that ends a started stream: (HTTP status, message) -> bytes."""


def sse_frame(data: Any) -> bytes:
    """``data`` as one server-sent event: ``data: <json>\\n\\n`` (JSON without spaces)."""
    return b"data: " + orjson.dumps(data) + b"\n\n"


class EventStreamResponse(StreamingResponse):
    """A ``text/event-stream`` response of frames (see :func:`event_stream`)."""

    media_type = "text/event-stream"

    def __init__(self, frames: AsyncIterator[bytes], *, charset_in_type: bool = False) -> None:
        super().__init__(frames, headers=EVENT_STREAM_HEADERS)
        if charset_in_type:  # Triton's generate_stream says "text/event-stream; charset=utf-8"
            self.headers["content-type"] = "text/event-stream; charset=utf-8"


async def event_stream(
    frames: AsyncIterator[bytes],
    error_frame: ErrorFrame,
    *,
    close: Callable[[], Any] | None = None,
    what: str = "generation",
) -> AsyncIterator[bytes]:
    """``frames``, ended by ``error_frame`` if producing them fails; ``close`` runs however it ends.

    A :class:`~app.errors.ServiceError` keeps its status and message; any other
    exception is logged with its traceback and sent as a 500 naming the request
    id. Cancellation (the client left) is not an error: the stream just stops.

    Args:
        frames: the stream's frames.
        error_frame: renders an error as the protocol's frame.
        close: releases what ``frames`` reads from (the generation streams); awaited if it
            returns an awaitable, shielded from the cancellation that may be ending the stream.
        what: how the log names the stream.
    """
    try:
        async for frame in frames:
            yield frame
    except ServiceError as exc:
        level = exc.log_level if exc.log_level is not None else logging.WARNING
        request_id = request_id_var.get()
        logger.log(level, "request %s: %s failed mid-stream: %s", request_id, what, loggable(exc.message))
        yield error_frame(exc.status_code, exc.message)
    except Exception as exc:
        request_id = request_id_var.get()
        logger.error("request %s: %s failed unexpectedly mid-stream", request_id, what, exc_info=exc)
        message = f"internal server error (request id {request_id}); the server log has the details"
        yield error_frame(500, message)
    finally:
        if close is not None:
            with anyio.CancelScope(shield=True):
                closing = close()
                if closing is not None:
                    await closing
