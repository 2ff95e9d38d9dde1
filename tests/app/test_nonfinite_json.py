"""NaN and infinity over JSON: read as Triton's tokens or as strings, answered as strings in strict JSON."""

from __future__ import annotations

import json

import numpy as np
from fastapi.testclient import TestClient


def _refuse(constant: str) -> None:
    raise AssertionError(f"the response is not strict JSON: it holds {constant}")


def test_nan_inputs_give_strict_json_outputs_with_nonfinite_strings(client: TestClient) -> None:
    for data in ('[NaN, 1, 2, 3]', '["NaN", 1, 2, 3]'):
        body = '{"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": %s}]}' % data
        headers = {"Content-Type": "application/json"}
        response = client.post("/v2/models/mlp/infer", content=body, headers=headers)
        assert response.status_code == 200, response.text
        output = json.loads(response.content, parse_constant=_refuse)["outputs"][0]
        assert output["data"] == ["NaN", "NaN", "NaN"]
        assert np.isnan(np.array(output["data"], dtype=np.float32)).all()


def test_infinity_strings_are_read_as_floats_and_other_strings_are_refused(client: TestClient) -> None:
    body = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32",
                        "data": ["Infinity", "-Infinity", 0, 1]}]}
    assert client.post("/v2/models/mlp/infer", json=body).status_code == 200
    body["inputs"][0]["data"] = ["1.5", 0, 0, 0]
    response = client.post("/v2/models/mlp/infer", json=body)
    assert response.status_code == 422
    assert "data holds '1.5', not FP32 values" in response.json()["error"]


def test_binary_outputs_stay_exact(client: TestClient) -> None:
    x = np.array([[np.nan, 1, 2, 3]], np.float32)
    header = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32",
                          "parameters": {"binary_data_size": 16}}],
              "outputs": [{"name": "output", "parameters": {"binary_data": True}}]}
    raw = json.dumps(header).encode()
    response = client.post("/v2/models/mlp/infer", content=raw + x.tobytes(),
                           headers={"Inference-Header-Content-Length": str(len(raw))})
    length = int(response.headers["inference-header-content-length"])
    assert np.isnan(np.frombuffer(response.content[length:], "<f4")).all()
