"""One HTTP exchange on raw ASGI: the request head read once, the body with its limits, the response.

What the inference endpoint (:class:`app.routes.infer.InferenceFastPath`)
needs of HTTP without Starlette's ``Request`` and ``Response`` objects: the
headers it reads, picked from the scope in one pass (:class:`RequestHead`);
the body, read with the same size limit and deadline as every other route's
(:func:`app.http.body.read_body` and :mod:`app.http.body_timeout`, with the
same messages); and the response as two ASGI messages (:func:`send_response`).
"""

from __future__ import annotations

import asyncio
import sys
import time

from starlette.types import Message, Receive, Scope, Send

from app.errors import ClientDisconnectedError, PayloadTooLargeError, RequestTimeoutError
from app.http.body_timeout import BYTES_PER_SECOND
from app.log import request_id_for

__all__ = ["RequestHead", "read_body", "send_response"]

_WANTED = {
    b"x-request-id": "request_id",
    b"content-length": "content_length",
    b"content-encoding": "content_encoding",
    b"inference-header-content-length": "header_length",
    b"accept-encoding": "accept_encoding",
    b"authorization": "authorization",
}


class RequestHead:
    """The request headers an inference reads (the first of each name, as Starlette's ``Headers.get``).

    Attributes:
        request_id: the ``X-Request-ID`` sent when valid, else a new one (:func:`app.log.request_id_for`).
        content_length, content_encoding, header_length, accept_encoding, authorization:
            the headers' values (latin-1), None when absent; ``header_length`` is
            ``Inference-Header-Content-Length``.
    """

    __slots__ = ("accept_encoding", "authorization", "content_encoding", "content_length", "header_length",
                 "request_id")

    def __init__(self, scope: Scope) -> None:
        self.content_length: str | None = None
        self.content_encoding: str | None = None
        self.header_length: str | None = None
        self.accept_encoding: str | None = None
        self.authorization: str | None = None
        sent: str | None = None
        seen: set[str] = set()
        for key, value in scope["headers"]:
            field = _WANTED.get(key)
            if field is None or field in seen:
                continue
            seen.add(field)
            if field == "request_id":
                sent = value.decode("latin-1")
            else:
                setattr(self, field, value.decode("latin-1"))
        self.request_id = request_id_for(sent)


class _Deadline:
    """Cancels the task reading a body when its deadline passes (a loop timer's callback)."""

    __slots__ = ("fired", "task")

    def __init__(self, task: asyncio.Task[object]) -> None:
        self.task = task
        self.fired = False

    def __call__(self) -> None:
        self.fired = True
        self.task.cancel()


async def read_body(
    receive: Receive, head: RequestHead, *, limit: int, timeout_s: float, started: float
) -> bytes:
    """The raw body, within ``limit`` bytes and the body deadline.

    The deadline is :mod:`app.http.body_timeout`'s: ``timeout_s`` after the
    request started (``time.monotonic()`` ``started``), plus one second per MiB
    received. A body that has fully arrived with the head (the usual case) is
    read without waiting.

    Raises:
        PayloadTooLargeError: ``Content-Length`` or the bytes received are over ``limit`` (413).
        RequestTimeoutError: the body did not arrive in time (408, the connection is closed).
        ClientDisconnectedError: the client hung up before the body's end (499, never delivered).
    """
    declared = head.content_length or ""
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLargeError(
            f"request body of {declared} bytes is over the {limit}-byte limit (MININN_MAX_REQUEST_BYTES)"
        )
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = started + timeout_s + size / BYTES_PER_SECOND - time.monotonic()
        message = await _receive_within(receive, remaining, size, started, timeout_s)
        if message["type"] != "http.request":  # http.disconnect
            raise ClientDisconnectedError(
                f"the client disconnected after sending {size} bytes of the request body"
            )
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise PayloadTooLargeError(
                f"request body is over the {limit}-byte limit (MININN_MAX_REQUEST_BYTES)"
            )
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def _receive_within(
    receive: Receive, remaining: float, received: int, started: float, timeout_s: float
) -> Message:
    """``await receive()``, or :class:`RequestTimeoutError` after ``remaining`` seconds.

    A loop timer that cancels this task: what ``asyncio.wait_for`` does, without
    its task and future per call.
    """
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


async def send_response(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """Send a whole response: ``headers`` (lower-case names, ``content-length`` among them), then ``body``."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
