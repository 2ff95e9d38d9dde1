from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import mininn
from app.errors import GatewayTimeoutError, ServiceUnavailableError, UnprocessableError
from app.log import request_id_var
from app.runtime.metrics import Metrics
from app.runtime.runner import ModelRunner
from app.runtime.statistics import InferenceStatistics
from models import InputError


class FakeServable:
    """Doubles its input; records where and how it ran."""

    def __init__(self, delay: float = 0.0, error: Exception | None = None) -> None:
        self.delay, self.error = delay, error
        self.calls: list[dict[str, Any]] = []

    def predict(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        self.calls.append(
            {
                "thread": threading.current_thread().name,
                "grad": mininn.is_grad_enabled(),
                "request_id": request_id_var.get(),
            }
        )
        time.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return {"y": inputs["x"] * 2}

    def example_inputs(self, batch_size: int = 1) -> dict[str, np.ndarray]:
        return {"x": np.ones((batch_size, 2), np.float32)}


@pytest.fixture
def executor() -> Iterator[ThreadPoolExecutor]:
    pool = ThreadPoolExecutor(2, thread_name_prefix="mininn-infer")
    yield pool
    pool.shutdown()


def make_runner(servable: FakeServable, executor: ThreadPoolExecutor, max_queue: int = 8) -> ModelRunner:
    return ModelRunner(
        "m", 1, servable, executor, InferenceStatistics("m", 1), max_queue=max_queue, metrics=Metrics()
    )


def test_infer_runs_on_an_inference_thread_without_grad(executor: ThreadPoolExecutor) -> None:
    servable = FakeServable()
    runner = make_runner(servable, executor)

    async def main() -> dict[str, np.ndarray]:
        request_id_var.set("req-7")
        return await runner.infer({"x": np.array([[1.0, 2.0]], np.float32)}, batch_size=1)

    out = asyncio.run(main())
    np.testing.assert_array_equal(out["y"], [[2.0, 4.0]])
    assert servable.calls == [{"thread": servable.calls[0]["thread"], "grad": False, "request_id": "req-7"}]
    assert servable.calls[0]["thread"].startswith("mininn-infer")
    assert mininn.is_grad_enabled()


def test_infer_counts_executions(executor: ThreadPoolExecutor) -> None:
    runner = make_runner(FakeServable(), executor)
    asyncio.run(runner.infer({"x": np.ones((3, 2), np.float32)}, batch_size=3))
    stats = runner._statistics.as_dict()
    assert (stats["execution_count"], stats["inference_count"]) == (1, 3)
    assert stats["inference_stats"]["compute_infer"]["count"] == 1
    assert stats["batch_stats"][0]["batch_size"] == 3


def test_a_request_past_its_deadline_does_not_run(executor: ThreadPoolExecutor) -> None:
    servable = FakeServable()
    runner = make_runner(servable, executor)
    with pytest.raises(
        GatewayTimeoutError, match="request for model 'm' waited 0 ms in the queue, passed its deadline"
    ):
        asyncio.run(runner.infer({"x": np.ones((1, 2), np.float32)}, deadline=time.monotonic() - 1))
    assert servable.calls == []


def test_a_full_queue_refuses_with_503(executor: ThreadPoolExecutor) -> None:
    runner = make_runner(FakeServable(delay=0.3), executor, max_queue=1)

    async def main() -> list[Any]:
        x = {"x": np.ones((1, 2), np.float32)}
        return await asyncio.gather(runner.infer(x), runner.infer(x), return_exceptions=True)

    first, second = asyncio.run(main())
    assert isinstance(first, dict)
    assert isinstance(second, ServiceUnavailableError)
    assert second.message == "model 'm' already has 1 requests waiting (MININN_MAX_QUEUE); retry later"
    assert second.headers == {"Retry-After": "1"}
    assert runner.pending == 0


def test_input_errors_of_the_model_are_422(executor: ThreadPoolExecutor) -> None:
    runner = make_runner(FakeServable(error=InputError("input 'text' is empty")), executor)
    with pytest.raises(UnprocessableError, match="model 'm' rejected the inputs: input 'text' is empty"):
        asyncio.run(runner.infer({"x": np.ones((1, 2), np.float32)}))


def test_other_errors_propagate(executor: ThreadPoolExecutor) -> None:
    runner = make_runner(FakeServable(error=ZeroDivisionError("bug")), executor)
    with pytest.raises(ZeroDivisionError):
        asyncio.run(runner.infer({"x": np.ones((1, 2), np.float32)}))
    assert runner.pending == 0


def test_warm_up_runs_the_example_inputs(executor: ThreadPoolExecutor) -> None:
    servable = FakeServable()
    make_runner(servable, executor).warm_up()
    assert len(servable.calls) == 1 and servable.calls[0]["grad"] is False
