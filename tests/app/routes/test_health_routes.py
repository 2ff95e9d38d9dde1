from __future__ import annotations

import threading
import time
from pathlib import Path

from _app_support import start_client, wait_until
from fastapi.testclient import TestClient


def test_server_metadata(client: TestClient) -> None:
    response = client.get("/v2")
    assert response.status_code == 200
    body = response.json()
    assert body["name"] == "mininn-serve"
    assert body["version"] == "0.1.0"
    assert {
        "binary_tensor_data",
        "classification",
        "model_repository",
        "statistics",
        "model_configuration",
    } <= set(body["extensions"])


def test_live_and_ready_answer_the_protocol_bodies(client: TestClient) -> None:
    assert (client.get("/v2/health/live").status_code, client.get("/v2/health/live").json()) == (
        200,
        {"live": True},
    )
    assert (client.get("/v2/health/ready").status_code, client.get("/v2/health/ready").json()) == (
        200,
        {"ready": True},
    )


def test_ready_waits_for_the_start_up_load_but_live_does_not(slow_repository: Path) -> None:
    client = start_client(slow_repository, wait=False)
    try:
        live, ready = client.get("/v2/health/live"), client.get("/v2/health/ready")
        assert live.status_code == 200
        assert ready.status_code == 503
        assert ready.json() == {"error": "the server is still loading its models", "ready": False}
        wait_until(lambda: client.get("/v2/health/ready").status_code == 200, 10, "ready")
    finally:
        client.__exit__(None, None, None)


def test_a_failed_model_does_not_hold_the_server_back(client: TestClient) -> None:
    assert client.get("/v2/models/broken/ready").status_code == 503
    assert client.get("/v2/health/ready").status_code == 200


def test_health_answers_while_a_long_forward_runs(slow_repository: Path) -> None:
    client = start_client(slow_repository)
    try:
        body = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [-1, 2]}]}
        results: list[int] = []
        worker = threading.Thread(
            target=lambda: results.append(client.post("/v2/models/slower/infer", json=body).status_code)
        )
        worker.start()
        time.sleep(0.2)  # the forward pass (2 s) is running now
        started = time.monotonic()
        assert client.get("/v2/health/live").status_code == 200
        assert client.get("/v2/health/ready").status_code == 200
        answered = time.monotonic() - started
        worker.join()
        assert results == [200]
        assert answered < 1.0, f"health checks waited {answered:.2f} s for the forward pass"
    finally:
        client.__exit__(None, None, None)
