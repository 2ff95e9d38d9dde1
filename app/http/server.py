"""uvicorn's httptools protocol with a size and a time limit on every request head.

uvicorn bounds neither: httptools buffers a request line and header fields of
any size, and a connection that sends its head a byte at a time is held for
as long as it keeps sending (the keep-alive timeout only runs between
requests). :class:`GuardedHttpToolsProtocol` adds both limits:

- ``MININN_MAX_HEADER_BYTES``: a head (request line and header fields) over it
  gets ``431`` and the connection is closed. Bytes are counted as they arrive,
  so at most the limit plus one socket read is ever buffered.
- ``MININN_HEADER_TIMEOUT_S``: a connection whose head has not fully arrived
  that long after its first byte (or after the connection opened) gets ``408``
  and is closed.

Bodies have their own deadline in :mod:`app.http.body_timeout`, where the app can
still answer with JSON.

It also sends a response's head and body in one socket write: uvicorn writes
them separately (two ``send`` calls, two wake-ups of the client), which on a
small inference response cost as much as the rest of sending it
(:class:`_JoinedWrites`). ``python -m app`` passes this class to uvicorn as
``http="app.http.server:GuardedHttpToolsProtocol"``; the limits come from the
``MININN_*`` environment, which uvicorn's worker processes inherit.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["GuardedHttpToolsProtocol"]

logger = logging.getLogger("app.http")


class _HeadRefusedError(Exception):
    """Raised from a parser callback to stop parsing a refused request."""


@functools.cache
def _limits() -> tuple[int, float]:
    from app.settings import load_settings

    settings = load_settings()
    return settings.max_header_bytes, settings.header_timeout_s


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """:class:`HttpToolsProtocol` that refuses oversized (431) and slow (408) request heads."""

    _head_bytes: int = 0
    _awaiting_head: bool = False
    _refused: bool = False
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = _JoinedWrites(transport, self.loop)  # type: ignore[assignment]
        self._start_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        if self._awaiting_head and not self._refused:
            self._head_bytes += len(data)
            if self._head_bytes > _limits()[0]:
                self._refuse(
                    431, f"the request head is over the {_limits()[0]}-byte limit (MININN_MAX_HEADER_BYTES)"
                )

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self._awaiting_head:
            self._start_head()

    def on_headers_complete(self) -> None:
        self._awaiting_head = False
        self._stop_head_timer()
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > _limits()[0]:
            self._refuse(
                431, f"the request head is over the {_limits()[0]}-byte limit (MININN_MAX_HEADER_BYTES)"
            )
            raise _HeadRefusedError
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if not self._refused:  # a refusal already answered; the parser error is its own _HeadRefusedError
            super().send_400_response(msg)

    def _start_head(self) -> None:
        self._awaiting_head, self._head_bytes = True, 0
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(_limits()[1], self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._awaiting_head and not self.transport.is_closing():
            self._refuse(
                408, f"the request head did not arrive within {_limits()[1]:g} s (MININN_HEADER_TIMEOUT_S)"
            )

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with ``{"error": message}`` and close, before the app ever sees the request."""
        self._refused = True
        self._stop_head_timer()
        logger.info("%s: %d %s", _peer(self.client), status, message)
        body = ('{"error": "%s"}' % message).encode()
        reason = {408: b"Request Timeout", 431: b"Request Header Fields Too Large"}[status]
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, reason, len(body), body)
        )
        self.transport.close()


class _JoinedWrites:
    """A connection's transport whose consecutive writes go out as one: a response's head with its body.

    A write is held until the next write, which is sent together with it, or
    until the end of the event loop's current turn, whichever comes first; so
    nothing waits longer than one turn, and the order of bytes is unchanged.
    Everything else is the transport's.
    """

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is None:
            self._held = bytes(data)
            self._loop.call_soon(self._flush)
        else:
            self._held = None
            self._transport.write(held + data)

    def _flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _peer(client: tuple[str, int] | None) -> str:
    return "%s:%d" % client if client else "client"
