"""``PUT /v2/models/{m}/state_dict`` with a GGUF file: a llama version kept as ``model.gguf``.

The GGUF file is written from a random transformers ``LlamaForCausalLM`` (``models.gguf_export``);
the served logits are compared with transformers'. Bad GGUF uploads change nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import start_client
from _upload_support import AUTH, KEY, tree_digest

import models

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

from models.gguf_export import write_gguf  # noqa: E402 - after the gguf skip

CONFIG = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
              tie_word_embeddings=True)
IDS = [[1, 7, 3, 60, 2]]


@pytest.fixture(scope="module")
def reference() -> Any:
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG)).eval()


@pytest.fixture(scope="module")
def gguf_bytes(reference: Any, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    config = models.get_architecture("llama").make_config(CONFIG)
    write_gguf(path, config, {k: v.numpy() for k, v in reference.state_dict().items()})
    return path.read_bytes()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Any]:
    specs = {
        "tiny-llama": {"architecture": "llama", "config": CONFIG},
        "other-llama": {"architecture": "llama", "config": {**CONFIG, "rope_theta": 500000.0}},
        "mlp": {"architecture": "mlp", "config": {"in_features": 4, "out_features": 2}},
    }
    for name, spec in specs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.json").write_text(json.dumps(spec))
    test_client = start_client(tmp_path, api_key=KEY)
    try:
        yield test_client
    finally:
        test_client.__exit__(None, None, None)


def _logits(client: Any, name: str) -> np.ndarray:
    body = {"inputs": [{"name": "input_ids", "shape": [1, 5], "datatype": "INT64", "data": IDS[0]}]}
    response = client.post(f"/v2/models/{name}/infer", json=body)
    assert response.status_code == 200, response.text
    output = response.json()["outputs"][0]
    return np.asarray(output["data"], np.float32).reshape(output["shape"])


def test_a_gguf_upload_is_kept_as_model_gguf_and_serves_transformers_logits(client: Any, gguf_bytes: bytes,
                                                                           reference: Any, tmp_path: Path):
    response = client.put("/v2/models/tiny-llama/state_dict", content=gguf_bytes, headers=AUTH)
    assert response.status_code == 201, response.text
    document = response.json()
    assert (document["source_format"], document["model_version"], document["served"]) == ("gguf", "1", True)
    version = tmp_path / "tiny-llama" / "1"
    assert sorted(p.name for p in version.iterdir()) == ["model.gguf"]
    assert (version / "model.gguf").read_bytes() == gguf_bytes
    with torch.no_grad():
        expected = reference(torch.tensor(IDS)).logits.numpy()
    np.testing.assert_allclose(_logits(client, "tiny-llama"), expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    ("name", "body", "params", "status", "message"),
    [
        ("other-llama", None, {}, 422, "rope_theta: the file has 10000.0, model.json 500000.0"),
        ("mlp", None, {}, 422, "a GGUF file holds a llama model; this model is built from architecture"),
        ("tiny-llama", None, {"strict": "false"}, 400, "?strict=false do(es) not apply to a GGUF upload"),
        ("tiny-llama", "truncated", {}, 400, "cannot read the uploaded GGUF file"),
    ],
)
def test_a_bad_gguf_upload_changes_nothing(client: Any, gguf_bytes: bytes, tmp_path: Path, name: str,
                                           body: Any, params: dict, status: int, message: str):
    before = tree_digest(tmp_path)
    content = gguf_bytes[: len(gguf_bytes) // 3] if body == "truncated" else gguf_bytes
    response = client.put(f"/v2/models/{name}/state_dict", content=content, params=params, headers=AUTH)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]
    assert tree_digest(tmp_path) == before


def test_a_version_folder_holding_a_gguf_file_loads_and_serves(tmp_path: Path, gguf_bytes: bytes,
                                                               reference: Any):
    for name, config in (("tiny-llama", CONFIG), ("other-llama", {**CONFIG, "rope_theta": 500000.0})):
        (tmp_path / name / "1").mkdir(parents=True)
        (tmp_path / name / "model.json").write_text(json.dumps({"architecture": "llama", "config": config}))
        (tmp_path / name / "1" / "weights-q8.gguf").write_bytes(gguf_bytes)  # any *.gguf name
    test_client = start_client(tmp_path)
    try:
        with torch.no_grad():
            expected = reference(torch.tensor(IDS)).logits.numpy()
        np.testing.assert_allclose(_logits(test_client, "tiny-llama"), expected, atol=1e-5, rtol=0)
        assert test_client.get("/v2/models/other-llama/ready").status_code != 200
        index = {row["name"]: row for row in test_client.post("/v2/repository/index").json()}
        assert index["other-llama"]["state"] == "UNAVAILABLE"
        assert "rope_theta: the file has 10000.0, model.json 500000.0" in index["other-llama"]["reason"]
    finally:
        test_client.__exit__(None, None, None)


def test_a_gguf_version_downloads_as_its_hugging_face_state_dict(client: Any, gguf_bytes: bytes,
                                                                 reference: Any):
    from safetensors.numpy import load as load_safetensors

    assert client.put("/v2/models/tiny-llama/state_dict", content=gguf_bytes, headers=AUTH).status_code == 201
    response = client.get("/v2/models/tiny-llama/state_dict")
    assert response.status_code == 200, response.text
    state = load_safetensors(response.content)
    expected = reference.state_dict()
    assert set(state) == set(expected)
    for key, value in expected.items():
        assert np.array_equal(state[key], value.numpy()), key
