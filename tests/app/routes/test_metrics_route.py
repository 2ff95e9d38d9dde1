from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families


def samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def test_requests_and_failures_are_counted_by_model_and_endpoint(client: TestClient) -> None:
    body = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}
    client.post("/v2/models/mlp/infer", json=body)
    client.post("/v2/models/mlp/infer", json=body)
    client.post("/v2/models/mlp/infer", json={"inputs": []})
    client.get("/v2/models/some-unknown-name")
    found = samples(client)
    endpoint = "/v2/models/{model_name}/infer"
    labels = {"model": "mlp", "endpoint": endpoint, "method": "POST"}
    assert value(found, "mininn_requests_total", **labels, status="200") == 2
    assert value(found, "mininn_requests_total", **labels, status="422") == 1
    assert value(found, "mininn_request_failures_total", model="mlp", endpoint=endpoint, status="422") == 1
    unknown = {"model": "_unknown", "endpoint": "/v2/models/{model_name}", "status": "404"}
    assert value(found, "mininn_request_failures_total", **unknown) == 1
    assert value(found, "mininn_request_duration_seconds_count", model="mlp", endpoint=endpoint) == 3
    assert value(found, "mininn_inference_duration_seconds_count", model="mlp", version="2") == 2
    assert value(found, "mininn_requests_in_flight") == 1  # the /metrics request itself


def test_model_load_metrics(client: TestClient) -> None:
    found = samples(client)
    assert value(found, "mininn_model_load_duration_seconds", model="mlp", version="1") > 0
    assert value(found, "mininn_model_ready", model="mlp") == 1
    assert value(found, "mininn_model_ready", model="broken") == 0
    assert value(found, "mininn_model_load_failures_total", model="broken") == 1
