"""Helpers shared by the service tests: a small repository of ``mlp`` models and references.

The models are the zoo's ``mlp`` (``Linear -> ReLU -> Dropout -> Linear -> Dropout``,
state-dict keys ``0.*`` and ``3.*``) with weights drawn from a seeded NumPy generator, so
the same weights can be loaded into mininn in-process and into torch.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from fastapi.testclient import TestClient
from safetensors.numpy import save_file

from app import Settings, create_app

REPO_ROOT = Path(__file__).resolve().parents[2]

# Servers the tests start serve no gRPC unless a test gives them a free MININN_GRPC_PORT: tests run in
# parallel, and the default port 8001 is one for all of them. In-process apps read this variable.
os.environ["MININN_GRPC_PORT"] = "0"
MLP_CONFIG: dict[str, Any] = {"in_features": 4, "hidden_sizes": [8], "out_features": 3}
IN_FEATURES, OUT_FEATURES = 4, 3
WRITE_KEY = "test-write-key"  # MININN_API_KEY of the session server: writes need it
WRITE_HEADERS = {"Authorization": f"Bearer {WRITE_KEY}"}


def mlp_weights(seed: int) -> dict[str, np.ndarray]:
    """A state dict for :data:`MLP_CONFIG` drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    shapes = {"0.weight": (8, 4), "0.bias": (8,), "3.weight": (3, 8), "3.bias": (3,)}
    return {key: rng.standard_normal(shape).astype(np.float32) for key, shape in shapes.items()}


def write_model(
    root: Path,
    name: str,
    versions: Mapping[int, Mapping[str, np.ndarray]],
    spec: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<root>/<name>/model.json`` and one safetensors file per version."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    document = dict(spec) if spec is not None else {"architecture": "mlp", "config": MLP_CONFIG}
    (folder / "model.json").write_text(json.dumps(document))
    for version, weights in versions.items():
        (folder / str(version)).mkdir(exist_ok=True)
        save_file(dict(weights), str(folder / str(version) / "weights.safetensors"))
    return folder


def make_repository(root: Path) -> Path:
    """The test repository.

    - ``mlp``: versions 1 (seed 1) and 2 (seed 2);
    - ``mlp-spare``: version 1 (seed 3), for load/unload tests;
    - ``broken``: its weights do not fit its config (``in_features`` 5), so it fails to load.
    """
    write_model(root, "mlp", {1: mlp_weights(1), 2: mlp_weights(2)})
    write_model(root, "mlp-spare", {1: mlp_weights(3)})
    write_model(
        root,
        "broken",
        {1: mlp_weights(4)},
        {"architecture": "mlp", "config": {**MLP_CONFIG, "in_features": 5}},
    )
    return root


def numpy_mlp(weights: Mapping[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The ``mlp`` forward pass written out in NumPy (float64)."""
    h = np.maximum(x.astype(np.float64) @ weights["0.weight"].T.astype(np.float64) + weights["0.bias"], 0)
    return h @ weights["3.weight"].T.astype(np.float64) + weights["3.bias"]


def torch_mlp(weights: Mapping[str, np.ndarray]) -> Any:
    """torch's ``Sequential(Linear, ReLU, Dropout, Linear, Dropout)`` with ``weights``."""
    import torch

    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8),
        torch.nn.ReLU(),
        torch.nn.Dropout(0.0),
        torch.nn.Linear(8, 3),
        torch.nn.Dropout(0.0),
    )
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in weights.items()})
    return model.eval()


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll ``predicate`` until it holds; the seconds it took.

    Raises:
        TimeoutError: it did not hold within ``timeout`` seconds.
    """
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        try:
            if predicate():
                return time.monotonic() - started
        except OSError:
            pass
        time.sleep(0.02)
    raise TimeoutError(f"{what} did not happen within {timeout} s")


def binary_request(
    inputs: Mapping[str, np.ndarray], outputs: list[str] | None = None, **extra: Any
) -> tuple[bytes, dict[str, str]]:
    """A binary-tensor inference body (JSON header + raw tensors) and its headers."""
    header: dict[str, Any] = {
        "inputs": [
            {
                "name": name,
                "shape": list(array.shape),
                "datatype": {"float32": "FP32", "int64": "INT64", "float64": "FP64"}[str(array.dtype)],
                "parameters": {"binary_data_size": array.nbytes},
            }
            for name, array in inputs.items()
        ],
        **extra,
    }
    if outputs is not None:
        header["outputs"] = [{"name": n, "parameters": {"binary_data": True}} for n in outputs]
    raw = json.dumps(header).encode()
    body = raw + b"".join(np.ascontiguousarray(a).tobytes() for a in inputs.values())
    return body, {"Inference-Header-Content-Length": str(len(raw))}


def split_binary_response(body: bytes, header_length: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The JSON part of a binary response and its binary outputs as arrays."""
    document = json.loads(body[:header_length])
    arrays, offset = {}, header_length
    for output in document["outputs"]:
        size = output.get("parameters", {}).get("binary_data_size")
        if size is None:
            continue
        dtype = {"FP32": "<f4", "FP64": "<f8", "INT64": "<i8"}[output["datatype"]]
        arrays[output["name"]] = np.frombuffer(body[offset : offset + size], dtype=dtype).reshape(
            output["shape"]
        )
        offset += size
    return document, arrays


def start_client(repository: Path, *, wait: bool = True, **settings: Any) -> TestClient:
    """An entered ``TestClient`` (by default, once its app has finished the start-up load)."""
    settings.setdefault("seed_repository", False)
    app = create_app(Settings(model_repository=repository, **settings))
    client = TestClient(app, raise_server_exceptions=False)
    client.__enter__()
    if wait:
        wait_until(lambda: client.get("/v2/health/ready").status_code == 200, 30, "start-up load")
    return client


class Server:
    """A running ``python -m app`` (or other start command) subprocess."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, repository: Path, log: Path) -> None:
        self.process, self.port, self.repository, self.log = process, port, repository, log
        self.host = "127.0.0.1"

    @property
    def url(self) -> str:
        """``host:port``, as tritonclient wants it (no scheme)."""
        return f"{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.url}"

    def is_ready(self) -> bool:
        """Whether ``/v2/health/ready`` answers 200 (raises if the process died)."""
        if self.process.poll() is not None:
            raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log.read_text()}")
        try:
            return httpx.get(f"{self.base_url}/v2/health/ready", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def cpu_seconds(self) -> float | None:
        """CPU time the server process has used so far (None where /proc is missing)."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
        return (utime + stime) / os.sysconf("SC_CLK_TCK")

    def wait_ready(self, timeout: float) -> float:
        """Seconds until ready, polling every 20 ms."""
        return wait_until(self.is_ready, timeout, "server start-up")


def server_env(port: int, repository: Path, **extra: str) -> dict[str, str]:
    """The environment of a server subprocess: this one's without MININN_*, plus the given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MININN_")}
    env.update(
        MININN_HOST="127.0.0.1",
        MININN_PORT=str(port),
        MININN_MODEL_REPOSITORY=str(repository),
        MININN_LOG_LEVEL="warning",
        MININN_GRPC_PORT="0",
    )
    env.update(extra)
    return env


@contextlib.contextmanager
def run_server(
    repository: Path, log: Path, *, command: list[str] | None = None, cwd: Path = REPO_ROOT, **env: str
) -> Iterator[Server]:
    """Start ``command`` (default ``python -m app``) on a free port; stop it on exit."""
    port = free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command or [sys.executable, "-m", "app"],
            cwd=cwd,
            env=server_env(port, repository, **env),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield Server(process, port, repository, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
