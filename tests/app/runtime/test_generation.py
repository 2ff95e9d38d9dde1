"""The generation engine on a real (tiny) causal model: batching is exact, stops, errors, cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from _tiny_lm import ByteTokenizer, TinyGenerator, greedy_reference, tiny_generator

import mininn
from app.errors import GatewayTimeoutError, ServiceUnavailableError, UnprocessableError
from app.runtime.generation import GenerationError, GenerationRequest, GenerationResult, TokenEvent
from app.runtime.generation_engine import GenerationEngine
from app.runtime.metrics import Metrics
from app.runtime.sampling import SamplingParams

TOKENIZER = ByteTokenizer()


@pytest.fixture
def make_engine() -> Iterator[Callable[..., GenerationEngine]]:
    engines: list[GenerationEngine] = []

    def make(generator: TinyGenerator, **kwargs: Any) -> GenerationEngine:
        engine = GenerationEngine("tiny", 1, generator, **kwargs)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close(wait=10)
        assert not engine.alive


def request(prompt: str, **sampling: Any) -> GenerationRequest:
    return GenerationRequest(tuple(TOKENIZER.encode(prompt)), SamplingParams(**sampling))


async def collect(stream: Any) -> tuple[list[TokenEvent], GenerationResult]:
    events, result = [], None
    async for item in stream:
        if isinstance(item, TokenEvent):
            events.append(item)
        else:
            result = item
    assert isinstance(result, GenerationResult)
    return events, result


def generate(engine: GenerationEngine, req: GenerationRequest) -> tuple[list[TokenEvent], GenerationResult]:
    async def one() -> tuple[list[TokenEvent], GenerationResult]:
        return await collect(engine.submit(req))

    return asyncio.run(one())


async def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.002)


# ---- exactness ------------------------------------------------------------------------------------


def test_greedy_equals_the_argmax_loop_over_the_whole_sequence(make_engine: Callable) -> None:
    generator = tiny_generator()
    engine = make_engine(generator)
    for prompt in ("Hello there", "x"):
        req = request(prompt, max_tokens=40, temperature=0, ignore_eos=True)
        events, result = generate(engine, req)
        want = greedy_reference(generator, list(req.prompt_ids), 40)
        assert list(result.token_ids) == [e.token_id for e in events] == want
        assert result.text == "".join(e.text for e in events) == TOKENIZER.decode(want)
        assert (result.finish_reason, result.prompt_tokens, result.completion_tokens) == (
            "length",
            len(req.prompt_ids),
            40,
        )
    assert generator.live == set()  # every cache released


MIXED = [
    ("Hi", dict(max_tokens=5, temperature=0)),
    ("The quick brown fox", dict(max_tokens=23, temperature=0.8, seed=1)),
    ("0123456789", dict(max_tokens=12, temperature=1.2, top_k=20, seed=2)),
    ("a", dict(max_tokens=30, top_p=0.9, seed=3)),
    ("Once upon a time, in a land", dict(max_tokens=17, min_p=0.1, temperature=1.5, seed=4)),
    ("zzz", dict(max_tokens=9, repetition_penalty=1.3, temperature=0.7, seed=5, logprobs=3)),
    ("naïve 東京", dict(max_tokens=26, presence_penalty=1.0, frequency_penalty=0.5, seed=6, stop=("c.",))),
    ("Greedy with a penalty", dict(max_tokens=14, temperature=0, repetition_penalty=0.8, logprobs=0)),
]


def test_eight_concurrent_streams_each_give_what_they_give_alone(make_engine: Callable) -> None:
    generator = tiny_generator()
    engine = make_engine(generator)
    requests = [request(prompt, **sampling) for prompt, sampling in MIXED]
    alone = [generate(engine, req) for req in requests]
    assert set(generator.decode_rows) == {1}

    async def together() -> list[tuple[list[TokenEvent], GenerationResult]]:
        first = [asyncio.ensure_future(collect(engine.submit(req))) for req in requests[:4]]
        await wait_until(lambda: len(generator.decode_rows) >= 3)  # the others join a running batch
        rest = [asyncio.ensure_future(collect(engine.submit(req))) for req in requests[4:]]
        return await asyncio.gather(*first, *rest)

    generator.decode_rows.clear()
    batched = asyncio.run(together())
    assert max(generator.decode_rows) >= 6, generator.decode_rows  # they did share decode steps
    for (events_a, result_a), (events_b, result_b) in zip(alone, batched, strict=True):
        assert result_b == result_a
        assert [(e.token_id, e.text) for e in events_b] == [(e.token_id, e.text) for e in events_a]
        for a, b in zip(events_a, events_b, strict=True):
            assert [t[:2] for t in b.top_logprobs] == [t[:2] for t in a.top_logprobs]
            if a.logprob is not None:
                np.testing.assert_allclose(b.logprob, a.logprob, rtol=0, atol=1e-12)
    assert {r.finish_reason for _, r in alone} == {"stop", "length"}  # the stop string "c." ended one


def test_seeded_sampling_repeats_and_different_seeds_differ(make_engine: Callable) -> None:
    engine = make_engine(tiny_generator())
    a = generate(engine, request("seed", max_tokens=20, seed=11))[1].token_ids
    b = generate(engine, request("seed", max_tokens=20, seed=11))[1].token_ids
    c = generate(engine, request("seed", max_tokens=20, seed=12))[1].token_ids
    assert a == b != c


def test_logprobs_are_the_log_softmax_of_the_raw_logits(make_engine: Callable) -> None:
    generator = tiny_generator()
    engine = make_engine(generator)
    req = request("logprobs", max_tokens=4, temperature=0.9, repetition_penalty=1.5, seed=3, logprobs=5)
    events, result = generate(engine, req)
    ids = list(req.prompt_ids) + list(result.token_ids)
    with mininn.no_grad():
        logits = generator.module(mininn.tensor([ids])).numpy()[0]
    for step, event in enumerate(events):
        row = logits[len(req.prompt_ids) - 1 + step]
        want = row - row.max() - np.log(np.exp(row - row.max()).sum())
        np.testing.assert_allclose(event.logprob, want[event.token_id], atol=1e-9)
        best = np.argsort(-want, kind="stable")[:5]
        assert [t[0] for t in event.top_logprobs] == best.tolist()
        np.testing.assert_allclose([t[2] for t in event.top_logprobs], want[best], atol=1e-9)
        assert [t[1] for t in event.top_logprobs] == [TOKENIZER.decode([int(i)]) for i in best]


# ---- stops ----------------------------------------------------------------------------------------


def test_stop_string_across_token_boundaries_is_excluded(make_engine: Callable) -> None:
    engine = make_engine(tiny_generator())
    full = generate(engine, request("stop strings", max_tokens=40, temperature=0, ignore_eos=True))[1]
    stop = full.text[6:9]  # three one-byte tokens
    cut = full.text.find(stop)
    events, result = generate(
        engine, request("stop strings", max_tokens=40, temperature=0, ignore_eos=True, stop=(stop, "never"))
    )
    assert result.finish_reason == "stop"
    assert result.text == "".join(e.text for e in events) == full.text[:cut]
    assert result.token_ids == full.token_ids[: cut + 3]  # ends with the token that completed it
    assert events[-1].text == "" and events[-2].text == ""  # held back while it could be the stop string


def test_end_of_sequence_and_stop_token_ids_stop_unless_ignored(make_engine: Callable) -> None:
    generator = tiny_generator()
    full = generate(make_engine(generator), request("eos", max_tokens=30, temperature=0, ignore_eos=True))[1]
    token = full.token_ids[4]
    first = full.token_ids.index(token)
    by_id = generate(
        make_engine(generator), request("eos", max_tokens=30, temperature=0, stop_token_ids=(token,))
    )
    assert by_id[1].token_ids == full.token_ids[: first + 1]
    assert by_id[1].finish_reason == "stop"

    class EosTokenizer(ByteTokenizer):
        eos_token_ids = (token,)

    generator.tokenizer = EosTokenizer()
    eos_engine = make_engine(generator)
    stopped = generate(eos_engine, request("eos", max_tokens=30, temperature=0))[1]
    assert (stopped.token_ids, stopped.finish_reason) == (full.token_ids[: first + 1], "stop")
    ignored = generate(eos_engine, request("eos", max_tokens=30, temperature=0, ignore_eos=True))[1]
    assert (ignored.token_ids, ignored.finish_reason) == (full.token_ids, "length")


def test_without_max_tokens_it_generates_up_to_the_context_length(make_engine: Callable) -> None:
    engine = make_engine(tiny_generator(context_length=40))
    events, result = generate(engine, request("context", temperature=0, ignore_eos=True))
    assert (result.finish_reason, result.completion_tokens, len(events)) == ("length", 32, 32)


# ---- bad requests ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt_ids", "sampling", "message"),
    [
        ((), {}, "the prompt for model 'tiny' is empty"),
        (
            tuple(range(40)),
            {},
            "the prompt has 40 tokens, and model 'tiny' has a context length of 40 tokens",
        ),
        (
            tuple(range(30)),
            {"max_tokens": 11},
            r"context length of 40 tokens, and this request asks for 41 \(30 in the prompt, max_tokens 11 "
            r"to generate\): lower max_tokens to at most 10",
        ),
        (
            (1, 258, 2),
            {},
            r"prompt\[1\] is token id 258, outside the vocabulary of model 'tiny' \(0 to 257\)",
        ),
        ((1, 2), {"stop_token_ids": (300,)}, r"stop_token_ids\[0\] is token id 300"),
    ],
)
def test_requests_that_do_not_fit_are_refused_before_anything_runs(
    make_engine: Callable, prompt_ids: tuple, sampling: dict, message: str
) -> None:
    generator = tiny_generator(context_length=40)
    engine = make_engine(generator)

    async def submit() -> None:
        engine.submit(GenerationRequest(prompt_ids, SamplingParams(**sampling)))

    with pytest.raises(UnprocessableError, match=message):
        asyncio.run(submit())
    assert (engine.waiting, engine.running, generator.live) == (0, 0, set())
    assert (
        generate(engine, GenerationRequest((1, 2), SamplingParams(max_tokens=38)))[1].completion_tokens <= 38
    )


def test_stop_strings_need_a_tokenizer(make_engine: Callable) -> None:
    engine = make_engine(tiny_generator(tokenizer=False))

    async def submit() -> None:
        engine.submit(GenerationRequest((1, 2), SamplingParams(stop=("x",))))

    with pytest.raises(UnprocessableError, match="no tokenizer .*use stop_token_ids"):
        asyncio.run(submit())
    events, result = generate(engine, GenerationRequest((1, 2), SamplingParams(max_tokens=3)))
    assert [e.text for e in events] == ["", "", ""] and result.text == ""


# ---- failures ---------------------------------------------------------------------------------------

POISON = TOKENIZER.encode("poison")


def poisoned(tokens: list[int]) -> bool:
    return tokens[: len(POISON)] == POISON and len(tokens) >= len(POISON) + 4


def test_a_model_raising_mid_generation_ends_only_that_stream(make_engine: Callable) -> None:
    generator = tiny_generator(fail_when=poisoned)
    engine = make_engine(generator)
    healthy = [
        request(p, max_tokens=12, seed=i, temperature=0.9) for i, p in enumerate(["one", "two two", "3"])
    ]
    alone = [generate(engine, req)[1] for req in healthy]

    async def together() -> list[Any]:
        tasks = [asyncio.ensure_future(collect(engine.submit(req))) for req in healthy]
        stream = engine.submit(GenerationRequest(tuple(POISON), SamplingParams(max_tokens=12)))
        seen = []
        with pytest.raises(GenerationError, match=r"failed while generating \(after 4 tokens\).*on purpose"):
            async for item in stream:
                seen.append(item)
        assert len(seen) == 4
        return [result for _, result in await asyncio.gather(*tasks)]

    assert asyncio.run(together()) == alone
    assert generate(engine, healthy[0])[1] == alone[0]  # the engine keeps serving
    assert generator.live == set()


def test_a_prompt_the_model_fails_on_ends_with_an_error_and_frees_its_place(make_engine: Callable) -> None:
    generator = tiny_generator(fail_when=lambda tokens: tokens[:2] == [256, 33])
    engine = make_engine(generator, max_running=1)

    async def run() -> None:
        with pytest.raises(GenerationError, match="after 0 tokens"):
            await collect(engine.submit(request("!bad", max_tokens=5)))

    asyncio.run(run())
    assert generate(engine, request("good", max_tokens=3))[1].completion_tokens == 3
    assert engine.running == 0 and generator.live == set()


# ---- cancellation, backpressure, deadlines ------------------------------------------------------------


def test_a_cancelled_stream_frees_its_place_for_a_waiting_request(make_engine: Callable) -> None:
    generator = tiny_generator(context_length=1024)
    engine = make_engine(generator, max_running=1)

    async def run() -> None:
        long = engine.submit(request("long", max_tokens=1000, ignore_eos=True))
        waiting = asyncio.ensure_future(collect(engine.submit(request("short", max_tokens=5))))
        for _ in range(3):
            await long.__anext__()
        assert engine.waiting == 1
        await long.aclose()
        _, result = await asyncio.wait_for(waiting, 30)
        assert result.completion_tokens == 5

    asyncio.run(run())
    assert len(generator.decode_rows) < 100  # far fewer steps than the long one alone would take
    assert set(generator.decode_rows) == {1}
    assert generator.live == set()


def test_cancelling_the_reading_task_cancels_the_sequence(make_engine: Callable) -> None:
    generator = tiny_generator(context_length=1024)
    engine = make_engine(generator)

    async def run() -> None:
        stream = engine.submit(request("task", max_tokens=1000, ignore_eos=True))
        task = asyncio.ensure_future(collect(stream))
        await wait_until(lambda: len(generator.decode_rows) >= 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_until(lambda: engine.running == 0 and not generator.live)

    asyncio.run(run())
    assert len(generator.decode_rows) < 500


def test_full_engine_answers_503_with_retry_after(make_engine: Callable) -> None:
    generator = tiny_generator(context_length=1024)
    engine = make_engine(generator, max_running=1, max_waiting=1)

    async def run() -> None:
        running = engine.submit(request("a", max_tokens=1000, ignore_eos=True))
        waiting = engine.submit(request("b", max_tokens=2))
        await running.__anext__()
        with pytest.raises(ServiceUnavailableError, match="MININN_MAX_SEQUENCES=1") as info:
            engine.submit(request("c", max_tokens=2))
        assert info.value.headers["Retry-After"] == "1"
        await running.aclose()
        _, result = await collect(waiting)
        assert result.completion_tokens == 2
        _, result = await collect(engine.submit(request("c", max_tokens=2)))  # room again
        assert result.completion_tokens == 2

    asyncio.run(run())


def test_deadlines_end_running_and_waiting_sequences_with_504(make_engine: Callable) -> None:
    generator = tiny_generator(context_length=4096)
    engine = make_engine(generator, max_running=1)

    async def run() -> None:
        slow = engine.submit(
            GenerationRequest(tuple(TOKENIZER.encode("a")), SamplingParams(ignore_eos=True), timeout_s=0.3)
        )
        queued = engine.submit(GenerationRequest((1,), SamplingParams(max_tokens=2), timeout_s=0.05))
        started = asyncio.get_running_loop().time()
        with pytest.raises(GatewayTimeoutError, match="deadline of 0.05 s after 0 tokens"):
            await collect(queued)
        assert asyncio.get_running_loop().time() - started < 0.25  # not only once the slow one left
        count = 0
        with pytest.raises(GatewayTimeoutError, match=r"deadline of 0.3 s after \d+ tokens"):
            async for _ in slow:
                count += 1
        assert 0 < count < 4000

    asyncio.run(run())
    assert generator.live == set()


def test_closed_engine_refuses_new_sequences_and_finishes_running_ones(make_engine: Callable) -> None:
    engine = make_engine(tiny_generator())

    async def run() -> None:
        stream = engine.submit(request("close", max_tokens=20, ignore_eos=True))
        engine.close()
        with pytest.raises(ServiceUnavailableError, match="version 1 was unloaded"):
            engine.submit(request("late", max_tokens=2))
        _, result = await collect(stream)
        assert result.completion_tokens == 20

    asyncio.run(run())
    engine.close(wait=10)
    assert not engine.alive


# ---- metrics --------------------------------------------------------------------------------------


def test_metrics_count_tokens_and_latencies(make_engine: Callable) -> None:
    metrics = Metrics()
    engine = make_engine(tiny_generator(), metrics=metrics)
    req = request("metrics", max_tokens=6, ignore_eos=True)
    generate(engine, req)

    def value(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, {"model": "tiny", **labels})

    assert value("mininn_prompt_tokens_total") == len(req.prompt_ids)
    assert value("mininn_generation_tokens_total") == 6
    assert value("mininn_time_to_first_token_seconds_count") == 1
    assert value("mininn_inter_token_latency_seconds_count") == 5
    assert value("mininn_num_requests_running") == 0
    assert value("mininn_num_requests_waiting") == 0
    assert value("mininn_generation_requests_total", finish_reason="length") == 1


def test_bad_logits_end_only_that_stream(make_engine: Callable) -> None:
    generator = tiny_generator()
    real_prefill = generator.prefill

    def prefill(seq: Any, token_ids: list[int]) -> np.ndarray:
        logits = real_prefill(seq, token_ids)
        if token_ids[1:4] == list(b"nan"):
            return np.full_like(logits, np.nan)
        return logits[:-1] if token_ids[1:6] == list(b"short") else logits

    generator.prefill = prefill  # type: ignore[method-assign]
    engine = make_engine(generator)

    async def run() -> None:
        with pytest.raises(GenerationError, match="FloatingPointError: the model's logits hold NaN"):
            await collect(engine.submit(request("nan", max_tokens=3)))
        with pytest.raises(GenerationError, match="returned 257 logits for a token; its vocab_size is 258"):
            await collect(engine.submit(request("short", max_tokens=3)))

    asyncio.run(run())
    assert generate(engine, request("fine", max_tokens=3))[1].completion_tokens == 3
    assert generator.live == set()
