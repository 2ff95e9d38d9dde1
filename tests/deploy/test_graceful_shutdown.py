"""SIGTERM: the server stops accepting, finishes the requests in flight, and exits 0.

What the container relies on (its CMD runs the server as PID 1, and Docker, Podman and
Kubernetes stop it with SIGTERM), checked on ``python -m app`` itself.

Twenty clients each send an inference request's headers and half its body, so all twenty
are in flight (the server has started handling them) when SIGTERM arrives, however fast
or loaded the machine is. New connections must then be refused; the clients send the rest
of their bodies, and every request must be answered 200 with the right outputs before the
server exits 0.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
from _deploy_support import REPO_ROOT, free_port, wait_until
from prometheus_client.parser import text_string_to_metric_families
from safetensors.numpy import save_file

REQUESTS = 20
ROWS, IN, HIDDEN, OUT = 128, 512, 2048, 16  # ~0.25 GFLOP a request: slow-ish, on one inference thread


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
    document = {"architecture": "mlp", "config": config, "max_batch_size": ROWS}
    (folder / "model.json").write_text(json.dumps(document))
    save_file(weights, str(folder / "1" / "weights.safetensors"))
    return weights


def reference(weights: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    hidden = np.maximum(x.astype(np.float64) @ weights["0.weight"].T + weights["0.bias"], 0)
    return hidden @ weights["3.weight"].T.astype(np.float64) + weights["3.bias"]


class HalfSentRequest:
    """A binary-tensor inference request whose body is sent in two halves."""

    def __init__(self, port: int, x: np.ndarray) -> None:
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
        body = header + x.tobytes()
        self.rest = body[len(body) // 2 :]
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        head = (
            f"POST /v2/models/wide/infer HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Length: {len(body)}\r\nInference-Header-Content-Length: {len(header)}\r\n\r\n"
        )
        self.sock.sendall(head.encode() + body[: len(body) // 2])

    def finish(self) -> tuple[int, np.ndarray | None]:
        """Send the rest of the body; the status and the output."""
        with self.sock:
            self.sock.sendall(self.rest)
            response = http.client.HTTPResponse(self.sock)
            response.begin()
            content = response.read()
        if response.status != 200:
            return response.status, None
        length = int(response.headers["Inference-Header-Content-Length"])
        return 200, np.frombuffer(content[length:], dtype="<f4").reshape(ROWS, OUT)


def in_flight(base: str) -> int:
    """Requests the server is handling, besides this /metrics request."""
    text = httpx.get(f"{base}/metrics", timeout=5).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "mininn_requests_in_flight":
                return int(sample.value) - 1
    raise AssertionError("/metrics has no mininn_requests_in_flight")


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


def test_sigterm_finishes_the_requests_in_flight_refuses_new_ones_and_exits_0(tmp_path: Path) -> None:
    weights = write_wide_mlp(tmp_path / "repo")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MININN_")},
        "MININN_HOST": "127.0.0.1",
        "MININN_PORT": str(port),
        "MININN_GRPC_PORT": str(free_port()),  # gRPC on too: its shutdown must not hold the exit back
        "MININN_MODEL_REPOSITORY": str(tmp_path / "repo"),
        "MININN_SEED_REPOSITORY": "false",
        "MININN_INFERENCE_THREADS": "1",  # the twenty forwards run one after another after SIGTERM
        "MININN_LOG_LEVEL": "warning",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "app"], cwd=REPO_ROOT, env=env, stdout=out, stderr=out
        )
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(_stop, process)
        wait_until(lambda: is_ready(base), 60, "the server becoming ready")
        inputs = [
            np.random.default_rng(i).standard_normal((ROWS, IN), dtype=np.float32) for i in range(REQUESTS)
        ]
        requests = [HalfSentRequest(port, x) for x in inputs]
        for request in requests:
            cleanup.callback(request.sock.close)
        wait_until(lambda: in_flight(base) == REQUESTS, 30, "the server handling all requests")

        process.send_signal(signal.SIGTERM)
        wait_until(lambda: refuses_connections(port), 5, "refusing new connections")
        assert process.poll() is None, "the server exited with requests in flight"
        with ThreadPoolExecutor(REQUESTS) as pool:
            results = list(pool.map(HalfSentRequest.finish, requests))

        assert [status for status, _ in results] == [200] * REQUESTS
        for x, (_, output) in zip(inputs, results, strict=True):
            assert output is not None
            np.testing.assert_allclose(output, reference(weights, x), rtol=1e-4, atol=1e-4)
        assert process.wait(timeout=30) == 0, log.read_text()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()
