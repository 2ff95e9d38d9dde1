"""The state-dict and repository write routes in process: keys, options, downloads, model.json changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import MLP_CONFIG, mlp_weights, numpy_mlp
from _upload_support import AUTH, KEY, tree_digest
from fastapi.testclient import TestClient
from safetensors.numpy import save as safetensors_bytes

from app.http.auth import WRITES_DISABLED

WEIGHTS = safetensors_bytes(mlp_weights(70))
WRITES = [
    ("PUT", "/v2/models/mlp/state_dict", {"content": WEIGHTS}),
    ("PUT", "/v2/repository/models/mlp", {"json": {"architecture": "mlp", "config": MLP_CONFIG}}),
    ("DELETE", "/v2/models/mlp/versions/1", {}),
    ("POST", "/v2/repository/models/mlp/load", {}),
    ("POST", "/v2/repository/models/mlp/unload", {}),
]


@pytest.fixture
def keyed(client_factory: Any) -> TestClient:
    return client_factory(api_key=KEY)


@pytest.mark.parametrize(("method", "path", "kwargs"), WRITES)
def test_without_a_write_key_configured_writes_are_403_and_say_how_to_enable_them(
    client: TestClient, repository: Path, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    before = tree_digest(repository)
    response = client.request(method, path, headers=AUTH, **kwargs)
    assert (response.status_code, response.json()) == (403, {"error": WRITES_DISABLED})
    assert "MININN_API_KEY" in WRITES_DISABLED
    assert tree_digest(repository) == before
    assert client.get("/v2/models/mlp/ready").status_code == 200  # reads stay open
    assert client.get("/v2/models/mlp/state_dict").status_code == 200


@pytest.mark.parametrize(("method", "path", "kwargs"), WRITES)
def test_every_write_needs_the_key_once_one_is_configured(
    keyed: TestClient, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    missing = keyed.request(method, path, **kwargs)
    assert (missing.status_code, missing.headers["www-authenticate"]) == (401, "Bearer")
    assert keyed.request(method, path, headers={"Authorization": "Bearer x"}, **kwargs).status_code == 403
    assert keyed.request(method, path, headers=AUTH, **kwargs).status_code in (200, 201)


def test_a_read_key_protects_downloads(client_factory: Any) -> None:
    client = client_factory(api_key=KEY, read_api_key="reader")
    assert client.get("/v2/models/mlp/state_dict").status_code == 401
    assert (
        client.get("/v2/models/mlp/state_dict", headers={"Authorization": "Bearer reader"}).status_code == 200
    )
    refused = client.put(
        "/v2/models/mlp/state_dict", content=WEIGHTS, headers={"Authorization": "Bearer reader"}
    )
    assert refused.status_code == 403


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            {"strip_prefix": "m" * 129},
            "query parameter 'strip_prefix': String should have at most 128 characters",
        ),
        ({"allow_nonfinite": "perhaps"}, "query parameter 'allow_nonfinite': "),
    ],
)
def test_bad_upload_options_are_400(keyed: TestClient, query: dict[str, str], message: str) -> None:
    response = keyed.put("/v2/models/mlp/state_dict", content=WEIGHTS, params=query, headers=AUTH)
    assert response.status_code == 400
    assert response.json()["error"].startswith(message)


def test_download_errors(keyed: TestClient) -> None:
    assert keyed.get("/v2/models/mlp/versions/9/state_dict").json() == {
        "error": "model 'mlp' has no version 9"
    }
    assert keyed.get("/v2/models/ghost/state_dict").status_code == 404
    bad = keyed.get("/v2/models/mlp/state_dict", params={"format": "onnx"})
    assert bad.status_code == 400
    assert bad.json()["error"].startswith(
        "query parameter 'format': Input should be 'safetensors', 'pt' or 'npz'"
    )
    assert keyed.get("/v2/models/mlp/versions/0/state_dict").status_code == 400
    keyed.put("/v2/repository/models/empty", json={"architecture": "mlp", "config": MLP_CONFIG}, headers=AUTH)
    assert keyed.get("/v2/models/empty/state_dict").json() == {
        "error": "model 'empty' has no versions to download"
    }


def test_a_stored_npz_version_downloads_as_safetensors_and_npz(keyed: TestClient, repository: Path) -> None:
    folder = repository / "mlp" / "3"
    folder.mkdir()
    np.savez(folder / "weights.npz", **mlp_weights(71))
    response = keyed.get("/v2/models/mlp/versions/3/state_dict")
    assert response.content[8:9] == b"{"  # converted to safetensors
    same = keyed.get("/v2/models/mlp/versions/3/state_dict", params={"format": "npz"})
    assert same.content == (folder / "weights.npz").read_bytes()


def test_a_model_json_for_other_weights_is_served_once_the_versions_it_does_not_fit_are_deleted(
    keyed: TestClient, repository: Path
) -> None:
    wider = {"architecture": "mlp", "config": {**MLP_CONFIG, "hidden_sizes": [16]}}
    refused = keyed.put("/v2/repository/models/mlp", json=wider, headers=AUTH)
    assert refused.status_code == 422
    assert "DELETE /v2/models/mlp/versions/{v}; its versions: 1, 2" in refused.json()["error"]
    x = np.ones((1, 4), np.float32)
    body = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 1, 1, 1]}]}
    served = keyed.post("/v2/models/mlp/infer", json=body).json()["outputs"][0]["data"]
    np.testing.assert_allclose(served, numpy_mlp(mlp_weights(2), x)[0], rtol=1e-5)
    for version in (2, 1):
        assert keyed.delete(f"/v2/models/mlp/versions/{version}", headers=AUTH).status_code == 200
    response = keyed.put("/v2/repository/models/mlp", json=wider, headers=AUTH)
    assert response.status_code == 200
    document = response.json()
    assert (document["created"], document["state"]) == (False, "UNAVAILABLE")
    assert json.loads((repository / "mlp" / "model.json").read_text()) == wider
    # weights that fit the new model.json: the upload checks against it and serves it
    rng = np.random.default_rng(72)
    fitting = {
        "0.weight": rng.standard_normal((16, 4), np.float32),
        "0.bias": rng.standard_normal(16, np.float32),
        "3.weight": rng.standard_normal((3, 16), np.float32),
        "3.bias": rng.standard_normal(3, np.float32),
    }
    upload = keyed.put("/v2/models/mlp/state_dict", content=safetensors_bytes(fitting), headers=AUTH)
    assert upload.status_code == 201, upload.text
    served = keyed.post("/v2/models/mlp/infer", json=body).json()["outputs"][0]["data"]
    np.testing.assert_allclose(served, numpy_mlp(fitting, x)[0], rtol=1e-5)


def test_a_model_json_body_must_be_a_json_object_with_valid_keys(keyed: TestClient) -> None:
    url = "/v2/repository/models/mlp"
    assert keyed.put(url, json=[1], headers=AUTH).json() == {
        "error": "model.json must be a JSON object with an 'architecture' or 'module' key"
    }
    negative = keyed.put(url, json={"architecture": "mlp", "max_batch_size": -1}, headers=AUTH)
    assert (negative.status_code, negative.json()["error"]) == (
        422,
        "model.json: key 'max_batch_size': Input should be greater than or equal to 0",
    )
    too_big = keyed.put(url, content=b" " * (2 << 20), headers=AUTH)
    assert too_big.status_code == 413


def test_the_upload_response_names_where_missing_values_came_from(keyed: TestClient) -> None:
    partial = {k: v for k, v in mlp_weights(73).items() if k != "3.bias"}
    response = keyed.put(
        "/v2/models/mlp-spare/state_dict",
        content=safetensors_bytes(partial),
        params={"strict": "false"},
        headers=AUTH,
    )
    document = response.json()
    assert (document["missing_keys"], document["filled_from_version"], document["initialized_keys"]) == (
        ["3.bias"],
        "1",
        [],
    )
    manager = keyed.app.state.service.manager
    served = manager.version("mlp-spare").module.state_dict()["3.bias"].numpy()
    np.testing.assert_array_equal(served, mlp_weights(3)["3.bias"])  # mlp-spare version 1 is seed 3


def test_a_partial_upload_to_a_model_without_versions_keeps_the_initialization_for_missing_keys(
    keyed: TestClient,
) -> None:
    keyed.put("/v2/repository/models/new", json={"architecture": "mlp", "config": MLP_CONFIG}, headers=AUTH)
    partial = {k: v for k, v in mlp_weights(74).items() if k != "3.bias"}
    response = keyed.put(
        "/v2/models/new/state_dict",
        content=safetensors_bytes(partial),
        params={"strict": "false"},
        headers=AUTH,
    )
    assert response.status_code == 201, response.text
    document = response.json()
    assert (document["filled_from_version"], document["initialized_keys"]) == (None, ["3.bias"])


@pytest.mark.parametrize("depth", [65, 5000])
def test_a_model_json_nested_too_deep_is_400_and_writes_nothing(keyed: TestClient, depth: int) -> None:
    body = '{"architecture": "mlp", "x": ' + "[" * depth + "]" * depth + "}"
    response = keyed.put("/v2/repository/models/deep", content=body, headers=AUTH)
    assert (response.status_code, response.json()) == (
        400,
        {"error": "model.json nests JSON arrays and objects more than 64 levels deep"},
    )
    assert not (keyed.app.state.service.repository.root / "deep").exists()


def test_an_upload_to_a_model_unloaded_by_request_is_stored_and_served_once_loaded(keyed: TestClient) -> None:
    assert keyed.post("/v2/repository/models/mlp-spare/unload", headers=AUTH).status_code == 200
    response = keyed.put("/v2/models/mlp-spare/state_dict", content=WEIGHTS, headers=AUTH)
    assert response.status_code == 201
    document = response.json()
    assert (document["model_version"], document["served"], document["state"], document["reason"]) == (
        "2",
        False,
        "UNAVAILABLE",
        "unloaded",
    )
    assert keyed.get("/v2/models/mlp-spare/ready").status_code == 503
    assert keyed.post("/v2/repository/models/mlp-spare/load", headers=AUTH).json()["versions"] == ["1", "2"]
    body = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 1, 1, 1]}]}
    served = keyed.post("/v2/models/mlp-spare/infer", json=body).json()
    assert served["model_version"] == "2"
    expected = numpy_mlp(mlp_weights(70), np.ones((1, 4), np.float32))[0]
    np.testing.assert_allclose(served["outputs"][0]["data"], expected, rtol=1e-5)
