from __future__ import annotations

import numpy as np
from fastapi.testclient import TestClient

MLP_INPUTS = [{"name": "input", "datatype": "FP32", "shape": [-1, 4]}]
MLP_OUTPUTS = [{"name": "output", "datatype": "FP32", "shape": [-1, 3]}]


def infer_once(client: TestClient, path: str = "/v2/models/mlp/infer", batch: int = 2) -> None:
    data = np.ones((batch, 4)).tolist()
    body = {"inputs": [{"name": "input", "shape": [batch, 4], "datatype": "FP32", "data": data}]}
    assert client.post(path, json=body).status_code == 200


def test_model_metadata(client: TestClient) -> None:
    assert client.get("/v2/models/mlp").json() == {
        "name": "mlp",
        "versions": ["1", "2"],
        "platform": "mininn",
        "inputs": MLP_INPUTS,
        "outputs": MLP_OUTPUTS,
        "architecture": "mlp",
        "state": "READY",
        "reason": "",
    }


def test_version_metadata(client: TestClient) -> None:
    body = client.get("/v2/models/mlp/versions/1").json()
    assert (body["name"], body["inputs"], body["state"]) == ("mlp", MLP_INPUTS, "READY")


def test_metadata_of_a_failed_model_carries_the_reason(client: TestClient) -> None:
    body = client.get("/v2/models/broken").json()
    assert (body["state"], body["inputs"], body["versions"]) == ("UNAVAILABLE", [], ["1"])
    assert body["reason"].startswith(
        "version 1: loading the state dict: Error(s) in loading state_dict for MLP:"
    )


def test_metadata_errors(client: TestClient) -> None:
    cases = {
        "/v2/models/nope": (
            404,
            "Request for unknown model: 'nope' is not found; available models: broken, mlp, mlp-spare",
        ),
        "/v2/models/mlp/versions/9": (404, "model 'mlp' has no version 9; its versions are 1, 2"),
        "/v2/models/mlp/versions/abc": (
            400,
            "invalid model version 'abc': versions are positive integers such as 1",
        ),
        "/v2/models/.hidden": (
            400,
            "invalid model name '.hidden': use 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit",
        ),
    }
    for path, (status, message) in cases.items():
        response = client.get(path)
        assert (response.status_code, response.json()) == (status, {"error": message}), path


def test_readiness(client: TestClient) -> None:
    ready = client.get("/v2/models/mlp/ready")
    assert (ready.status_code, ready.json()) == (200, {"name": "mlp", "ready": True})
    assert client.get("/v2/models/mlp/versions/1/ready").json() == {"name": "mlp", "ready": True}
    assert client.get("/v2/models/mlp/versions/3/ready").status_code == 404
    assert client.get("/v2/models/nope/ready").status_code == 404
    broken = client.get("/v2/models/broken/ready")
    assert broken.status_code == 503
    assert broken.json()["error"].startswith("model 'broken' is not ready: unavailable (version 1: loading")
    assert (broken.json()["name"], broken.json()["ready"]) == ("broken", False)


def test_config_is_triton_shaped(client: TestClient) -> None:
    config = client.get("/v2/models/mlp/config").json()
    assert (config["name"], config["platform"], config["max_batch_size"]) == ("mlp", "mininn", 32)
    assert config["input"] == [
        {"name": "input", "data_type": "TYPE_FP32", "dims": [4], "format": "FORMAT_NONE", "optional": False}
    ]
    assert config["output"] == [{"name": "output", "data_type": "TYPE_FP32", "dims": [3]}]
    assert config["dynamic_batching"]["default_queue_policy"]["max_queue_size"] == 256
    assert config["instance_group"] == [{"name": "mlp_0", "count": 1, "kind": "KIND_CPU"}]
    assert config["mininn"]["config"] == {"in_features": 4, "hidden_sizes": [8], "out_features": 3}
    assert config["parameters"]["dtype"] == {"string_value": "float32"}


def test_config_of_a_version_and_of_a_failed_model(client: TestClient) -> None:
    assert client.get("/v2/models/mlp/versions/1/config").json()["name"] == "mlp"
    assert client.get("/v2/models/broken/config").status_code == 503


def test_statistics_count_inferences_per_version(client: TestClient) -> None:
    infer_once(client, batch=2)
    infer_once(client, "/v2/models/mlp/versions/1/infer", batch=3)
    stats = {s["version"]: s for s in client.get("/v2/models/mlp/stats").json()["model_stats"]}
    assert set(stats) == {"1", "2"}
    assert (stats["2"]["inference_count"], stats["2"]["execution_count"]) == (2, 1)
    assert stats["2"]["inference_stats"]["success"]["count"] == 1
    assert stats["2"]["inference_stats"]["success"]["ns"] > 0
    assert stats["1"]["inference_count"] == 3
    only_v1 = client.get("/v2/models/mlp/versions/1/stats").json()["model_stats"]
    assert [s["version"] for s in only_v1] == ["1"]


def test_failed_requests_count_as_failures(client: TestClient) -> None:
    client.post(
        "/v2/models/mlp/infer", json={"inputs": [{"name": "input", "shape": [1, 5], "datatype": "FP32"}]}
    )
    stats = client.get("/v2/models/mlp/versions/2/stats").json()["model_stats"][0]
    assert stats["inference_stats"]["fail"]["count"] == 1
    assert stats["inference_stats"]["success"]["count"] == 0


def test_statistics_of_every_model(client: TestClient) -> None:
    rows = client.get("/v2/models/stats").json()["model_stats"]
    assert [(r["name"], r["version"]) for r in rows] == [("mlp", "1"), ("mlp", "2"), ("mlp-spare", "1")]
    assert client.get("/v2/models/nope/stats").status_code == 404
    assert client.get("/v2/models/broken/stats").json() == {"model_stats": []}
