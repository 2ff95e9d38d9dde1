"""Fixtures of the service tests: a test repository, in-process apps, and a real server.

In-process tests drive the app through ``TestClient`` (fast); ``server`` starts
``python -m app`` in a subprocess on a free port of 127.0.0.1 for the tests that
need a real socket (tritonclient, the README's examples), once per test session
(per xdist worker), and kills it at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import WRITE_KEY, Server, make_repository, run_server, start_client, write_model
from _generation_support import GenerationServer, start_generation_server
from fastapi.testclient import TestClient

import mininn
import models
from mininn import nn
from models.signature import Signature, TensorSpec

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A fresh test repository (see ``_app_support.make_repository``)."""
    return make_repository(tmp_path / "model_repository")


@pytest.fixture
def client_factory(repository: Path) -> Iterator[Callable[..., TestClient]]:
    """``client_factory(**settings)`` -> a started client on the test repository."""
    clients: list[TestClient] = []

    def factory(**settings: Any) -> TestClient:
        clients.append(start_client(settings.pop("model_repository", repository), **settings))
        return clients[-1]

    yield factory
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(client_factory: Callable[..., TestClient]) -> TestClient:
    """A started client on the test repository with default settings."""
    return client_factory()


@dataclass(frozen=True)
class SlowConfig:
    seconds: float = 0.5  # how long each forward pass sleeps
    only_negative: bool = False  # sleep only when the first input value is < 0 (not in warm-up)


class Slow(nn.Module):
    """Returns its input after sleeping, like a long forward pass (the sleep releases the GIL)."""

    def __init__(self, config: SlowConfig) -> None:
        super().__init__()
        self.seconds, self.only_negative = config.seconds, config.only_negative
        self.gain = nn.Parameter(mininn.ones(1))

    def forward(self, x: mininn.Tensor) -> mininn.Tensor:
        if not self.only_negative or float(x.reshape(-1)[0]) < 0:
            time.sleep(self.seconds)
        return x * self.gain


@pytest.fixture
def slow_repository(tmp_path: Path) -> Iterator[Path]:
    """Models whose forward passes sleep (releasing the GIL), like long forwards.

    ``slow`` sleeps 0.5 s in every forward, warm-up included; ``slower`` sleeps 2 s
    when the first input value is negative, so its warm-up is quick.
    """
    models.register(
        models.Architecture(
            name="test-slow",
            config_cls=SlowConfig,
            build=Slow,
            signature=lambda c: Signature(
                [TensorSpec("x", "FP32", (-1, 2))], [TensorSpec("y", "FP32", (-1, 2))]
            ),
        ),
        replace=True,
    )
    root = tmp_path / "slow_repository"
    write_model(root, "slow", {1: {"gain": np.ones(1, np.float32)}}, {"architecture": "test-slow"})
    spec = {"architecture": "test-slow", "config": {"seconds": 2.0, "only_negative": True}}
    write_model(root, "slower", {1: {"gain": np.ones(1, np.float32)}}, spec)
    yield root
    models.unregister("test-slow")


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real ``python -m app`` on 127.0.0.1 serving the test repository (seeding off; ``WRITE_KEY``)."""
    folder = tmp_path_factory.mktemp("server")
    repository = make_repository(folder / "model_repository")
    env = {"MININN_SEED_REPOSITORY": "false", "MININN_API_KEY": WRITE_KEY}
    with run_server(repository, folder / "server.log", **env) as running:
        running.wait_ready(30)
        yield running


@pytest.fixture(scope="session")
def generation_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GenerationServer]:
    """A real server of text-generation models, HTTP and gRPC (see ``_generation_support``)."""
    yield from start_generation_server(tmp_path_factory.mktemp("generation"))
