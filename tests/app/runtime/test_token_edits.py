"""Per-token edits and captures in the engine, on the tiny causal LM (fast; float64).

References are the plain loop (the whole sequence through ``forward``, argmax) with a forward
hook doing the same edit; the engine runs prefill over a cache and batched decode steps whose
module outputs are ``(batch, features)`` rows, so these tests also check the row mapping.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from _tiny_lm import TinyGenerator, tiny_generator

import mininn
from app.errors import UnprocessableError
from app.runtime.generation import GenerationRequest, GenerationResult, TokenEvent
from app.runtime.generation_engine import GenerationEngine
from app.runtime.sampling import SamplingParams
from app.runtime.token_edits import SelectorError, parse_positions, parse_steps, step_of
from app.v2.generation_fields import token_fields

MODULE = "blocks.0.out"
VECTOR = np.random.default_rng(3).standard_normal(64).astype(np.float32)
VECTORS = {"push": {MODULE: VECTOR}}


def lookup(name: str) -> dict[str, np.ndarray]:
    if name not in VECTORS:
        raise UnprocessableError(f"no steering vector '{name}'")
    return VECTORS[name]


@pytest.fixture
def engine() -> Iterator[GenerationEngine]:
    made = GenerationEngine("tiny", 1, tiny_generator(seed=5), max_running=8)
    yield made
    made.close(wait=10)


def request(prompt: list[int], fields: dict[str, Any], tokens: int = 8) -> GenerationRequest:
    sampling = SamplingParams(max_tokens=tokens, temperature=0.0, ignore_eos=True)
    return GenerationRequest(tuple(prompt), sampling, **token_fields(fields, lookup))


async def collect(
    engine: GenerationEngine, req: GenerationRequest
) -> tuple[list[TokenEvent], GenerationResult]:
    items = [item async for item in engine.submit(req)]
    return items[:-1], items[-1]


def reference(
    generator: TinyGenerator, prompt: list[int], tokens: int, edit: Callable[[Any, int], Any] | None = None
) -> tuple[list[int], list[np.ndarray]]:
    """Greedy tokens by the plain loop with ``edit(output, prompt_length)`` hooked on MODULE, and
    MODULE's (edited) output at the newest position at every step."""
    module = generator.module
    seen: list[np.ndarray] = []

    def hook(m: Any, args: Any, output: Any) -> Any:
        out = edit(output, len(prompt)) if edit is not None else output
        seen.append(out.numpy()[0, -1].copy())
        return out

    handle = module.blocks[0].out.register_forward_hook(hook)
    ids = list(prompt)
    try:
        with mininn.no_grad():
            for _ in range(tokens):
                ids.append(int(np.argmax(module(mininn.tensor([ids])).numpy()[0, -1])))
    finally:
        handle.remove()
    return ids[len(prompt):], seen


def added(scale: float, where: Callable[[int, int], bool]) -> Callable[[Any, int], Any]:
    """Adds ``scale * VECTOR`` at the positions ``where(position, prompt_length)`` selects."""

    def edit(output: Any, prompt_length: int) -> Any:
        mask = np.array([where(p, prompt_length) for p in range(output.shape[1])], dtype=np.float64)
        addend = mask[None, :, None] * (np.float32(scale) * VECTOR).astype(np.float64)
        return output + mininn.tensor(addend)

    return edit


PROMPT = [256, *b"Steer me"]


@pytest.mark.parametrize(
    ("selectors", "where"),
    [
        ({}, lambda p, n: True),
        ({"steps": "generated"}, lambda p, n: p >= n),
        ({"steps": "prompt"}, lambda p, n: p < n),
        ({"positions": "last"}, lambda p, n: p >= n - 1),
        ({"steps": {"start": 2, "stop": 4}}, lambda p, n: 2 <= step_of(p, n) < 4),
        ({"positions": [0, 3, 10]}, lambda p, n: p in (0, 3, 10)),
    ],
    ids=["all", "generated", "prompt", "last", "range", "positions"],
)
def test_steering_equals_the_plain_loop_with_a_hook(
    engine: GenerationEngine, selectors: dict[str, Any], where: Callable[[int, int], bool]
) -> None:
    steering = [{"name": "push", "scale": 3.0, **selectors}]
    events, result = asyncio.run(collect(engine, request(PROMPT, {"steering": steering})))
    expected, _ = reference(engine.generator, PROMPT, 8, added(3.0, where))
    assert list(result.token_ids) == expected
    assert expected != reference(engine.generator, PROMPT, 8)[0]


