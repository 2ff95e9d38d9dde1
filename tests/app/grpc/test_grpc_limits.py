"""Limits over gRPC: a full queue, a request's own deadline, and MININN_MAX_REQUEST_BYTES.

A server of its own: one inference thread, two admitted requests per model
(``MININN_MAX_QUEUE=2``), 4 KiB requests and a 1 s default deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.grpc.aio as aioclient
from _app_support import wait_until
from _grpc_support import GrpcServer, start_grpc_server
from tritonclient.utils import InferenceServerException

LIMIT = 4096


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrpcServer]:
    env = {
        "MININN_INFERENCE_THREADS": "1",
        "MININN_MAX_QUEUE": "2",
        "MININN_MAX_REQUEST_BYTES": str(LIMIT),
        "MININN_REQUEST_TIMEOUT_MS": "1000",
    }
    yield from start_grpc_server(tmp_path_factory.mktemp("grpc-limits"), **env)


def _input(array: np.ndarray) -> Any:
    tensor = aioclient.InferInput("x", list(array.shape), "FP32")
    tensor.set_data_from_numpy(array)
    return tensor


async def _outcome(call: Any) -> tuple[str, str]:
    try:
        await call
    except InferenceServerException as exc:
        return exc.status(), exc.message()
    return "OK", ""


def test_a_full_queue_is_unavailable_and_a_passed_timeout_is_deadline_exceeded(limited: GrpcServer) -> None:
    async def run() -> tuple[tuple[str, str], list[tuple[str, str]]]:
        async with aioclient.InferenceServerClient(limited.url) as client:
            parked = [_input(np.full((1, 2), -1.0, np.float32))]  # sleepy sleeps 2 s on it
            slow = asyncio.ensure_future(_outcome(client.infer("sleepy", parked, client_timeout=20)))
            await asyncio.sleep(0.5)  # the slow forward holds the only inference thread
            quick = [_input(np.ones((1, 2), np.float32)) for _ in range(3)]
            others = await asyncio.gather(
                *(_outcome(client.infer("sleepy", [x], timeout=200_000, client_timeout=20)) for x in quick)
            )
            return await slow, sorted(others)

    slow, others = asyncio.run(run())
    assert slow == ("OK", "")
    statuses = [status for status, _ in others]
    assert statuses == ["StatusCode.DEADLINE_EXCEEDED", "StatusCode.UNAVAILABLE", "StatusCode.UNAVAILABLE"]
    full = "model 'sleepy' already has 2 requests waiting (MININN_MAX_QUEUE); retry later"
    assert others[1][1] == others[2][1] == full


def test_a_call_without_deadline_or_timeout_gets_the_servers_default(limited: GrpcServer) -> None:
    async def run() -> tuple[tuple[str, str], tuple[str, str]]:
        async with aioclient.InferenceServerClient(limited.url) as client:
            parked = [_input(np.full((1, 2), -1.0, np.float32))]  # sleepy sleeps 2 s on it
            slow = asyncio.ensure_future(_outcome(client.infer("sleepy", parked, timeout=10_000_000)))
            await asyncio.sleep(0.5)
            waiting = await _outcome(client.infer("sleepy", [_input(np.ones((1, 2), np.float32))]))
            return await slow, waiting

    slow, waiting = asyncio.run(run())
    assert slow == ("OK", "")  # its own 10 s timeout
    assert waiting[0] == "StatusCode.DEADLINE_EXCEEDED", waiting  # MININN_REQUEST_TIMEOUT_MS=1000 passed


def test_a_message_over_max_request_bytes_is_resource_exhausted(limited: GrpcServer) -> None:
    with grpcclient.InferenceServerClient(limited.url) as client:
        small = grpcclient.InferInput("x", [1, 2], "FP32")
        small.set_data_from_numpy(np.ones((1, 2), np.float32))
        assert client.infer("sleepy", [small]).as_numpy("y").tolist() == [[1.0, 1.0]]
        big = grpcclient.InferInput("x", [LIMIT, 2], "FP32")
        big.set_data_from_numpy(np.ones((LIMIT, 2), np.float32))
        for compression in (None, "gzip"):  # gzip: small on the wire, over the limit once inflated
            with pytest.raises(InferenceServerException) as caught:
                client.infer("sleepy", [big], compression_algorithm=compression)
            assert caught.value.status() == "StatusCode.RESOURCE_EXHAUSTED", caught.value.message()


def test_two_workers_share_the_grpc_port_and_it_is_logged(tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("grpc-workers")
    for server in start_grpc_server(folder, MININN_WORKERS="2", MININN_LOG_LEVEL="info"):  # SO_REUSEPORT
        # both workers come up: each binds the shared port (without SO_REUSEPORT the second bind
        # fails its start-up with "cannot listen for gRPC"), then loads the model in the background;
        # a worker still loading answers UNAVAILABLE, as Triton does, so wait for both loads first
        def both_loaded(path=folder / "server.log") -> bool:
            return path.read_text().count("model mlp version 1 ready") == 2

        wait_until(both_loaded, 60, "both workers to load mlp")
        for _ in range(8):  # a connection per client: the kernel picks a worker for each
            with grpcclient.InferenceServerClient(server.url) as client:
                tensor = grpcclient.InferInput("input", [1, 4], "FP32")
                tensor.set_data_from_numpy(np.ones((1, 4), np.float32))
                assert client.infer("mlp", [tensor]).as_numpy("output").shape == (1, 3)
        log = (folder / "server.log").read_text()
        assert "Traceback" not in log and "cannot listen for gRPC" not in log, log
        assert f"V2 gRPC (inference.GRPCInferenceService) at {server.url}" in log  # beside the HTTP address
        log = (folder / "server.log").read_text()
        assert log.count("Application startup complete") == 2, log
        assert "cannot listen for gRPC" not in log and "Traceback" not in log, log
