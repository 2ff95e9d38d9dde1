"""Running one OpenAI request's generations: opening them, merging their streams, closing them.

A completions request with several prompts is several generations (one choice
each) that run side by side in the engine's batch; their items come back
tagged with the choice's index. Opening them is all or nothing: if the engine
refuses one (a prompt over the context length, a full engine), the ones
already started are cancelled and the refusal is the request's error, before
any response has started.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from app.runtime.dataplane import DataPlane
from app.runtime.generation import GenerationRequest, GenerationResult, GenerationStream, TokenEvent
from app.runtime.manager import ModelVersion

__all__ = ["Item", "close_streams", "merge_streams", "open_streams"]

Item = TokenEvent | GenerationResult

_END = object()


async def open_streams(
    plane: DataPlane, model: ModelVersion, requests: Sequence[GenerationRequest]
) -> list[GenerationStream]:
    """Start every request on ``model``; all of them, or none (the error of the first refused).

    Raises:
        ServiceError: the engine refused a request (see :meth:`DataPlane.generate`).
    """
    streams: list[GenerationStream] = []
    try:
        for request in requests:
            streams.append(await plane.generate(model, request))
    except BaseException:
        await close_streams(streams)
        raise
    return streams


async def close_streams(streams: Sequence[GenerationStream]) -> None:
    """Cancel every generation that has not ended (nothing more is read from them)."""
    for stream in streams:
        await stream.aclose()


async def merge_streams(streams: Sequence[GenerationStream]) -> AsyncIterator[tuple[int, Item]]:
    """``(index, item)`` of every stream's items as they come, each stream's in its order.

    An error from any stream is raised here (the caller ends the response with it).
    """
    if len(streams) == 1:
        async for item in streams[0]:
            yield 0, item
        return
    queue: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()

    async def pump(index: int, stream: GenerationStream) -> None:
        try:
            async for item in stream:
                queue.put_nowait((index, item))
            queue.put_nowait((index, _END))
        except Exception as exc:
            queue.put_nowait((index, exc))

    tasks = [asyncio.create_task(pump(i, s), name=f"choice-{i}") for i, s in enumerate(streams)]
    try:
        remaining = len(tasks)
        while remaining:
            index, item = await queue.get()
            if item is _END:
                remaining -= 1
            elif isinstance(item, Exception):
                raise item
            else:
                yield index, item
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
