"""Checkpoints with mininn metadata."""

from __future__ import annotations

import json

import numpy as np

import mininn
from mininn.serialization import load, load_metadata
from models.checkpoint import checkpoint_metadata, save_checkpoint


def test_metadata_carries_architecture_config_json_and_extras():
    metadata = checkpoint_metadata("mlp", {"b": [1, 2], "a": 0.5}, test_accuracy=0.9871)
    assert metadata == {
        "mininn.architecture": "mlp",
        "mininn.config": '{"a": 0.5, "b": [1, 2]}',
        "mininn.test_accuracy": "0.9871",
    }


def test_save_checkpoint_writes_tensors_and_metadata(tmp_path):
    path = tmp_path / "w.safetensors"
    tensors = {"fc.weight": mininn.ones(2, 3), "fc.bias": np.arange(2, dtype=np.float32)}
    save_checkpoint(tensors, path, "mlp", {"in_features": 3}, note="x")
    state = load(path)
    np.testing.assert_array_equal(state["fc.weight"].numpy(), np.ones((2, 3), dtype=np.float32))
    np.testing.assert_array_equal(state["fc.bias"].numpy(), [0, 1])
    metadata = load_metadata(path)
    assert metadata["mininn.architecture"] == "mlp" and metadata["mininn.note"] == "x"
    assert json.loads(metadata["mininn.config"]) == {"in_features": 3}
    assert [p.name for p in tmp_path.iterdir()] == ["w.safetensors"]
