"""Four uvicorn workers on one repository: an upload reaches every worker within a second; racing
uploads get distinct versions, none lost.

Which worker answered a request is read from ``/proc``: the server side of the
request's TCP connection belongs to exactly one worker process.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import Server, make_repository, mlp_weights, numpy_mlp, run_server, wait_until
from _upload_support import KEY, X, put_state_dict, sha256, torch_bytes

from mininn.serialization import load_metadata

pytest.importorskip("torch")

WORKERS = 4
INFER_BODY = json.dumps(
    {"inputs": [{"name": "input", "shape": [3, 4], "datatype": "FP32", "data": X.ravel().tolist()}]}
)


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in os.listdir(f"/proc/{parent}/task"):
            children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            found += map(int, children)
            todo += map(int, children)
    return found


def _workers(server: Server) -> list[int]:
    return [
        pid
        for pid in _descendants(server.process.pid)
        if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]


def _owner(server: Server, client_port: int, workers: list[int]) -> int:
    """The worker whose socket is the server end of the connection from ``client_port``."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1], fields[2]
        if int(local.split(":")[1], 16) == server.port and int(remote.split(":")[1], 16) == client_port:
            inode = fields[9]
    assert inode is not None, f"no server socket for client port {client_port}"
    for pid in workers:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return pid
            except FileNotFoundError:
                continue
    raise AssertionError(f"no worker holds socket {inode}")


def _request(server: Server, method: str, path: str, body: str | None = None) -> Any:
    """One request on a new connection: (worker pid, status, JSON body)."""
    connection = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        worker = _owner(server, connection.sock.getsockname()[1], _workers(server))
    finally:
        connection.close()
    return worker, response.status, json.loads(data) if data else None


def _infer(server: Server) -> tuple[int, str, np.ndarray]:
    worker, status, document = _request(server, "POST", "/v2/models/mlp/infer", INFER_BODY)
    assert status == 200, document
    output = np.asarray(document["outputs"][0]["data"], np.float32).reshape(3, 3)
    return worker, document["model_version"], output


@pytest.mark.slow
def test_every_worker_serves_an_upload_within_a_second_and_racing_uploads_all_land(tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "model_repository")
    env = {"MININN_API_KEY": KEY, "MININN_SEED_REPOSITORY": "false", "MININN_WORKERS": str(WORKERS)}
    with run_server(repository, tmp_path / "server.log", **env) as server:
        ready: set[int] = set()

        def all_ready() -> bool:
            worker, status, _ = _request(server, "GET", "/v2/health/ready")
            if status == 200:
                ready.add(worker)
            workers = _workers(server)  # uvicorn replaces a worker that misses its health pings
            return len(workers) == WORKERS and set(workers) <= ready

        try:
            wait_until(all_ready, 120, "every worker to finish its start-up load")
        except TimeoutError:
            raise AssertionError(f"ready: {sorted(ready)} of {_workers(server)}") from None

        # one upload: how long does each worker go on answering with the old version?
        weights = mlp_weights(200)
        response = put_state_dict(server, "mlp", torch_bytes(weights))
        uploaded_at = time.monotonic()
        assert (response.status_code, response.json()["model_version"]) == (201, "3")
        last_old: dict[int, float] = {}
        while time.monotonic() - uploaded_at < 1.0:
            worker, version, _ = _infer(server)
            if version != "3":
                last_old[worker] = time.monotonic() - uploaded_at
        assert all(seconds < 1.0 for seconds in last_old.values()), last_old

        # 200 requests, each on a new connection, after that second: all on the new version
        answers = [_infer(server) for _ in range(200)]
        expected = numpy_mlp(weights, X)
        for _, version, output in answers:
            assert version == "3"
            np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-5)
        spread = Counter(worker for worker, _, _ in answers)
        assert len(spread) >= 2, spread

        # ten racing uploads: ten distinct versions, every one on disk with its own bytes
        bodies = [torch_bytes(mlp_weights(300 + i)) for i in range(10)]
        results: list[Any] = [None] * 10
        barrier = threading.Barrier(10)

        def upload(i: int) -> None:
            barrier.wait()
            results[i] = put_state_dict(server, "mlp", bodies[i])

        threads = [threading.Thread(target=upload, args=(i,)) for i in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [r.status_code for r in results] == [201] * 10, [r.text for r in results]
        versions = [int(r.json()["model_version"]) for r in results]
        assert sorted(versions) == list(range(4, 14))
        for i, version in enumerate(versions):
            metadata = load_metadata(repository / "mlp" / str(version) / "weights.safetensors")
            assert metadata["mininn.source_sha256"] == sha256(bodies[i]) == results[i].json()["sha256"]
        newest = max(versions)
        time.sleep(1.0)
        expected = numpy_mlp(mlp_weights(300 + versions.index(newest)), X)
        for _ in range(40):
            _, version, output = _infer(server)
            assert version == str(newest)
            np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-5)
        assert sorted(p.name for p in (repository / "mlp").iterdir()) == sorted(
            [*map(str, range(1, 14)), "model.json"]
        )
        print(f"old answers after the upload, per worker (s): {last_old}; spread of 200 requests: {spread}")
