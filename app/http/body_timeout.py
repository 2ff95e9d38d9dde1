"""A deadline on every request body, so a slow client cannot hold a request open.

uvicorn waits for a body as long as the client keeps the connection open; a
client that sends a byte a second would keep its request (and, for an
upload, its staging file) alive indefinitely. :class:`BodyTimeoutMiddleware`
wraps ``receive``: the body must have fully arrived ``MININN_BODY_TIMEOUT_S``
seconds after the request started, plus one second for every MiB received,
so a large upload at a steady 1 MiB/s or more never hits the limit and a
byte-a-second client is cut off at about the timeout. Late requests get
``408 {"error": ...}`` and ``Connection: close``.

The body is read before a request is queued for inference, so a slow body
never holds a place in a model's batch queue either.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import RequestTimeoutError

__all__ = ["BYTES_PER_SECOND", "BodyTimeoutMiddleware", "receive_within"]

BYTES_PER_SECOND = 1 << 20
"""The allowance per byte received: 1 s per MiB."""


class BodyTimeoutMiddleware:
    """Raise :class:`RequestTimeoutError` from ``receive`` when a body runs past its deadline.

    Args:
        app: the wrapped ASGI app.
        timeout_s: seconds a body may take, before the per-MiB allowance.
    """

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.app(scope, _DeadlineReceive(receive, self.timeout_s), send)


class _DeadlineReceive:
    """``receive`` with a deadline until the last body message has arrived."""

    def __init__(self, receive: Receive, timeout_s: float) -> None:
        self.receive = receive
        self.timeout_s = timeout_s
        self.started = time.monotonic()
        self.received = 0
        self.done = False

    async def __call__(self) -> Message:
        if self.done:
            return await self.receive()
        message: dict[str, Any] = await receive_within(
            self.receive, self.received, self.started, self.timeout_s
        )
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            self.done = not message.get("more_body", False)
        else:
            self.done = True
        return message


async def receive_within(receive: Receive, received: int, started: float, timeout_s: float) -> Message:
    """``await receive()`` for a body that started arriving at ``started`` (``time.monotonic()``) and
    has ``received`` bytes so far, or :class:`RequestTimeoutError` once its deadline passes.

    The deadline is a loop timer that cancels this task: what ``asyncio.wait_for`` does, without
    its task and future per call.
    """
    remaining = started + timeout_s + received / BYTES_PER_SECOND - time.monotonic()
    task = asyncio.current_task()
    assert task is not None
    deadline = _Deadline(task)
    timer = task.get_loop().call_later(max(remaining, 0.0), deadline)
    try:
        return await receive()
    except asyncio.CancelledError:
        if not deadline.fired:
            raise
        if sys.version_info >= (3, 11):
            task.uncancel()
            if task.cancelling():  # cancelled by someone else as well: let that win
                raise
        raise RequestTimeoutError(
            f"the request body did not arrive in time: {received} bytes in "
            f"{time.monotonic() - started:.1f} s (MININN_BODY_TIMEOUT_S={timeout_s:g}, plus 1 s per MiB)"
        ) from None
    finally:
        timer.cancel()


class _Deadline:
    """Cancels the task reading a body when its deadline passes (a loop timer's callback)."""

    __slots__ = ("fired", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.fired = False

    def __call__(self) -> None:
        self.fired = True
        self.task.cancel()
