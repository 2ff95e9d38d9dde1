from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _app_support import MLP_CONFIG, mlp_weights, write_model
from fastapi.testclient import TestClient

KEY = {"Authorization": "Bearer write-key"}


@pytest.fixture
def client(client_factory: Any) -> TestClient:
    """A client of a server with the write key ``write-key`` (load and unload need it)."""
    return client_factory(api_key="write-key")


def test_index_accepts_an_empty_body(client: TestClient) -> None:
    response = client.post("/v2/repository/index")  # what tritonclient sends: Content-Length 0
    assert response.status_code == 200
    rows = {row["name"]: row for row in response.json()}
    assert rows["mlp"] == {"name": "mlp", "version": "2", "state": "READY", "reason": ""}
    assert rows["mlp-spare"]["state"] == "READY"
    assert rows["broken"]["state"] == "UNAVAILABLE"
    assert rows["broken"]["reason"].startswith("version 1: loading the state dict:")


def test_index_ready_only(client: TestClient) -> None:
    response = client.post("/v2/repository/index", json={"ready": True})
    assert [row["name"] for row in response.json()] == ["mlp", "mlp-spare"]
    assert client.post("/v2/repository/index", json={}).status_code == 200


def test_index_body_errors(client: TestClient) -> None:
    bad_json = client.post("/v2/repository/index", content=b"{")
    assert bad_json.status_code == 400
    assert bad_json.json()["error"].startswith("request body is not valid JSON:")
    not_bool = client.post("/v2/repository/index", json={"ready": "yes"})
    assert (not_bool.status_code, not_bool.json()) == (
        422,
        {"error": "'ready' must be true or false, got 'yes'"},
    )
    not_object = client.post("/v2/repository/index", json=[1])
    assert (not_object.status_code, not_object.json()) == (
        422,
        {"error": "request body must be a JSON object"},
    )


