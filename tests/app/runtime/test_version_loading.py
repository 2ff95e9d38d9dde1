"""Loading an older version on request: off the event loop, one load per version, never by readiness.

The server is a real uvicorn server on 127.0.0.1 running in this test's event loop, so a
ticker task on the same loop measures what every request waits for when the loop stalls.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import httpx
import pytest
import uvicorn
from _app_support import MLP_CONFIG, free_port, mlp_weights, write_model
from tritonclient.grpc import service_pb2, service_pb2_grpc

import mininn
import models
from app import Settings, create_app
from app.runtime.manager import ModelManager
from app.runtime.metrics import Metrics
from app.store.repository import ModelRepository

# The zoo's mlp at 21.0M parameters: Linear(1024, 4096), Linear(4096, 4096), Linear(4096, 10).
BIG = {
    "architecture": "mlp",
    "config": {"in_features": 1024, "hidden_sizes": [4096, 4096], "out_features": 10},
}
SMALL_BODY = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}
BIG_BODY = {"inputs": [{"name": "input", "shape": [1, 1024], "datatype": "FP32", "data": [0.5] * 1024}]}
STALL_LIMIT_S = 0.050
TICK_S = 0.005


def _big_repository(root: Path) -> Path:
    """``big`` (21M parameters, versions 1 to 3, the same weights) and ``small`` (the test mlp).

    With the default ``MININN_MAX_OLDER_VERSIONS`` (1), start-up loads versions 3 and 2 of
    ``big``; version 1 loads when a request names it, and then stays loaded.
    """
    module = models.servable(BIG["architecture"], BIG["config"]).module
    assert sum(p.numel() for p in module.parameters()) == 21_020_682
    write_model(root, "big", {}, BIG)
    first = root / "big" / "1" / "weights.safetensors"
    first.parent.mkdir()
    mininn.save(module.state_dict(), first)
    for version in (2, 3):
        (root / "big" / str(version)).mkdir()
        os.link(first, root / "big" / str(version) / "weights.safetensors")  # the same bytes, no copy
    write_model(root, "small", {1: mlp_weights(1)}, {"architecture": "mlp", "config": MLP_CONFIG})
    return root


Scenario = Callable[[httpx.AsyncClient, Any, Any], Awaitable[Any]]


def _serve(repository: Path, scenario: Scenario, **settings: Any) -> Any:
    """Run ``scenario(http, grpc_stub, service)`` on uvicorn and gRPC serving ``repository``, in this loop."""

    async def main() -> Any:
        port, grpc_port = free_port(), free_port()
        app = create_app(
            Settings(model_repository=repository, seed_repository=False, grpc_port=grpc_port, **settings)
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, log_level="warning")
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve())
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
                await _wait_ready(http, serving)
                async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                    stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
                    return await scenario(http, stub, app.state.service)
        finally:
            server.should_exit = True
            await serving

    return asyncio.run(main())


async def _wait_ready(http: httpx.AsyncClient, serving: asyncio.Task[None]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if serving.done():
            raise RuntimeError("the server stopped during start-up")
        try:
            if (await http.get("/v2/health/ready")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.05)
    raise TimeoutError("the server did not get ready in 120 s")


class Ticker:
    """A task that sleeps ``TICK_S`` again and again and records how late each wake-up was."""

    def __init__(self) -> None:
        self.stalls: list[tuple[float, float]] = []  # (when, how long past its due time)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            due = time.perf_counter() + TICK_S
            await asyncio.sleep(TICK_S)
            now = time.perf_counter()
            self.stalls.append((now, now - due))

    def worst_between(self, start: float, end: float) -> tuple[int, float]:
        """How many ticks fell in ``[start, end]`` and the longest stall among them."""
        inside = [late for when, late in self.stalls if start <= when <= end]
        return len(inside), max(inside, default=0.0)


def _count_loads(service: Any) -> list[tuple[int, float]]:
    """Record every version load the manager runs: (version, seconds it took)."""
    loader = service.manager.loader
    loads: list[tuple[int, float]] = []
    original = loader.load

    def counted(name: str, spec: Any, version: int, statistics: Any = None) -> Any:
        loaded = original(name, spec, version, statistics)
        loads.append((version, loaded.load_seconds))
        return loaded

    loader.load = counted
    return loads


@pytest.mark.slow
def test_loading_an_older_version_never_stalls_the_event_loop_and_requests_share_one_load(
    tmp_path: Path,
) -> None:
    async def scenario(http: httpx.AsyncClient, stub: Any, service: Any) -> dict[str, Any]:
        assert [v.state for _, v in sorted(service.manager.entry("big").versions.items())] == [
            "not loaded", "loaded", "loaded"
        ]
        slot = service.manager.entry("big").versions[1]
        assert slot.state == "not loaded"
        loads = _count_loads(service)
        # The first call of a route builds its state (FastAPI: ~0.1-0.4 s on the event loop) and
        # connects the gRPC channel: done here, before the measurement, for the routes used in it.
        await stub.ModelReady(service_pb2.ModelReadyRequest(name="small", version="1"))
        assert (await http.get("/v2/models/small/versions/1/ready")).status_code == 200
        assert (await http.post("/v2/models/small/infer", json=SMALL_BODY)).status_code == 200
        # This process's heap (pytest and its plug-ins, the client, the server) makes each of
        # Python's automatic full collections take ~100 ms, whatever the server does; a server
        # process has a fraction of it. Freeze what exists now, so the ticker measures the load.
        gc.collect()
        gc.freeze()
        try:
            ticker = Ticker()
            ticker.start()
            started = time.perf_counter()
            infer = "/v2/models/big/versions/1/infer"
            wanted = [asyncio.create_task(http.post(infer, json=BIG_BODY)) for _ in range(3)]
            small_latencies: list[float] = []
            ready_answers: list[tuple[int, str]] = []
            grpc_ready: list[bool] = []
            while not all(task.done() for task in wanted):
                sent = time.perf_counter()
                answer = await http.post("/v2/models/small/infer", json=SMALL_BODY)
                assert answer.status_code == 200, answer.text
                small_latencies.append(time.perf_counter() - sent)
                if slot.state == "loading":
                    ready = await http.get("/v2/models/big/versions/1/ready")
                    reply = await stub.ModelReady(service_pb2.ModelReadyRequest(name="big", version="1"))
                    if slot.state == "loading":  # it answered while the version was loading
                        ready_answers.append((ready.status_code, ready.json().get("error", "")))
                        grpc_ready.append(reply.ready)
            finished = time.perf_counter()
            await ticker.stop()
        finally:
            gc.unfreeze()
        responses = [task.result() for task in wanted]
        ticks, worst = ticker.worst_between(started, finished)
        return {
            "statuses": [(r.status_code, r.json().get("model_version")) for r in responses],
            "loads": loads,
            "seconds": finished - started,
            "ticks": ticks,
            "worst": worst,
            "small": small_latencies,
            "ready": ready_answers,
            "grpc_ready": grpc_ready,
        }

    result = _serve(_big_repository(tmp_path / "repository"), scenario)
    assert result["statuses"] == [(200, "1")] * 3
    [(version, seconds)] = result["loads"]  # three requests, one load
    assert version == 1
    # the load was long enough to measure: the ticker ran all through it
    assert seconds >= 0.3, seconds
    assert result["ticks"] >= 0.3 / (2 * TICK_S), result["ticks"]
    assert result["worst"] < STALL_LIMIT_S, f"the event loop stalled {result['worst'] * 1e3:.0f} ms"
    assert len(result["small"]) >= 5 and max(result["small"]) < 0.5, result["small"]
    assert result["ready"] and set(result["ready"]) == {
        (503, "model 'big' version 1 is not ready: loading")
    }
    assert result["grpc_ready"] and not any(result["grpc_ready"])


def test_readiness_and_statistics_of_an_unloaded_version_load_nothing(tmp_path: Path) -> None:
    repository = tmp_path / "repository"
    write_model(repository, "m", {v: mlp_weights(v) for v in (1, 2, 3)})  # 3 and 2 load at start-up

    async def scenario(http: httpx.AsyncClient, stub: Any, service: Any) -> dict[str, Any]:
        slot = service.manager.entry("m").versions[1]
        before = slot.state
        ready = await http.get("/v2/models/m/versions/1/ready")
        stats = await http.get("/v2/models/m/versions/1/stats")
        metadata = await http.get("/v2/models/m/versions/1")
        reply = await stub.ModelReady(service_pb2.ModelReadyRequest(name="m", version="1"))
        stats_reply = await stub.ModelStatistics(service_pb2.ModelStatisticsRequest(name="m", version="1"))
        after = slot.state
        served = await http.post("/v2/models/m/versions/1/infer", json=SMALL_BODY)
        ready_after = await http.get("/v2/models/m/versions/1/ready")
        return {
            "states": (before, after, slot.state),
            "ready": (ready.status_code, ready.json()),
            "stats": (stats.status_code, stats.json()["model_stats"][0]["version"]),
            "metadata": (metadata.status_code, metadata.json()["inputs"]),
            "grpc": (reply.ready, stats_reply.model_stats[0].version),
            "served": (served.status_code, served.json().get("model_version")),
            "ready_after": (ready_after.status_code, ready_after.json()),
        }

    result = _serve(repository, scenario)
    assert result["states"] == ("not loaded", "not loaded", "loaded")
    assert result["ready"] == (
        503,
        {
            "error": "model 'm' version 1 is not ready: not loaded (a request for it, such as "
            "POST /v2/models/m/versions/1/infer, loads it)",
            "name": "m",
            "ready": False,
        },
    )
    assert result["stats"] == (200, "1")
    assert result["metadata"] == (200, [{"name": "input", "datatype": "FP32", "shape": [-1, 4]}])
    assert result["grpc"] == (False, "1")
    assert result["served"] == (200, "1")
    assert result["ready_after"] == (200, {"name": "m", "ready": True})


def test_a_version_that_fails_to_load_says_why_and_loads_again_on_the_next_request(tmp_path: Path) -> None:
    repository = tmp_path / "repository"
    write_model(repository, "m", {1: mlp_weights(1), 2: mlp_weights(2)})
    good = (repository / "m" / "1" / "weights.safetensors").read_bytes()
    (repository / "m" / "1" / "weights.safetensors").write_bytes(good[:100])  # truncated

    async def scenario(http: httpx.AsyncClient, stub: Any, service: Any) -> list[tuple[int, str]]:
        first = await http.post("/v2/models/m/versions/1/infer", json=SMALL_BODY)
        ready = await http.get("/v2/models/m/versions/1/ready")
        newest = await http.post("/v2/models/m/infer", json=SMALL_BODY)
        (repository / "m" / "1" / "weights.safetensors").write_bytes(good)
        again = await http.post("/v2/models/m/versions/1/infer", json=SMALL_BODY)
        return [
            (first.status_code, first.json()["error"]),
            (ready.status_code, ready.json()["error"]),
            (newest.status_code, newest.json()["model_version"]),
            (again.status_code, again.json()["model_version"]),
        ]

    (first, ready, newest, again) = _serve(repository, scenario, max_older_versions=0)
    assert first[0] == 422
    assert first[1].startswith("failed to load 'm' version 1: version 1: reading 1/weights.safetensors: ")
    assert ready[0] == 503
    assert ready[1].startswith(
        "model 'm' version 1 is not ready: not loaded (a request for it, such as POST "
        "/v2/models/m/versions/1/infer, loads it); its last load failed: version 1: reading"
    )
    assert newest == (200, "2")
    assert again == (200, "1")


def test_a_request_that_goes_away_leaves_the_load_running_for_the_others(tmp_path: Path) -> None:
    repository = tmp_path / "repository"
    write_model(repository, "m", {v: mlp_weights(v) for v in (1, 2, 3)})

    async def main() -> tuple[bool, int, list[tuple[int, float]], str]:
        with ThreadPoolExecutor(1) as executor:
            settings = Settings(model_repository=repository, seed_repository=False)
            manager = ModelManager(ModelRepository(repository), settings, executor, Metrics())
            await manager.load_all()
            loads = _count_loads(SimpleNamespace(manager=manager))
            slot = manager.entry("m").versions[1]
            leaving = asyncio.create_task(manager.load_version("m", 1))
            await asyncio.sleep(0)  # the load has started
            state = slot.state
            leaving.cancel()
            staying = await manager.load_version("m", 1)
            await asyncio.gather(leaving, return_exceptions=True)
            return leaving.cancelled(), staying.version, loads, state

    cancelled, version, loads, state = asyncio.run(main())
    assert (cancelled, version, state) == (True, 1, "loading")
    assert [number for number, _ in loads] == [1]
