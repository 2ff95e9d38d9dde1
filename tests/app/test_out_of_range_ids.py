"""A token id past a served model's vocabulary: 422 naming the input, the embedding's path, its
largest id and the bad id (JSON and binary requests, batched or not); nothing else is affected."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest
from _app_support import binary_request, start_client, write_model
from fastapi.testclient import TestClient

MODEL_PY = '''
import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, 4)

    def forward(self, input_ids):
        return self.word_embeddings(input_ids)


class Classifier(nn.Module):
    def __init__(self, vocab=30):
        super().__init__()
        self.embeddings = Embeddings(vocab)
        self.head = nn.Linear(4, 2)

    def forward(self, input_ids, attention_mask):
        x = self.embeddings(input_ids) * attention_mask.unsqueeze(-1)
        return self.head(x.sum(1))
'''
SPEC = {
    "module": "model.py:Classifier",
    "init": {"vocab": 30},
    "inputs": [
        {"name": "input_ids", "datatype": "INT64", "shape": [-1, -1]},
        {"name": "attention_mask", "datatype": "INT64", "shape": [-1, -1]},
    ],
    "max_batch_size": 8,
}
MESSAGE = (
    "model 'classifier' rejected the inputs: input 'input_ids' has id 30 at [0, 2], but "
    "embeddings.word_embeddings (Embedding(30, 4)) takes ids 0 to 29 (IndexError: index out of range in self)"
)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("ids") / "model_repository"
    (root / "classifier").mkdir(parents=True)
    (root / "classifier" / "model.py").write_text(MODEL_PY)
    rng = np.random.default_rng(0)
    weights = {
        "embeddings.word_embeddings.weight": rng.standard_normal((30, 4)).astype(np.float32),
        "head.weight": rng.standard_normal((2, 4)).astype(np.float32),
        "head.bias": np.zeros(2, np.float32),
    }
    write_model(root, "classifier", {1: weights}, SPEC)
    client = start_client(root)
    yield client
    client.__exit__(None, None, None)


def _json(ids: list[list[int]]) -> str:
    shape = [len(ids), len(ids[0])]
    flat = [i for row in ids for i in row]
    return json.dumps({"inputs": [
        {"name": "input_ids", "datatype": "INT64", "shape": shape, "data": flat},
        {"name": "attention_mask", "datatype": "INT64", "shape": shape, "data": [1] * len(flat)},
    ]})


def test_an_id_past_the_vocabulary_names_input_module_size_and_id(client: TestClient) -> None:
    response = client.post("/v2/models/classifier/infer", content=_json([[1, 2, 30]]))
    assert response.status_code == 422
    assert response.json()["error"] == MESSAGE
    assert client.post("/v2/models/classifier/infer", content=_json([[1, 2, 29]])).status_code == 200


def test_a_binary_request_gets_the_same_message(client: TestClient) -> None:
    ids = np.array([[1, 2, 30]], dtype=np.int64)
    body, headers = binary_request({"input_ids": ids, "attention_mask": np.ones_like(ids)})
    response = client.post("/v2/models/classifier/infer", content=body, headers=headers)
    assert response.status_code == 422
    assert response.json()["error"] == MESSAGE


def test_a_negative_id_is_named_too(client: TestClient) -> None:
    response = client.post("/v2/models/classifier/infer", content=_json([[-1, 2, 3]]))
    assert response.status_code == 422
    assert "input 'input_ids' has id -1 at [0, 0]" in response.json()["error"]
