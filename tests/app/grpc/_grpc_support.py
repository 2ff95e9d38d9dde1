"""Real servers with gRPC on a free port for the gRPC tests, and their repository.

:func:`start_grpc_server` serves ``mlp`` (versions 1 and 2),
``mlp-spare``, ``broken`` (see ``_app_support.make_repository``), Triton's ``simple``
example model (``tests/app/user_models/simple``), ``text`` (BYTES in and out) and ``sleepy``
(slow on demand, not batched) and ``labelled`` (an ``mlp`` with ``labels.txt``: cat, dog, bird),
with ``WRITE_KEY`` as the write key.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _app_support import (
    MLP_CONFIG,
    WRITE_KEY,
    Server,
    free_port,
    make_repository,
    mlp_weights,
    run_server,
    write_model,
)

HERE = Path(__file__).resolve().parent
USER_MODELS = HERE.parent / "user_models"
SIMPLE_SPEC = {
    "module": "model.py:AddSub",
    "inputs": [{"datatype": "INT32", "shape": [-1, 16]}, {"datatype": "INT32", "shape": [-1, 16]}],
    "outputs": [
        {"name": "OUTPUT0", "datatype": "INT32", "shape": [-1, 16]},
        {"name": "OUTPUT1", "datatype": "INT32", "shape": [-1, 16]},
    ],
}
GAIN = {"gain": np.ones(1, np.float32)}


@dataclass(frozen=True)
class GrpcServer:
    """A running server: its HTTP side (``http``) and its gRPC ``host:port`` (``url``)."""

    http: Server
    grpc_port: int

    @property
    def url(self) -> str:
        return f"{self.http.host}:{self.grpc_port}"


def grpc_repository(root: Path) -> Path:
    """The test repository plus ``simple``, ``text`` and ``sleepy``."""
    make_repository(root)
    simple = root / "simple"
    shutil.copytree(USER_MODELS / "simple", simple)
    (simple / "model.json").write_text(json.dumps(SIMPLE_SPEC))
    (simple / "1").mkdir()
    header = b'{"__metadata__":{}}'
    header += b" " * (-len(header) % 8)
    (simple / "1" / "weights.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    write_model(root, "text", {1: GAIN}, {"architecture": "test-text-length"})
    write_model(root, "sleepy", {1: GAIN}, {"architecture": "test-sleepy", "dynamic_batching": False})
    labelled = {"architecture": "mlp", "config": MLP_CONFIG, "labels": "labels.txt"}
    write_model(root, "labelled", {1: mlp_weights(5)}, labelled)
    (root / "labelled" / "labels.txt").write_text("cat\ndog\nbird\n")
    return root


def start_grpc_server(folder: Path, **env: str) -> Iterator[GrpcServer]:
    """``python _grpc_models.py`` (the test architectures, then ``python -m app``) with gRPC on."""
    grpc_port = free_port()
    settings = {
        "MININN_SEED_REPOSITORY": "false",
        "MININN_API_KEY": WRITE_KEY,
        "MININN_GRPC_PORT": str(grpc_port),
        "MININN_REPOSITORY_POLL_MS": "0",
        **env,
    }
    repository = grpc_repository(folder / "model_repository")
    command = [sys.executable, str(HERE / "_grpc_models.py")]
    with run_server(repository, folder / "server.log", command=command, **settings) as running:
        running.wait_ready(60)
        yield GrpcServer(running, grpc_port)
