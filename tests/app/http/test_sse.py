"""Server-sent event streams: frames, an error that ends a started stream, and closing what they read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from app.errors import ServiceUnavailableError
from app.http.sse import event_stream, sse_frame


def error_frame(status: int, message: str) -> bytes:
    return sse_frame({"status": status, "error": message})


async def frames(*items: object) -> AsyncIterator[bytes]:
    for item in items:
        if isinstance(item, BaseException):
            raise item
        yield sse_frame(item)


def run(stream: AsyncIterator[bytes]) -> list[bytes]:
    async def collect() -> list[bytes]:
        return [frame async for frame in stream]

    return asyncio.run(collect())


def test_a_frame_is_data_json_and_a_blank_line() -> None:
    assert sse_frame({"a": "é", "b": [1, None]}) == 'data: {"a":"é","b":[1,null]}\n\n'.encode()


def test_frames_pass_through_and_close_runs_once() -> None:
    closed = []
    got = run(event_stream(frames({"n": 1}, {"n": 2}), error_frame, close=lambda: closed.append(True)))
    assert got == [b'data: {"n":1}\n\n', b'data: {"n":2}\n\n'] and closed == [True]


def test_a_service_error_mid_stream_is_the_last_frame_with_its_status() -> None:
    closed = []

    async def close() -> None:
        closed.append(True)

    stream = frames({"n": 1}, ServiceUnavailableError("engine closed"), {"n": 2})
    got = run(event_stream(stream, error_frame, close=close))
    assert got == [b'data: {"n":1}\n\n', b'data: {"status":503,"error":"engine closed"}\n\n'] and closed


def test_an_unexpected_error_is_a_500_naming_the_request_id_only(caplog: pytest.LogCaptureFixture) -> None:
    got = run(event_stream(frames(RuntimeError("secret /srv path")), error_frame))
    assert len(got) == 1 and b'"status":500' in got[0] and b"secret" not in got[0]
    assert b"the server log has the details" in got[0]
    assert any("failed unexpectedly mid-stream" in r.getMessage() for r in caplog.records)


def test_cancelling_the_reader_closes_what_the_stream_reads_even_when_close_awaits() -> None:
    closed = []

    async def close() -> None:
        await asyncio.sleep(0)  # awaits inside a cancelled task: shielded
        closed.append(True)

    async def endless() -> AsyncIterator[bytes]:
        while True:
            await asyncio.sleep(0.01)
            yield b"data: {}\n\n"

    async def main() -> None:
        stream = event_stream(endless(), error_frame, close=close)

        async def read() -> None:
            async for _ in stream:
                pass

        task = asyncio.create_task(read())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert closed == [True]
