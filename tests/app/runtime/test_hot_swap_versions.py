"""Hot swaps in one process: requests finish on the version they started with; memory stays bounded."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import MLP_CONFIG, mlp_weights, numpy_mlp, wait_until, write_model
from _upload_support import AUTH, KEY
from fastapi.testclient import TestClient
from safetensors.numpy import save as safetensors_bytes

from app.store.repository import ModelRepository
from mininn.serialization import write_safetensors

SLOW = {"architecture": "test-slow", "config": {"seconds": 0.6, "only_negative": True}}


def _infer(
    client: TestClient, name: str, x: list[float], version: int | None = None
) -> tuple[str, list[float]]:
    path = f"/v2/models/{name}" + (f"/versions/{version}" if version else "") + "/infer"
    response = client.post(
        path, json={"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": x}]}
    )
    assert response.status_code == 200, response.text
    return response.json()["model_version"], response.json()["outputs"][0]["data"]


def _in_flight(client: TestClient, call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Start ``call`` on a thread; return once its forward pass is running."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(call()))
    manager = client.app.state.service.manager
    thread.start()
    wait_until(lambda: manager.version("gain").runner.pending > 0, 10, "the slow request to start")
    return thread, result


@pytest.fixture
def slow_client(slow_repository: Path, client_factory: Callable[..., TestClient]) -> TestClient:
    write_model(slow_repository, "gain", {1: {"gain": np.ones(1, np.float32)}}, SLOW)
    return client_factory(model_repository=slow_repository, api_key=KEY)


def test_a_request_in_flight_finishes_on_its_version_while_an_upload_swaps_in_the_next(
    slow_client: TestClient,
) -> None:
    thread, result = _in_flight(slow_client, lambda: _infer(slow_client, "gain", [-1.0, 2.0]))
    upload = slow_client.put("/v2/models/gain/state_dict", content=_gain(3.0), headers=AUTH)
    assert (upload.status_code, upload.json()["model_version"]) == (201, "2")
    assert thread.is_alive()  # the upload did not wait for it
    assert _infer(slow_client, "gain", [1.0, 2.0]) == ("2", [3.0, 6.0])
    thread.join()
    assert result == [("1", [-1.0, 2.0])]


def test_a_request_in_flight_finishes_when_its_model_is_unloaded(slow_client: TestClient) -> None:
    thread, result = _in_flight(slow_client, lambda: _infer(slow_client, "gain", [-1.0, 2.0]))
    assert slow_client.post("/v2/repository/models/gain/unload", headers=AUTH).status_code == 200
    refused = slow_client.post(
        "/v2/models/gain/infer",
        json={"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]},
    )
    assert (refused.status_code, refused.json()) == (
        503,
        {"error": "model 'gain' is not ready: unavailable (unloaded)"},
    )
    thread.join()
    assert result == [("1", [-1.0, 2.0])]


def test_a_request_in_flight_finishes_when_its_version_is_deleted(slow_client: TestClient) -> None:
    assert slow_client.put("/v2/models/gain/state_dict", content=_gain(5.0), headers=AUTH).status_code == 201
    thread, result = _in_flight(slow_client, lambda: _infer(slow_client, "gain", [-1.0, 2.0]))
    deleted = slow_client.delete("/v2/models/gain/versions/2", headers=AUTH)
    assert (deleted.status_code, deleted.json()["versions"]) == (200, ["1"])
    assert _infer(slow_client, "gain", [1.0, 2.0]) == ("1", [1.0, 2.0])
    thread.join()
    assert result == [("2", [-5.0, 10.0])]


def test_a_request_in_flight_finishes_on_its_version_while_the_model_is_reloaded(
    slow_client: TestClient,
) -> None:
    manager = slow_client.app.state.service.manager
    before = manager.version("gain")
    thread, result = _in_flight(slow_client, lambda: _infer(slow_client, "gain", [-1.0, 2.0]))
    assert slow_client.post("/v2/repository/models/gain/load", headers=AUTH).status_code == 200
    assert manager.version("gain") is not before  # a new object serves from now on
    thread.join()
    assert result == [("1", [-1.0, 2.0])]


def _gain(value: float) -> bytes:
    return safetensors_bytes({"gain": np.array([value], np.float32)})


def test_a_replaced_version_is_freed_when_its_last_request_lets_go(client_factory: Any) -> None:
    client = client_factory(api_key=KEY)
    manager = client.app.state.service.manager
    held = manager.version("mlp-spare")  # as a request in flight holds it
    module = weakref.ref(held.module)
    upload = client.put(
        "/v2/models/mlp-spare/state_dict", content=safetensors_bytes(mlp_weights(60)), headers=AUTH
    )
    assert upload.status_code == 201
    assert manager.entry("mlp-spare").versions[1].loaded is None  # unloaded: no request named it
    assert module() is not None
    del held
    wait_until(lambda: module() is None, 5, "the unloaded version to be freed")
    assert manager.collect_unloaded() == 0


def test_older_versions_load_when_named_and_stay_within_the_bound(
    tmp_path: Path, client_factory: Any
) -> None:
    repository = tmp_path / "versions"
    write_model(repository, "m", {v: mlp_weights(v) for v in range(1, 5)})
    client = client_factory(model_repository=repository)
    manager = client.app.state.service.manager
    loaded = lambda: sorted(v for v, slot in manager.entry("m").versions.items() if slot.loaded)  # noqa: E731
    assert loaded() == [3, 4]  # the newest and MININN_MAX_OLDER_VERSIONS more
    assert client.get("/v2/models/m").json()["versions"] == ["1", "2", "3", "4"]
    x = np.ones((1, 4), np.float32)
    for version, expected in [(1, [1, 4]), (2, [2, 4]), (4, [2, 4]), (1, [1, 4])]:
        body = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 1, 1, 1]}]}
        response = client.post(f"/v2/models/m/versions/{version}/infer", json=body).json()
        assert response["model_version"] == str(version)
        np.testing.assert_allclose(
            response["outputs"][0]["data"], numpy_mlp(mlp_weights(version), x)[0], rtol=1e-5
        )
        assert loaded() == expected
    stats = client.get("/v2/models/m/stats").json()["model_stats"]
    assert [(s["version"], s["inference_count"]) for s in stats] == [("1", 2), ("2", 1), ("3", 0), ("4", 1)]


def test_with_no_older_versions_kept_only_the_newest_stays_loaded(
    tmp_path: Path, client_factory: Any
) -> None:
    repository = tmp_path / "versions"
    write_model(repository, "m", {v: mlp_weights(v) for v in range(1, 4)})
    client = client_factory(model_repository=repository, max_older_versions=0)
    manager = client.app.state.service.manager
    body = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 1, 1, 1]}]}
    assert client.post("/v2/models/m/versions/1/infer", json=body).json()["model_version"] == "1"
    assert [v for v, slot in manager.entry("m").versions.items() if slot.loaded] == [3]


def _commit(root: Path, name: str, seed: int) -> int:
    repository = ModelRepository(root)
    with repository.new_staging(name) as staging:
        write_safetensors(staging.path / "weights.safetensors", mlp_weights(seed), {})
        return repository.commit_version(name, staging)


def _served(client: TestClient, name: str) -> str | None:
    response = client.post(
        f"/v2/models/{name}/infer",
        json={"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]},
    )
    return response.json()["model_version"] if response.status_code == 200 else None


def test_the_watch_follows_what_other_writers_do_to_the_repository(
    repository: Path, client_factory: Any
) -> None:
    client = client_factory(api_key=KEY)
    failures = client.app.state.service.manager.metrics.model_load_failures
    assert _commit(repository, "mlp", 61) == 3
    # within a poll (250 ms) and a load; generous bounds: the machine may be busy (the multi-worker
    # test holds a server to the one-second promise)
    wait_until(lambda: _served(client, "mlp") == "3", 5, "the new version to serve")
    ModelRepository(repository).delete_version("mlp", 3)
    wait_until(lambda: _served(client, "mlp") == "2", 5, "the deleted version to go")
    write_model(repository, "late", {1: mlp_weights(62)})
    wait_until(lambda: _served(client, "late") == "1", 5, "a new model to load")
    spec = {"architecture": "mlp", "config": {**MLP_CONFIG, "hidden_sizes": [5]}}
    (repository / "late" / "model.json").write_text(json.dumps(spec))
    wait_until(lambda: failures.labels("late")._value.get() == 1, 5, "the reload to fail")
    assert _served(client, "late") == "1"  # a failed reload keeps serving
    shutil.rmtree(repository / "mlp-spare")
    wait_until(lambda: _reasons(client).get("mlp-spare") == "removed from the repository", 5, "the unload")


def _reasons(client: TestClient) -> dict[str, str]:
    return {row["name"]: row["reason"] for row in client.post("/v2/repository/index").json()}


def test_the_watch_leaves_a_model_unloaded_by_request_alone(repository: Path, client_factory: Any) -> None:
    client = client_factory(api_key=KEY)
    assert client.post("/v2/repository/models/mlp/unload", headers=AUTH).status_code == 200
    _commit(repository, "mlp", 63)
    time.sleep(0.6)
    assert client.get("/v2/models/mlp/ready").status_code == 503
    assert client.post("/v2/repository/models/mlp/load", headers=AUTH).json()["versions"] == ["1", "2", "3"]
    assert _served(client, "mlp") == "3"


def test_metrics_keep_series_of_loaded_versions_only(client_factory: Any) -> None:
    client = client_factory(api_key=KEY)
    body = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}
    for seed in range(5):
        content = safetensors_bytes(mlp_weights(90 + seed))
        assert client.put("/v2/models/mlp-spare/state_dict", content=content, headers=AUTH).status_code == 201
        assert client.post("/v2/models/mlp-spare/infer", json=body).status_code == 200
    text = client.get("/metrics").text
    series = {
        (line.split("{", 1)[0], v)
        for line in text.splitlines()
        for v in re.findall(r'model="mlp-spare",version="(\d+)"', line)
    }
    assert {version for _, version in series} == {"6"}
    assert {"mininn_inference_duration_seconds_count", "mininn_batch_size_count"} <= {n for n, _ in series}
