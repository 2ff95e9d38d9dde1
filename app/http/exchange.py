"""One HTTP exchange on raw ASGI: the request head read once, the body with its limits, the response.

What the inference endpoint (:class:`app.routes.infer.InferenceFastPath`)
needs of HTTP without Starlette's ``Request`` and ``Response`` objects: the
headers it reads, picked from the scope in one pass (:class:`RequestHead`);
the body, read with the size checks of :mod:`app.http.body` and the deadline
of :func:`app.http.body_timeout.receive_within` that every other route uses;
and the response as two ASGI messages (:func:`send_response`).
"""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from app.errors import ClientDisconnectedError
from app.http.body import check_declared_length, too_large
from app.http.body_timeout import receive_within
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
    check_declared_length(head.content_length, limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive_within(receive, size, started, timeout_s)
        if message["type"] != "http.request":  # http.disconnect
            raise ClientDisconnectedError(
                f"the client disconnected after sending {size} bytes of the request body"
            )
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def send_response(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    """Send a whole response: ``headers`` (lower-case names, ``content-length`` among them), then ``body``."""
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
