"""app.http.server: a response's head and body leave in one write; nothing waits past the loop's turn."""

from __future__ import annotations

import asyncio

from app.http.server import _JoinedWrites


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


def test_a_head_and_its_body_go_out_as_one_write_and_a_lone_write_at_the_turn_s_end() -> None:
    async def main() -> list[bytes]:
        transport = _Transport()
        joined = _JoinedWrites(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
        joined.write(b"HTTP/1.1 200 OK\r\n\r\n")
        assert transport.writes == []  # held for the body
        joined.write(b"body")
        assert transport.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
        joined.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # nothing follows it
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert joined.get_extra_info("peername") == "info peername"  # the rest is the transport's
        return transport.writes

    assert asyncio.run(main()) == [b"HTTP/1.1 200 OK\r\n\r\nbody", b"HTTP/1.1 100 Continue\r\n\r\n"]


def test_closing_sends_what_is_held_first_and_a_closed_transport_gets_nothing_late() -> None:
    async def main() -> None:
        transport = _Transport()
        joined = _JoinedWrites(transport, asyncio.get_running_loop())  # type: ignore[arg-type]
        joined.write(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
        joined.close()
        assert transport.writes == [b"HTTP/1.1 408 Request Timeout\r\n\r\n"] and transport.closed
        other = _Transport()
        late = _JoinedWrites(other, asyncio.get_running_loop())  # type: ignore[arg-type]
        late.write(b"head")
        other.closed = True  # the client went away before the loop's turn ended
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert other.writes == []

    asyncio.run(main())
