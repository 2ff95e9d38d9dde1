"""The upload mistakes a newcomer makes get an error that names the fix, and change nothing."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import MLP_CONFIG, WRITE_HEADERS, WRITE_KEY, mlp_weights, start_client
from fastapi.testclient import TestClient

torch = pytest.importorskip("torch")


class BiLSTMClassifier(torch.nn.Module):
    """A user's own model class: torch.save(model) pickles it by its module and name."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = torch.nn.Embedding(20, 4)
        self.rnn = torch.nn.LSTM(4, 3, batch_first=True, bidirectional=True)
        self.head = torch.nn.Linear(6, 2)


@pytest.fixture
def client(repository: Path) -> TestClient:
    return start_client(repository, api_key=WRITE_KEY)


def _torch_bytes(value: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _state() -> dict[str, Any]:
    return {k: torch.from_numpy(v) for k, v in mlp_weights(9).items()}


def _versions(repository: Path) -> list[str]:
    return sorted(p.name for p in (repository / "mlp").iterdir() if p.name.isdigit())


def test_a_training_checkpoint_names_its_state_dict_entry_and_key_uploads_it(
    client: TestClient, repository: Path
) -> None:
    before = _versions(repository)
    body = _torch_bytes({"model_state_dict": _state(), "optimizer": {"state": {}}, "epoch": 3})
    response = client.put("/v2/models/mlp/state_dict", content=body, headers=WRITE_HEADERS)
    assert response.status_code == 422
    message = response.json()["error"]
    assert "training checkpoint ('model_state_dict', 'optimizer', 'epoch')" in message
    assert "?key=model_state_dict" in message
    assert _versions(repository) == before
    url = "/v2/models/mlp/state_dict?key=model_state_dict"
    response = client.put(url, content=body, headers=WRITE_HEADERS)
    assert response.status_code == 201, response.text
    missing = client.put("/v2/models/mlp/state_dict?key=weights", content=body, headers=WRITE_HEADERS)
    assert missing.status_code == 422 and "no entry 'weights'" in missing.json()["error"]


def test_a_whole_pickled_module_says_to_save_the_state_dict(client: TestClient, repository: Path) -> None:
    before = _versions(repository)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    response = client.put("/v2/models/mlp/state_dict", content=_torch_bytes(model), headers=WRITE_HEADERS)
    assert response.status_code == 400
    assert "torch.save(model.state_dict(), path) instead" in response.json()["error"]
    assert _versions(repository) == before


def test_a_whole_pickled_model_of_the_users_own_class_names_it_and_the_fix(
    client: TestClient, repository: Path
) -> None:
    before = _versions(repository)
    response = client.put(
        "/v2/models/mlp/state_dict", content=_torch_bytes(BiLSTMClassifier()), headers=WRITE_HEADERS
    )
    assert response.status_code == 400
    message = response.json()["error"]
    assert f"refused pickle global {__name__}.BiLSTMClassifier" in message
    assert f"holds a pickled {__name__}.BiLSTMClassifier object" in message
    assert message.endswith("save its weights with torch.save(model.state_dict(), path) instead")
    assert _versions(repository) == before


def test_an_input_without_datatype_names_the_one_to_add(client: TestClient) -> None:
    body = {"inputs": [{"name": "input", "shape": [1, 4], "data": [1, 2, 3, 4]}]}
    response = client.post("/v2/models/mlp/infer", json=body)
    assert response.status_code == 422
    assert response.json()["error"] == (
        "input 'input' has no 'datatype'; add \"datatype\": \"FP32\" (model 'mlp' expects it)"
    )


def test_too_many_rows_say_how_to_raise_the_limit(client: TestClient) -> None:
    rows = MLP_CONFIG["in_features"] * 100
    body = {"inputs": [{"name": "input", "shape": [100, 4], "datatype": "FP32", "data": [0.5] * rows}]}
    response = client.post("/v2/models/mlp/infer", json=body)
    assert response.status_code == 422
    assert "raise the limit with \"max_batch_size\" in its model.json" in response.json()["error"]
    assert np.isfinite(rows)
