"""SIGTERM: the server stops accepting, finishes the requests in flight, and exits 0.

What the container relies on (its CMD runs the server as PID 1, and Docker, Podman and
Kubernetes stop it with SIGTERM), checked on ``python -m app`` itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import numpy as np
import pytest
from _deploy_support import REPO_ROOT, free_port, wait_until
from prometheus_client.parser import text_string_to_metric_families
from safetensors.numpy import save_file

REQUESTS = 20
ROWS, IN, HIDDEN, OUT = 512, 512, 2048, 16  # ~1 GFLOP a request: ~0.1 s on one BLAS thread


def write_wide_mlp(root: Path) -> dict[str, np.ndarray]:
    """A model ``wide`` (``mlp`` 512 -> 2048 -> 16) with seeded weights; the weights."""
    rng = np.random.default_rng(0)
    weights = {
        "0.weight": rng.standard_normal((HIDDEN, IN), dtype=np.float32) / np.sqrt(IN),
        "0.bias": rng.standard_normal(HIDDEN, dtype=np.float32),
        "3.weight": rng.standard_normal((OUT, HIDDEN), dtype=np.float32) / np.sqrt(HIDDEN),
        "3.bias": rng.standard_normal(OUT, dtype=np.float32),
    }
    folder = root / "wide"
    (folder / "1").mkdir(parents=True)
    config = {"in_features": IN, "hidden_sizes": [HIDDEN], "out_features": OUT}
    (folder / "model.json").write_text(
        json.dumps({"architecture": "mlp", "config": config, "max_batch_size": ROWS})
    )
    save_file(weights, str(folder / "1" / "weights.safetensors"))
    return weights


def reference(weights: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    hidden = np.maximum(x.astype(np.float64) @ weights["0.weight"].T + weights["0.bias"], 0)
    return hidden @ weights["3.weight"].T.astype(np.float64) + weights["3.bias"]


def infer(base: str, x: np.ndarray) -> tuple[int, np.ndarray | None]:
    """POST a binary-tensor request for ``x``; the status and the output."""
    header = json.dumps(
        {
            "inputs": [
                {
                    "name": "input",
                    "shape": list(x.shape),
                    "datatype": "FP32",
                    "parameters": {"binary_data_size": x.nbytes},
                }
            ],
            "outputs": [{"name": "output", "parameters": {"binary_data": True}}],
        }
    ).encode()
    with httpx.Client(timeout=60) as client:
        response = client.post(
            f"{base}/v2/models/wide/infer",
            content=header + x.tobytes(),
            headers={"Inference-Header-Content-Length": str(len(header))},
        )
    if response.status_code != 200:
        return response.status_code, None
    length = int(response.headers["Inference-Header-Content-Length"])
    return 200, np.frombuffer(response.content[length:], dtype="<f4").reshape(x.shape[0], OUT)


def received_and_done(base: str) -> tuple[int, int]:
    """Infer requests the server has taken (in flight or answered) and has answered."""
    text = httpx.get(f"{base}/metrics", timeout=5).text
    in_flight = done = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "mininn_requests_in_flight":
                in_flight = sample.value - 1  # this /metrics request is in flight too
            elif sample.name == "mininn_requests_total" and sample.labels.get("endpoint", "").endswith(
                "/infer"
            ):
                done += sample.value
    return int(in_flight + done), int(done)


def is_ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/v2/health/ready", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.slow
def test_sigterm_finishes_the_requests_in_flight_refuses_new_ones_and_exits_0(tmp_path: Path) -> None:
    weights = write_wide_mlp(tmp_path / "repo")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MININN_")},
        "MININN_HOST": "127.0.0.1",
        "MININN_PORT": str(port),
        "MININN_MODEL_REPOSITORY": str(tmp_path / "repo"),
        "MININN_SEED_REPOSITORY": "false",
        "MININN_INFERENCE_THREADS": "1",  # requests queue up behind one another: all in flight at once
        "MININN_LOG_LEVEL": "warning",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "app"], cwd=REPO_ROOT, env=env, stdout=out, stderr=out
        )
    try:
        wait_until(lambda: is_ready(base), 60, "the server becoming ready")
        inputs = [
            np.random.default_rng(i).standard_normal((ROWS, IN), dtype=np.float32) for i in range(REQUESTS)
        ]
        results: list[tuple[int, np.ndarray | None] | None] = [None] * REQUESTS

        def send(i: int) -> None:
            results[i] = infer(base, inputs[i])

        threads = [threading.Thread(target=send, args=(i,)) for i in range(REQUESTS)]
        for thread in threads:
            thread.start()
        wait_until(lambda: received_and_done(base)[0] >= REQUESTS, 30, "the server taking all requests")
        _, done = received_and_done(base)
        assert done < REQUESTS, "every request finished before SIGTERM; the test needs slower requests"

        process.send_signal(signal.SIGTERM)
        wait_until(lambda: refuses_connections(port), 5, "refusing new connections")
        still_running = process.poll() is None
        for thread in threads:
            thread.join(timeout=60)

        assert still_running, "the server exited before it finished the requests in flight"
        assert [result[0] if result else None for result in results] == [200] * REQUESTS
        for x, result in zip(inputs, results, strict=True):
            assert result is not None and result[1] is not None
            np.testing.assert_allclose(result[1], reference(weights, x), rtol=1e-4, atol=1e-4)
        assert process.wait(timeout=30) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