def test_interventions_with_an_index_edit_only_those_features(engine: GenerationEngine) -> None:
    fields = {"interventions": [{"module": MODULE, "op": "zero", "index": [0, 5], "steps": "generated"}]}
    _, result = asyncio.run(collect(engine, request(PROMPT, fields)))

    def zero(output: Any, prompt_length: int) -> Any:
        array = output.numpy().copy()
        array[:, prompt_length:, [0, 5]] = 0.0
        return mininn.tensor(array)

    assert list(result.token_ids) == reference(engine.generator, PROMPT, 8, zero)[0]


def test_captures_are_the_edited_output_at_the_newest_position_of_each_step(engine: GenerationEngine) -> None:
    fields = {"steering": [{"name": "push", "scale": 2.0}], "capture": {"modules": [MODULE]}}
    events, result = asyncio.run(collect(engine, request(PROMPT, fields, tokens=5)))
    _, seen = reference(engine.generator, PROMPT, 5, added(2.0, lambda p, n: True))
    for step, event in enumerate(events):
        assert event.captures is not None
        record = event.captures[MODULE]
        assert (record.step, record.positions) == (step, (len(PROMPT) - 1 + step,))
        np.testing.assert_allclose(record.values[0], seen[step], rtol=1e-12, atol=1e-12)
    stats = asyncio.run(collect(engine, request(PROMPT, {"capture": {"modules": [MODULE], "positions": "all",
                                                                      "reduce": "stats"}}, tokens=2)))[0]
    assert stats[0].captures[MODULE].positions == tuple(range(len(PROMPT)))
    assert stats[0].captures[MODULE].stats.shape == (len(PROMPT), 64)


def test_sequences_sharing_decode_steps_each_get_their_own_edits(engine: GenerationEngine) -> None:
    cases = [
        (PROMPT, {}),
        (PROMPT, {"steering": [{"name": "push", "scale": 3.0}]}),
        ([256, *b"Other"], {"steering": [{"name": "push", "scale": -2.0, "positions": "last"}]}),
        ([256, *b"Other"], {}),
        ([256, *b"x"], {"interventions": [{"module": MODULE, "op": "scale", "value": 0.5}]}),
    ]
    alone = [asyncio.run(collect(engine, request(p, f)))[1].token_ids for p, f in cases]

    async def together() -> list[tuple[int, ...]]:
        results = await asyncio.gather(*(collect(engine, request(p, f)) for p, f in cases))
        return [result.token_ids for _, result in results]

    assert asyncio.run(together()) == alone
    assert max(engine.generator.decode_rows) == len(cases)  # they did share decode steps


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"steering": [{"name": "nope"}]}, "no steering vector 'nope'"),
        ({"steering": [{"name": "push", "modules": ["blocks.1.out"]}]}, "not a module of steering vector"),
        ({"steering": [{"name": "push", "scale": "big"}]}, "steering[0].scale must be a finite number"),
        ({"steering": [{"name": "push", "colour": 1}]}, "steering[0].colour is not a known key"),
        ({"interventions": [{"module": "blocks.9", "op": "zero"}]}, "interventions[0].module"),
        ({"interventions": [{"module": MODULE, "op": "add", "value": [1, 2, 3]}]}, "does not broadcast"),
        ({"interventions": [{"module": MODULE, "op": "zero", "index": 99}]}, "does not fit"),
        ({"interventions": [{"module": "blocks.0", "op": "zero"}]}, "per-token output"),
        ({"steering": [{"name": "push", "steps": [8]}]}, "reaches step 8"),
        ({"steering": [{"name": "push", "positions": [30]}]}, "reaches position 30"),
        ({"capture": {"modules": [MODULE], "bins": 0}}, "capture.bins"),
        ({"capture": "nope.module"}, "capture.modules[0]"),
        ({"interventions": "[not json"}, "not valid JSON"),
    ],
)
def test_bad_fields_are_refused_before_the_sequence_is_queued(
    engine: GenerationEngine, fields: dict[str, Any], message: str
) -> None:
    async def submit() -> None:
        engine.submit(request(PROMPT, fields))

    with pytest.raises(UnprocessableError) as caught:
        asyncio.run(submit())
    assert message in caught.value.message
    assert engine.waiting == 0 and engine.running == 0


def test_selectors_read_every_documented_form() -> None:
    assert parse_steps("prompt", "x").selects(0) and not parse_steps("prompt", "x").selects(1)
    assert parse_steps({"start": 1, "stop": 3}, "x").selects(2)
    assert not parse_steps([0, 2], "x").selects(1)
    assert parse_positions("last", "x").selects(4, 5) and not parse_positions("last", "x").selects(3, 5)
    for bad in ({"start": 3, "stop": 3}, [], [-1], "sometimes", {"begin": 1, "stop": 2}):
        with pytest.raises(SelectorError, match="x.steps"):
            parse_steps(bad, "x")
    with pytest.raises(SelectorError, match="x.positions"):
        parse_positions("first", "x")
