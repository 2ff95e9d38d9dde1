"""Fixtures of the stock-client tests: one real server for all of them, and MLServer's venv.

``stock_server`` is ``python _client_models.py`` (the app with the test architectures of
``_client_models``) on a free port of 127.0.0.1, once per session and xdist worker, serving:

- ``mlp`` (versions 1 and 2), ``mlp-spare``, ``broken`` (``_app_support.make_repository``);
- ``simple``: Triton's example model (``tests/app/user_models/simple``: INT32 [-1, 16] x 2);
- ``digits``: the demo LeNet-5 with its ``labels.txt`` (class ``i`` is ``"i"``);
- ``mnist``: the same weights and labels as a user's ``model.py`` with one output, ``logits``
  (the shape Triton's image classification example expects);
- ``text``: BYTES in and out; ``sleepy``: slow on demand, not batched, its queue 2 long.

Writes need ``WRITE_KEY``. ``mlserver_python`` is the interpreter of a venv holding
MLServer (``_client_envs``), whose codecs cannot be installed beside the server.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _app_support import WRITE_KEY, Server, make_repository, run_server
from _client_envs import MLSERVER, client_python

import models

HERE = Path(__file__).resolve().parent
USER_MODELS = HERE.parent / "user_models"
SIMPLE_SPEC = {
    "module": "model.py:AddSub",
    "inputs": [{"datatype": "INT32", "shape": [-1, 16]}, {"datatype": "INT32", "shape": [-1, 16]}],
    "outputs": [
        {"name": "OUTPUT0", "datatype": "INT32", "shape": [-1, 16]},
        {"name": "OUTPUT1", "datatype": "INT32", "shape": [-1, 16]},
    ],
    "max_batch_size": 8,
}


def empty_weights() -> bytes:
    """A safetensors file with no tensors (for models without parameters)."""
    header = b'{"__metadata__":{}}'
    header += b" " * (-len(header) % 8)
    return len(header).to_bytes(8, "little") + header


MNIST_MODEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet(nn.Module):
    # the zoo's lenet5 written as a user's model.py: the same keys, so the demo weights fit
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, image):
        x = F.max_pool2d(self.conv1(image).relu(), 2)
        x = F.max_pool2d(self.conv2(x).relu(), 2)
        return self.fc3(self.fc2(self.fc1(x.flatten(1)).relu()).relu())
"""
MNIST_SPEC = {
    "module": "model.py:LeNet",
    "inputs": [{"name": "image", "datatype": "FP32", "shape": [-1, 1, 28, 28]}],
    "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}],
    "labels": "labels.txt",
}


def client_repository(root: Path) -> Path:
    """The stock-client test repository (see the module docstring)."""
    make_repository(root)
    models.seed_repository(root, names=["digits"])
    (root / "mnist" / "1").mkdir(parents=True)
    (root / "mnist" / "model.py").write_text(MNIST_MODEL)
    (root / "mnist" / "model.json").write_text(json.dumps(MNIST_SPEC))
    shutil.copyfile(root / "digits" / "labels.txt", root / "mnist" / "labels.txt")
    weights = "1/weights.safetensors"
    shutil.copyfile(root / "digits" / weights, root / "mnist" / weights)
    specs = {
        "simple": SIMPLE_SPEC,
        "text": {"architecture": "test-client-text"},
        "sleepy": {"architecture": "test-client-sleepy", "dynamic_batching": False, "max_batch_size": 4},
    }
    shutil.copytree(USER_MODELS / "simple", root / "simple")
    for name, spec in specs.items():
        (root / name / "1").mkdir(parents=True)
        (root / name / "model.json").write_text(json.dumps(spec))
        (root / name / "1" / "weights.safetensors").write_bytes(empty_weights())
    return root


@pytest.fixture(scope="session")
def stock_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The real server the stock clients talk to (``WRITE_KEY`` for writes)."""
    folder = tmp_path_factory.mktemp("stock_clients")
    repository = client_repository(folder / "model_repository")
    env = {"MININN_SEED_REPOSITORY": "false", "MININN_API_KEY": WRITE_KEY, "MININN_MAX_QUEUE": "2"}
    command = [sys.executable, str(HERE / "_client_models.py")]
    with run_server(repository, folder / "server.log", command=command, **env) as running:
        running.wait_ready(60)
        yield running


@pytest.fixture(scope="session")
def mlserver_python() -> Path:
    """The interpreter of the venv holding ``mlserver`` (created on first use, then reused)."""
    return client_python(MLSERVER)
