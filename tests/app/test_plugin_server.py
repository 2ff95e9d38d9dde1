"""A pip-installed plug-in package's architectures serve through a plain ``mininn-serve``.

The plug-in is a test distribution (a ``.dist-info`` with ``entry_points.txt``) on
``PYTHONPATH``, as pip would leave it in site-packages; a second entry point is broken.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import numpy as np
from _app_support import run_server
from safetensors.numpy import save_file

PLUGIN = '''
from dataclasses import dataclass

import models
from mininn import nn
from models.config import require


@dataclass(frozen=True)
class AffineConfig:
    features: int = 3  # width of the input and output

    def __post_init__(self):
        require(self.features > 0, "features", self.features, "a positive integer")


class Affine(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.linear = nn.Linear(config.features, config.features)

    def forward(self, x):
        return self.linear(x)


def signature(config):
    return models.Signature(
        inputs=[models.TensorSpec("x", "FP32", (-1, config.features))],
        outputs=[models.TensorSpec("y", "FP32", (-1, config.features))],
    )


models.register("plugin_affine", config_cls=AffineConfig, signature=signature,
                description="an affine map, from a plug-in package")(Affine)
'''


def write_distribution(site: Path) -> None:
    (site / "affine_plugin").mkdir(parents=True)
    (site / "affine_plugin" / "__init__.py").write_text(PLUGIN)
    (site / "broken_plugin.py").write_text("raise ImportError('needs a library that is not installed')\n")
    info = site / "affine_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: affine-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[mininn_serve.architectures]\naffine = affine_plugin\nbroken = broken_plugin\n"
    )


def test_a_plugin_architecture_serves_through_a_plain_mininn_serve(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    write_distribution(site)
    repository = tmp_path / "model_repository"
    (repository / "affine" / "1").mkdir(parents=True)
    (repository / "affine" / "model.json").write_text(
        json.dumps({"architecture": "plugin_affine", "config": {"features": 3}})
    )
    weight = np.arange(9, dtype=np.float32).reshape(3, 3)
    bias = np.ones(3, np.float32)
    weights = repository / "affine" / "1" / "weights.safetensors"
    save_file({"linear.weight": weight, "linear.bias": bias}, str(weights))
    command = [str(Path(sys.executable).parent / "mininn-serve")]
    pythonpath = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    env = {"MININN_SEED_REPOSITORY": "false", "PYTHONPATH": pythonpath, "MININN_LOG_LEVEL": "info"}
    with run_server(repository, tmp_path / "server.log", command=command, **env) as server:
        server.wait_ready(60)
        x = np.array([[1.0, 2.0, 3.0]], np.float32)
        body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": x.ravel().tolist()}]}
        response = httpx.post(f"{server.base_url}/v2/models/affine/infer", json=body)
        assert response.status_code == 200, response.text
        np.testing.assert_allclose(response.json()["outputs"][0]["data"], (x @ weight.T + bias).ravel())
        listing = httpx.get(f"{server.base_url}/v2/repository/architectures").json()["architectures"]
        affine = next(a for a in listing if a["name"] == "plugin_affine")
        assert affine["description"] == "an affine map, from a plug-in package"
        assert affine["config"] == [{"key": "features", "type": "int", "default": 3, "required": False}]
    log = (tmp_path / "server.log").read_text()
    assert "architecture plug-in 'broken' (broken_plugin) failed to load" in log
    assert "ImportError: needs a library that is not installed" in log