def test_unload_then_load(client: TestClient) -> None:
    unloaded = client.post(
        "/v2/repository/models/mlp-spare/unload",
        json={"parameters": {"unload_dependents": False}},
        headers=KEY,
    )
    assert (unloaded.status_code, unloaded.json()) == (200, {"name": "mlp-spare", "state": "UNAVAILABLE"})
    assert client.get("/v2/models/mlp-spare/ready").status_code == 503
    row = next(r for r in client.post("/v2/repository/index").json() if r["name"] == "mlp-spare")
    assert (row["state"], row["reason"]) == ("UNAVAILABLE", "unloaded")
    infer = client.post(
        "/v2/models/mlp-spare/infer",
        json={"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
    )
    assert (infer.status_code, infer.json()) == (
        503,
        {"error": "model 'mlp-spare' is not ready: unavailable (unloaded)"},
    )
    loaded = client.post("/v2/repository/models/mlp-spare/load", headers=KEY)
    assert (loaded.status_code, loaded.json()) == (
        200,
        {"name": "mlp-spare", "state": "READY", "versions": ["1"], "reason": ""},
    )
    assert client.get("/v2/models/mlp-spare/ready").status_code == 200


def test_load_picks_up_a_new_model_and_a_new_version(client: TestClient, repository: Path) -> None:
    write_model(repository, "fresh", {1: mlp_weights(8)})
    assert client.get("/v2/models/fresh/ready").status_code == 503
    assert client.post("/v2/repository/models/fresh/load", headers=KEY, json={}).status_code == 200
    assert client.get("/v2/models/fresh/ready").status_code == 200
    write_model(repository, "fresh", {2: mlp_weights(9)})
    assert client.post("/v2/repository/models/fresh/load", headers=KEY).json()["versions"] == ["1", "2"]
    assert client.get("/v2/models/fresh").json()["versions"] == ["1", "2"]


def test_load_with_a_config_override_fixes_a_broken_model(client: TestClient) -> None:
    config = json.dumps({"architecture": "mlp", "config": MLP_CONFIG})
    response = client.post(
        "/v2/repository/models/broken/load", headers=KEY, json={"parameters": {"config": config}}
    )
    assert response.status_code == 200
    assert client.get("/v2/models/broken/ready").status_code == 200


def test_load_with_a_config_applies_its_keys_for_that_load_only(client: TestClient, repository: Path) -> None:
    on_disk = (repository / "mlp" / "model.json").read_text()
    config = '{"max_batch_size": "16", "dynamic_batching": {"max_queue_delay_microseconds": 3000}}'
    response = client.post(
        "/v2/repository/models/mlp/load", headers=KEY, json={"parameters": {"config": config}}
    )
    assert response.status_code == 200, response.text
    loaded = client.get("/v2/models/mlp/config").json()
    assert loaded["max_batch_size"] == 16  # Triton's protobuf JSON takes "16" for an integer
    assert loaded["dynamic_batching"]["max_queue_delay_microseconds"] == 3000
    assert loaded["mininn"]["config"] == MLP_CONFIG  # the keys not given come from model.json
    assert (repository / "mlp" / "model.json").read_text() == on_disk  # never written

    off = '{"dynamic_batching": false, "instance_group": [{"kind": "KIND_CPU"}], "name": "mlp"}'
    client.post("/v2/repository/models/mlp/load", headers=KEY, json={"parameters": {"config": off}})
    loaded = client.get("/v2/models/mlp/config").json()
    assert "dynamic_batching" not in loaded and loaded["max_batch_size"] != 16  # each load starts from disk
    assert loaded["instance_group"][0]["kind"] == "KIND_CPU"

    assert client.post("/v2/repository/models/mlp/load", headers=KEY).status_code == 200
    assert "dynamic_batching" in client.get("/v2/models/mlp/config").json()


def test_load_errors(client: TestClient) -> None:
    cases = [
        (
            "nope",
            {},
            404,
            "failed to load 'nope': Request for unknown model: 'nope' is not found; "
            "available models: broken, mlp, mlp-spare",
        ),
        (
            "mlp",
            {"parameters": {"config": 5}},
            400,
            "failed to load 'mlp': load parameter 'config' must be a string holding a JSON object such as "
            '{"max_batch_size": 16}, got int',
        ),
        (
            "mlp",
            {"parameters": {"config": '{"architecture": "mlp", "module": "model.py:Net"}'}},
            400,
            "failed to load 'mlp': load parameter 'config' over model.json: give either 'architecture' (a "
            "registered one: GET /v2/repository/architectures) or 'module' (code in the model's folder, "
            'e.g. "model.py:Net"), not both or neither',
        ),
        ("mlp", {"parameters": []}, 400, "failed to load 'mlp': 'parameters' must be a JSON object"),
        (
            "mlp",
            {"parameters": {"config": "{}", "file:1/weights.safetensors": "AAAA"}},
            400,
            "failed to load 'mlp': file overrides (file:1/weights.safetensors) are not supported; put "
            "weights in the repository under mlp/<version>/weights.safetensors",
        ),
        (
            "mlp",
            {"parameters": {"config": '{"max_batch_size": 4, "input": [], "platform": "onnx"}'}},
            400,
            "failed to load 'mlp': load parameter 'config' has unknown keys input, platform; accepted keys: "
            "architecture, batch_delay_ms, config, context_length, description, device, dtype, "
            "dynamic_batching, init, inputs, instance_group, labels, max_batch_size, module, name, outputs, "
            "task",
        ),
        (
            "mlp",
            {"parameters": {"config": '"parameters": {"config": {{"max_batch_size": "16"}}}'}},
            400,
            "failed to load 'mlp': load parameter 'config' is not valid JSON: Extra data: line 1 column 13 "
            "(char 12)",
        ),
        (
            "mlp",
            {"parameters": {"config": '{"max_batch_size": -2}'}},
            400,
            "failed to load 'mlp': load parameter 'config' over model.json: key 'max_batch_size': Input "
            "should be greater than or equal to 0",
        ),
        (
            "mlp",
            {"parameters": {"config": '{"dynamic_batching": 3}'}},
            400,
            "failed to load 'mlp': model.json key 'dynamic_batching' must be true, false or an object such "
            'as {"max_queue_delay_microseconds": 500}, got 3',
        ),
        (
            "mlp",
            {"parameters": {"config": '{"name": "other"}'}},
            400,
            "failed to load 'mlp': load parameter 'config' names model 'other', not 'mlp'",
        ),
        (
            "mlp",
            {"parameters": {"config": '{"instance_group": [{"kind": "KIND_CPU", "count": 2}]}'}},
            400,
            "failed to load 'mlp': instance_group count must be 1, got 2",
        ),
    ]
    for name, body, status, message in cases:
        response = client.post(f"/v2/repository/models/{name}/load", headers=KEY, json=body)
        assert (response.status_code, response.json()) == (status, {"error": message}), body


def test_a_failing_load_is_422_with_the_reason(client: TestClient) -> None:
    response = client.post("/v2/repository/models/broken/load", headers=KEY)
    assert response.status_code == 422
    assert response.json()["error"].startswith("failed to load 'broken': version 1: loading the state dict:")


def test_unload_unknown_model_is_404(client: TestClient) -> None:
    response = client.post("/v2/repository/models/ghost/unload", headers=KEY)
    assert (response.status_code, response.json()["error"]) == (
        404,
        "Request for unknown model: 'ghost' is not found; available models: broken, mlp, mlp-spare",
    )
