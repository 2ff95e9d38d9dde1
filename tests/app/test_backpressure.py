"""Batching and backpressure over HTTP, on a real uvicorn server on 127.0.0.1.

The server runs in a thread of the test process, so the test architecture
``test-nap`` registered here is visible to it: ``nap`` returns its input, and a
forward whose first value is negative waits until the test opens :data:`GATE`.
A test "parks" the model with such a request, queues others behind it (and
waits until the queue holds them), opens the gate, and reads the model's
statistics to see which forwards ran.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import uvicorn
from _app_support import binary_request, free_port, split_binary_response, wait_until, write_model

import mininn
import models
from app import Settings, create_app
from mininn import nn
from models.signature import Signature, TensorSpec

GATE = threading.Event()  # parked forwards wait for it
PARKED = threading.Event()  # set when a parked forward has started


@dataclass(frozen=True)
class NapConfig:
    seconds: float = 10.0  # longest a parked forward waits for the gate


class Nap(nn.Module):
    """``x * gain`` (gain 1); a forward whose first value is negative waits for :data:`GATE`."""

    def __init__(self, config: NapConfig) -> None:
        super().__init__()
        self.seconds = config.seconds
        self.gain = nn.Parameter(mininn.ones(1))

    def forward(self, x: mininn.Tensor) -> mininn.Tensor:
        if float(x.reshape(-1)[0]) < 0:
            PARKED.set()
            GATE.wait(self.seconds)
        return x * self.gain


@pytest.fixture
def repository(tmp_path: Path) -> Iterator[Path]:
    """``nap`` (batched, any row width), ``nap-alone`` (``dynamic_batching: false``)."""
    models.register(
        models.Architecture(
            name="test-nap",
            config_cls=NapConfig,
            build=Nap,
            signature=lambda c: Signature(
                [TensorSpec("x", "FP32", (-1, -1))], [TensorSpec("y", "FP32", (-1, -1))]
            ),
        ),
        replace=True,
    )
    root = tmp_path / "repository"
    weights = {1: {"gain": np.ones(1, np.float32)}}
    write_model(root, "nap", weights, {"architecture": "test-nap", "batch_delay_ms": 0})
    write_model(root, "nap-alone", weights, {"architecture": "test-nap", "dynamic_batching": False})
    yield root
    models.unregister("test-nap")


@contextlib.contextmanager
def live_server(repository: Path, **settings: Any) -> Iterator[str]:
    """A uvicorn server on a free port of 127.0.0.1 in a thread; yields its base URL."""
    app = create_app(Settings(model_repository=repository, seed_repository=False, **settings))
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: is_ready(base), 30, "start-up")
        yield base
    finally:
        server.should_exit = True
        thread.join(15)


def is_ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/v2/health/ready", timeout=2).status_code == 200
    except httpx.HTTPError:  # not listening yet
        return False


def body(*rows: list[float]) -> dict[str, Any]:
    data = np.array(rows, np.float32)
    return {
        "inputs": [
            {"name": "x", "shape": list(data.shape), "datatype": "FP32", "data": data.ravel().tolist()}
        ]
    }


def post(base: str, model: str, payload: dict[str, Any], **kwargs: Any) -> httpx.Response:
    return httpx.post(f"{base}/v2/models/{model}/infer", json=payload, timeout=10, **kwargs)


@contextlib.contextmanager
def parked(base: str, model: str = "nap") -> Iterator[None]:
    """The model busy with a forward that ends when the block does."""
    GATE.clear()
    PARKED.clear()
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(post, base, model, {**body([-1.0, 0.0]), "parameters": {"timeout": 20_000_000}})
        assert PARKED.wait(10), "the parked request never started"
        try:
            yield
        finally:
            GATE.set()
        assert first.result().status_code == 200


def wait_for_queue(base: str, model: str, depth: int) -> None:
    """Until ``depth`` requests wait for the model."""
    wait_until(
        lambda: metric(base, "mininn_queue_depth", model=model, version="1") == depth,
        10,
        f"{depth} requests waiting for {model}",
    )


def statistics(base: str, model: str = "nap") -> dict[str, Any]:
    return httpx.get(f"{base}/v2/models/{model}/stats").json()["model_stats"][0]


def metric(base: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{key}="{value}"' for key, value in labels.items())
    for line in httpx.get(f"{base}/metrics").text.splitlines():
        if line.startswith(f"{name}{{{wanted}}} "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_requests_that_arrive_during_a_forward_share_the_next_one_and_get_their_own_rows(
    repository: Path,
) -> None:
    rows = [[[1.0, 2.0]], [[3.0, 4.0], [5.0, 6.0]], [[7.0, 8.0]], [[9.0, 10.0], [11.0, 12.0]]]
    binary = [binary_request({"x": np.array(r, np.float32)}, outputs=["y"]) for r in rows[2:]]
    url = "/v2/models/nap/infer"
    with live_server(repository) as base, ThreadPoolExecutor(len(rows)) as pool:
        with parked(base):
            json_futures = [pool.submit(post, base, "nap", body(*r)) for r in rows[:2]]
            binary_futures = [
                pool.submit(httpx.post, base + url, content=c, headers=h, timeout=10) for c, h in binary
            ]
            wait_for_queue(base, "nap", 4)
        json_answers = [f.result() for f in json_futures]
        binary_answers = [f.result() for f in binary_futures]
        stats = statistics(base)
        batch_rows = metric(base, "mininn_batch_size_sum", model="nap", version="1")
    for request_rows, answer in zip(rows[:2], json_answers):
        assert answer.status_code == 200, answer.text
        (output,) = answer.json()["outputs"]
        assert output["shape"] == [len(request_rows), 2]
        assert output["data"] == [v for row in request_rows for v in row]
    for request_rows, answer in zip(rows[2:], binary_answers):
        assert answer.status_code == 200, answer.text
        length = int(answer.headers["inference-header-content-length"])
        np.testing.assert_array_equal(split_binary_response(answer.content, length)[1]["y"], request_rows)
    assert stats["execution_count"] == 2  # the parked forward, then one batch of the four requests
    assert stats["inference_count"] == 1 + 6
    assert batch_rows == 1 + 6


def test_requests_of_different_widths_run_in_different_batches(repository: Path) -> None:
    widths = [2, 3, 2, 3, 4]
    with live_server(repository) as base, ThreadPoolExecutor(len(widths)) as pool:
        with parked(base):
            futures = [pool.submit(post, base, "nap", body([float(w)] * w)) for w in widths]
            wait_for_queue(base, "nap", len(widths))
        answers = [f.result() for f in futures]
        stats = statistics(base)
    for width, answer in zip(widths, answers):
        assert answer.status_code == 200, answer.text
        assert answer.json()["outputs"][0]["data"] == [float(width)] * width
    assert stats["execution_count"] == 1 + 3  # parked, then one batch per width


def test_a_model_with_dynamic_batching_off_runs_every_request_alone(repository: Path) -> None:
    with live_server(repository, inference_threads=1) as base, ThreadPoolExecutor(3) as pool:
        with parked(base, "nap-alone"):
            futures = [pool.submit(post, base, "nap-alone", body([v, v])) for v in (1.0, 2.0, 3.0)]
            wait_for_queue(base, "nap-alone", 3)
        answers = [f.result() for f in futures]
        stats = statistics(base, "nap-alone")
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert stats["execution_count"] == 4


def test_the_config_reports_each_models_batching(repository: Path) -> None:
    with live_server(repository, batch_delay_ms=1.5, max_queue=9, request_timeout_ms=2000) as base:
        batched = httpx.get(f"{base}/v2/models/nap/config").json()
        alone = httpx.get(f"{base}/v2/models/nap-alone/config").json()
    assert batched["max_batch_size"] == 32
    assert batched["dynamic_batching"] == {
        "preferred_batch_size": [],
        "max_queue_delay_microseconds": 0,  # model.json's batch_delay_ms: 0 beats MININN_BATCH_DELAY_MS
        "default_queue_policy": {
            "timeout_action": "REJECT",
            "default_timeout_microseconds": 2_000_000,
            "allow_timeout_override": True,
            "max_queue_size": 9,
        },
    }
    assert alone["max_batch_size"] == 32
    assert "dynamic_batching" not in alone


@pytest.mark.parametrize("model", ["nap", "nap-alone"])
def test_a_full_queue_answers_503_with_retry_after_at_once(repository: Path, model: str) -> None:
    with live_server(repository, max_queue=2, inference_threads=1) as base, ThreadPoolExecutor(1) as pool:
        with parked(base, model):
            waiting = pool.submit(post, base, model, body([1.0, 1.0]))
            wait_for_queue(base, model, 1)
            refused = post(base, model, body([2.0, 2.0]))  # while the gate is shut: answered at once
        assert waiting.result().status_code == 200
        rejected = metric(base, "mininn_queue_rejections_total", model=model, reason="queue_full")
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json() == {
        "error": f"model '{model}' already has 2 requests waiting (MININN_MAX_QUEUE); retry later"
    }
    assert rejected == 1


@pytest.mark.parametrize("model", ["nap", "nap-alone"])
def test_a_request_past_its_timeout_parameter_gets_504_at_its_deadline_and_never_runs(
    repository: Path, model: str
) -> None:
    with live_server(repository, inference_threads=1) as base:
        with parked(base, model):
            started = time.monotonic()
            late = post(base, model, {**body([5.0, 5.0]), "parameters": {"timeout": 100_000}})
            elapsed = time.monotonic() - started
        stats = statistics(base, model)
        dropped = metric(base, "mininn_queue_rejections_total", model=model, reason="timeout")
    assert late.status_code == 504  # while the model was still busy
    message = late.json()["error"]
    assert message.startswith(f"request for model '{model}' waited ")
    assert message.endswith(
        " ms in the queue, passed its deadline, and was dropped before it ran; retry later, or "
        "raise the request's 'timeout' parameter (microseconds) or MININN_REQUEST_TIMEOUT_MS"
    )
    assert elapsed >= 0.09
    assert stats["execution_count"] == 1  # only the parked forward ran
    assert dropped == 1


def test_the_default_timeout_comes_from_the_settings(repository: Path) -> None:
    with live_server(repository, request_timeout_ms=100) as base, parked(base):
        late = post(base, "nap", body([5.0, 5.0]))
    assert late.status_code == 504
    assert "passed its deadline, and was dropped before it ran" in late.json()["error"]


def send_and_hang_up(base: str, payload: dict[str, Any]) -> None:
    """Send a whole inference request on a raw socket; close it once the server has queued it."""
    host, port = base.removeprefix("http://").split(":")
    content = json.dumps(payload).encode()
    head = (
        f"POST /v2/models/nap/infer HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(content)}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(head + content)
        wait_for_queue(base, "nap", 1)


def test_a_client_that_disconnects_while_its_request_waits_is_dropped_before_compute(
    repository: Path,
) -> None:
    with live_server(repository) as base:
        with parked(base):
            send_and_hang_up(base, body([3.0, 3.0]))
            wait_until(
                lambda: metric(base, "mininn_queue_rejections_total", model="nap", reason="cancelled") == 1,
                5,
                "the disconnect to drop the request",
            )
            depth = metric(base, "mininn_queue_depth", model="nap", version="1")
        stats = statistics(base)
    assert depth == 0
    assert stats["execution_count"] == 1  # only the parked forward ran
    assert stats["inference_count"] == 1


def test_a_client_that_hangs_up_halfway_through_its_body_is_a_499_not_an_error(
    repository: Path, caplog: pytest.LogCaptureFixture
) -> None:
    labels = {"endpoint": "/v2/models/{model_name}/infer", "method": "POST", "model": "nap"}  # sorted
    content = json.dumps(body([1.0, 2.0])).encode()
    with caplog.at_level(logging.INFO, logger="app"), live_server(repository) as base:
        host_port = base.removeprefix("http://")
        head = (
            f"POST /v2/models/nap/infer HTTP/1.1\r\nHost: {host_port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(content)}\r\n\r\n"
        ).encode()
        host, port = host_port.split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(head + content[: len(content) // 2])
            time.sleep(0.2)  # the server is reading the body
        wait_until(
            lambda: metric(base, "mininn_requests_total", **labels, status="499") == 1,
            5,
            "the hang-up to be counted",
        )
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]
    assert any("the client disconnected after sending" in r.getMessage() for r in caplog.records)
