"""The upload mistakes a newcomer makes get an error that names the fix, and change nothing."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import MLP_CONFIG, WRITE_HEADERS, WRITE_KEY, mlp_weights, start_client, torch_mlp
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


WRAPPERS = {
    "DataParallel": (lambda model: torch.nn.DataParallel(model), "module."),
    "torch.compile": (lambda model: torch.compile(model), "_orig_mod."),
}


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
def test_a_wrapped_models_state_dict_says_which_strip_prefix_to_use(
    client: TestClient, repository: Path, wrapper: str
) -> None:
    wrap, prefix = WRAPPERS[wrapper]
    state = wrap(torch_mlp(mlp_weights(9))).state_dict()
    assert all(key.startswith(prefix) for key in state)  # as torch saves them
    before = _versions(repository)
    response = client.put("/v2/models/mlp/state_dict", content=_torch_bytes(state), headers=WRITE_HEADERS)
    assert response.status_code == 422
    assert response.json()["error"] == (
        f"the uploaded state dict does not fit architecture 'mlp': the checkpoint's keys start with "
        f"'{prefix}' (4 of the model's keys are there with it), as torch.compile ('_orig_mod.') and "
        f"nn.DataParallel ('module.') save them; upload it with ?strip_prefix={prefix}"
    )
    assert response.json()["strip_prefix"] == prefix
    assert _versions(repository) == before
    url = f"/v2/models/mlp/state_dict?strip_prefix={prefix}"
    assert client.put(url, content=_torch_bytes(state), headers=WRITE_HEADERS).status_code == 201


def test_many_keys_that_do_not_fit_are_summarised_not_listed(client: TestClient, repository: Path) -> None:
    state = {f"encoder.layer.{i}.weight": torch.zeros(2) for i in range(300)}
    before = _versions(repository)
    response = client.put("/v2/models/mlp/state_dict", content=_torch_bytes(state), headers=WRITE_HEADERS)
    assert response.status_code == 422
    message = response.json()["error"]
    assert message == (
        "the uploaded state dict does not fit architecture 'mlp': 4 missing key(s): \"0.weight\", "
        "\"0.bias\", \"3.weight\", \"3.bias\"; 300 unexpected key(s): \"encoder.layer.0.weight\", "
        "\"encoder.layer.1.weight\", \"encoder.layer.2.weight\", \"encoder.layer.3.weight\", "
        "\"encoder.layer.4.weight\" and 295 more (every key is in the body's missing_keys, "
        "unexpected_keys and size_mismatches)"
    )
    assert len(response.json()["unexpected_keys"]) == 300
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
