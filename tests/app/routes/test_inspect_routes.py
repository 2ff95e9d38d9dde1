from __future__ import annotations

import numpy as np
import pytest
from _app_support import mlp_weights
from fastapi.testclient import TestClient

torch = pytest.importorskip("torch")


def test_parameters_list_every_tensor_like_torch(client: TestClient) -> None:
    from _app_support import torch_mlp

    body = client.get("/v2/models/mlp/parameters").json()
    assert (body["model_name"], body["model_version"]) == ("mlp", "2")
    reference = torch_mlp(mlp_weights(2))
    assert [(p["name"], p["shape"]) for p in body["parameters"]] == [
        (n, list(p.shape)) for n, p in reference.named_parameters()
    ]
    assert all(p["datatype"] == "FP32" and p["requires_grad"] and p["persistent"] for p in body["parameters"])
    assert body["buffers"] == []
    assert body["totals"]["parameter_elements"] == sum(p.numel() for p in reference.parameters())
    assert "stats" not in body["parameters"][0]


def test_parameter_stats_and_histogram(client: TestClient) -> None:
    body = client.get("/v2/models/mlp/versions/1/parameters", params={"stats": "true", "bins": 5}).json()
    assert body["model_version"] == "1"
    weight = next(p for p in body["parameters"] if p["name"] == "0.weight")
    values = mlp_weights(1)["0.weight"].astype(np.float64)
    stats = weight["stats"]
    assert stats["mean"] == pytest.approx(values.mean(), rel=1e-6)
    assert stats["std"] == pytest.approx(values.std(), rel=1e-6)
    assert stats["l2_norm"] == pytest.approx(np.linalg.norm(values), rel=1e-6)
    assert (stats["min"], stats["max"]) == (pytest.approx(values.min()), pytest.approx(values.max()))
    assert stats["histogram"]["bins"] == 5 and sum(stats["histogram"]["counts"]) == values.size


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("bins=0", "query parameter 'bins': Input should be greater than or equal to 1"),
        (
            "bins=abc",
            "query parameter 'bins': Input should be a valid integer, unable to parse string as an integer",
        ),
        (
            "stats=maybe",
            "query parameter 'stats': Input should be a valid boolean, unable to interpret input",
        ),
    ],
)
def test_bad_query_values_are_400(client: TestClient, query: str, message: str) -> None:
    response = client.get(f"/v2/models/mlp/parameters?{query}")
    assert (response.status_code, response.json()) == (400, {"error": message})


def test_module_tree(client: TestClient) -> None:
    body = client.get("/v2/models/mlp/modules").json()
    root = body["root"]
    assert (root["name"], root["type"], root["training"]) == ("", "MLP", False)
    assert root["total_parameters"] == 4 * 8 + 8 + 8 * 3 + 3
    assert [(c["name"], c["type"]) for c in root["children"]] == [
        ("0", "Linear"),
        ("1", "ReLU"),
        ("2", "Dropout"),
        ("3", "Linear"),
        ("4", "Dropout"),
    ]
    first = root["children"][0]
    assert first["extra_repr"] == "in_features=4, out_features=8, bias=True"
    assert (first["parameters"], first["total_parameters"], first["children"]) == (40, 40, [])


def test_inspection_errors(client: TestClient) -> None:
    assert client.get("/v2/models/nope/modules").status_code == 404
    assert client.get("/v2/models/mlp/versions/7/parameters").status_code == 404
    assert client.get("/v2/models/broken/parameters").status_code == 503
    assert client.get("/v2/models/mlp/versions/1/modules").json()["model_version"] == "1"
