"""The data plane's generation API, and the engine's life with its model version (load, swap, unload).

A text model's servable carries ``generator`` (issue 28's seam 1); until the
zoo's language models land, the repository's ``tiny`` model is an MLP whose
servable gets the tiny causal LM of ``_tiny_lm`` as its generator at build time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from _app_support import mlp_weights, write_model
from _tiny_lm import greedy_reference, tiny_generator

from app.errors import ServiceUnavailableError, UnprocessableError
from app.runtime import versions
from app.runtime.dataplane import DataPlane
from app.runtime.generation import GenerationRequest, GenerationResult, TokenEvent
from app.runtime.manager import ModelManager
from app.runtime.metrics import Metrics
from app.runtime.sampling import SamplingParams
from app.settings import Settings
from app.store.repository import ModelRepository

GENERATORS: dict[str, Any] = {}


@pytest.fixture
def plane(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DataPlane]:
    write_model(tmp_path, "mlp", {1: mlp_weights(1)})
    write_model(tmp_path, "tiny", {1: mlp_weights(2)})
    real_build = versions.build_servable

    def build(spec: Any, folder: Path) -> Any:
        servable = real_build(spec, folder)
        if folder.name.startswith("tiny"):
            servable.generator = tiny_generator(seed=len(GENERATORS), tokenizer=folder.name != "tiny-ids")
            GENERATORS[folder.name] = servable.generator
        return servable

    monkeypatch.setattr(versions, "build_servable", build)
    executor = ThreadPoolExecutor(1)
    settings = Settings(model_repository=tmp_path, max_sequences=4, max_waiting_sequences=2)
    manager = ModelManager(ModelRepository(tmp_path), settings, executor, Metrics())
    asyncio.run(manager.load_all())
    yield DataPlane(manager, settings)
    manager.close()
    executor.shutdown()
    GENERATORS.clear()


async def collect(stream: Any) -> tuple[list[TokenEvent], GenerationResult]:
    items = [item async for item in stream]
    assert isinstance(items[-1], GenerationResult)
    return items[:-1], items[-1]


def test_a_text_version_has_a_running_engine_and_others_have_none(plane: DataPlane) -> None:
    tiny = plane.generation_model("tiny")
    assert tiny.engine is not None and tiny.engine.alive
    assert (tiny.engine.max_running, tiny.engine.max_waiting) == (4, 2)
    assert plane.model("mlp").engine is None
    with pytest.raises(UnprocessableError, match="model 'mlp' is not a text-generation model"):
        plane.generation_model("mlp")
    with pytest.raises(UnprocessableError, match="not a text-generation model"):
        plane.encode_prompt(plane.model("mlp"), "hi")


def test_generate_from_text_and_from_chat(plane: DataPlane) -> None:
    tiny = plane.generation_model("tiny")
    prompt = plane.encode_prompt(tiny, "Hello")
    assert prompt == (256, *b"Hello")
    assert plane.encode_prompt(tiny, "Hello", add_special_tokens=False) == tuple(b"Hello")
    chat = plane.encode_chat(tiny, [{"role": "user", "content": "Hi"}])
    assert chat == tuple(b"user: Hi\nassistant:")

    async def run() -> GenerationResult:
        stream = await plane.generate(
            tiny, GenerationRequest(prompt, SamplingParams(max_tokens=8, temperature=0))
        )
        return (await collect(stream))[1]

    result = asyncio.run(run())
    assert list(result.token_ids) == greedy_reference(GENERATORS["tiny"], list(prompt), 8)


def test_chat_errors_name_the_message(plane: DataPlane) -> None:
    tiny = plane.generation_model("tiny")
    with pytest.raises(UnprocessableError, match=r"model 'tiny': messages\[1\] has role 'robot'"):
        plane.encode_chat(tiny, [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])


def test_a_model_without_tokenizer_takes_token_ids_only(plane: DataPlane, tmp_path: Path) -> None:
    write_model(tmp_path, "tiny-ids", {1: mlp_weights(3)})
    asyncio.run(plane.load("tiny-ids"))
    model = plane.generation_model("tiny-ids")
    with pytest.raises(
        UnprocessableError, match="model 'tiny-ids' has no tokenizer .*send the prompt as token ids"
    ):
        plane.encode_prompt(model, "hi")

    async def run() -> GenerationResult:
        return (
            await collect(
                await plane.generate(model, GenerationRequest((1, 2, 3), SamplingParams(max_tokens=3)))
            )
        )[1]

    assert asyncio.run(run()).completion_tokens == 3


def test_unload_closes_the_engine_after_its_running_sequences(plane: DataPlane) -> None:
    tiny = plane.generation_model("tiny")
    engine = tiny.engine
    assert engine is not None

    async def run() -> None:
        stream = await plane.generate(
            tiny, GenerationRequest((1, 2), SamplingParams(max_tokens=30, ignore_eos=True))
        )
        await plane.unload("tiny")
        with pytest.raises(ServiceUnavailableError, match="model 'tiny' is not ready"):
            plane.generation_model("tiny")
        with pytest.raises(ServiceUnavailableError, match="version 1 was unloaded"):
            await plane.generate(tiny, GenerationRequest((1, 2), SamplingParams(max_tokens=3)))
        assert (await collect(stream))[1].completion_tokens == 30  # the running one finished

    asyncio.run(run())
    deadline = time.monotonic() + 10
    while engine.alive and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not engine.alive
    assert GENERATORS["tiny"].live == set()


def test_a_new_version_gets_a_new_engine_and_the_old_one_stops(plane: DataPlane, tmp_path: Path) -> None:
    old = plane.generation_model("tiny").engine
    write_model(tmp_path, "tiny", {2: mlp_weights(4)})
    asyncio.run(plane.manager.sync_with_repository())
    new = plane.generation_model("tiny")
    assert new.version == 2 and new.engine is not None and new.engine is not old
    assert old is not None
    old.close(wait=10)  # already closed by the swap: this only waits for its thread
    assert not old.alive and new.engine.alive


def test_full_engine_is_503_through_the_plane(plane: DataPlane) -> None:
    tiny = plane.generation_model("tiny")

    async def run() -> None:
        long = SamplingParams(max_tokens=400, ignore_eos=True)
        streams = [await plane.generate(tiny, GenerationRequest((1, 2), long)) for _ in range(6)]
        with pytest.raises(ServiceUnavailableError, match="MININN_MAX_WAITING_SEQUENCES=2") as info:
            await plane.generate(tiny, GenerationRequest((1, 2), long))
        assert info.value.status_code == 503 and info.value.headers == {"Retry-After": "1"}
        for stream in streams:
            await stream.aclose()

    asyncio.run(run())
