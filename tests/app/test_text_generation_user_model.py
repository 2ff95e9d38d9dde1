"""A user's language model served by the app: ``"task": "text-generation"`` in model.json.

The repository's loader builds it, loads its weights, warms it up and exposes its ``TextGenerator``
as ``version.generator``; ``/infer`` still serves one forward pass (``input_ids`` -> ``logits``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import start_client
from safetensors.numpy import save_file

import mininn
from app.errors import UnprocessableError
from app.store.repository import parse_spec

torch = pytest.importorskip("torch")

MODEL_FILE = Path(__file__).parents[1] / "models" / "text_models" / "nanogpt" / "model.py"
INIT = {"block_size": 32, "vocab_size": 64, "n_layer": 1, "n_head": 2, "n_embd": 16}
BIGRAM = """import torch.nn as nn


class Bigram(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(64, 64)

    def forward(self, idx):
        return self.table(idx)
"""


def _torch_model() -> Any:
    name = "nanogpt_app_fixture_model"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, MODEL_FILE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    torch.manual_seed(3)
    return sys.modules[name].GPT(**INIT).eval()


def _write(folder: Path, code: str, spec: dict[str, Any], state: dict[str, np.ndarray]) -> None:
    (folder / "1").mkdir(parents=True)
    (folder / "model.py").write_text(code)
    (folder / "model.json").write_text(json.dumps(spec))
    save_file(state, str(folder / "1" / "weights.safetensors"))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    repository = tmp_path_factory.mktemp("text_models")
    model = _torch_model()
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    spec = {"module": "model.py:GPT", "init": INIT, "task": "text-generation"}
    _write(repository / "nanogpt", MODEL_FILE.read_text(), spec, state)
    bigram = {"table.weight": np.eye(64, dtype=np.float32)}
    _write(repository / "bigram", BIGRAM, {"module": "model.py:Bigram", "task": "text-generation"}, bigram)
    _write(repository / "bigram-8", BIGRAM,
           {"module": "model.py:Bigram", "task": "text-generation", "context_length": 8}, bigram)
    _write(repository / "broken", MODEL_FILE.read_text(), {**spec, "module": "model.py:BrokenGPT"}, state)
    _write(repository / "bad-tokenizer", MODEL_FILE.read_text(), spec, state)
    (repository / "bad-tokenizer" / "tokenizer.json").write_text('{"model": {"type": "BPE", "vocab": 3}}')
    client = start_client(repository)
    try:
        yield client, model
    finally:
        client.__exit__(None, None, None)


def test_infer_gives_the_logits_of_one_forward(served: tuple[Any, Any]) -> None:
    client, model = served
    ids = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]], dtype=np.int64)
    tensor = {"name": "input_ids", "datatype": "INT64", "shape": [2, 5], "data": ids.ravel().tolist()}
    body = {"inputs": [tensor]}
    response = client.post("/v2/models/nanogpt/infer", json=body)
    assert response.status_code == 200, response.text
    output = response.json()["outputs"][0]
    with torch.no_grad():
        expected = model(torch.from_numpy(ids))[0].numpy()
    assert (output["name"], output["datatype"], output["shape"]) == ("logits", "FP32", [2, 5, 64])
    np.testing.assert_allclose(np.reshape(output["data"], output["shape"]), expected, rtol=1e-4, atol=1e-5)


def test_metadata_shows_input_ids_and_logits(served: tuple[Any, Any]) -> None:
    client, _ = served
    metadata = client.get("/v2/models/nanogpt").json()
    assert metadata["inputs"] == [{"name": "input_ids", "datatype": "INT64", "shape": [-1, -1]}]
    assert metadata["outputs"] == [{"name": "logits", "datatype": "FP32", "shape": [-1, -1, 64]}]


def test_the_loaded_version_has_a_generator_equal_to_torch(served: tuple[Any, Any]) -> None:
    client, model = served
    version = client.app.state.service.manager.version("nanogpt")
    generator = version.generator
    assert (generator.context_length, generator.vocab_size, generator.tokenizer) == (32, 64, None)
    assert generator.module is version.module
    prompt = [7, 8, 9]
    with mininn.no_grad():
        seq = generator.new_sequence()
        logits = generator.prefill(seq, prompt)
        ours = []
        for _ in range(10):
            ours.append(int(np.argmax(logits)))
            logits = generator.decode([seq], [ours[-1]])[0]
    ids = torch.tensor([prompt])
    with torch.no_grad():
        for _ in range(10):
            ids = torch.cat([ids, model(ids)[0][:, -1].argmax(-1, keepdim=True)], dim=1)
    assert ours == ids[0, 3:].tolist()


def test_a_model_without_context_length_is_unavailable_with_the_reason(served: tuple[Any, Any]) -> None:
    client, _ = served
    index = {entry["name"]: entry for entry in client.post("/v2/repository/index", json={}).json()}
    assert index["bigram"]["state"] == "UNAVAILABLE"
    assert "needs 'context_length' in model.json" in index["bigram"]["reason"]
    assert index["bigram-8"]["state"] == "READY"
    assert client.app.state.service.manager.version("bigram-8").generator.context_length == 8


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("broken", "warm-up forward on the example inputs: model.py:BrokenGPT: forward gave logits float32 "
                   "[1, 64] for input_ids [1, 2]"),
        ("bad-tokenizer", "cannot read tokenizer.json"),
    ],
)
def test_a_broken_language_model_is_unavailable_with_the_reason(
    served: tuple[Any, Any], name: str, words: str
) -> None:
    client, _ = served
    index = {entry["name"]: entry for entry in client.post("/v2/repository/index", json={}).json()}
    assert index[name]["state"] == "UNAVAILABLE"
    assert words in index[name]["reason"]


def test_infer_refuses_more_tokens_than_the_context_length(served: tuple[Any, Any]) -> None:
    client, _ = served
    body = {"inputs": [{"name": "input_ids", "datatype": "INT64", "shape": [1, 9], "data": [1] * 9}]}
    response = client.post("/v2/models/bigram-8/infer", json=body)
    assert response.status_code in (400, 422), response.text
    assert "9 tokens per row; this model's context length is 8" in response.json()["error"]


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ({"module": "model.py:Net", "task": "chat"}, "unknown task 'chat'"),
        ({"architecture": "mlp", "context_length": 8}, "'context_length' goes with 'module' code"),
        ({"module": "model.py:Net", "task": "text-generation", "context_length": 0},
         "key 'context_length': Input should be greater than 0"),
        ({"module": "model.py:Net", "task": "text-generation",
          "inputs": [{"datatype": "INT64", "shape": [-1, -1]}]}, "leave 'inputs' and 'outputs' out"),
        ({"module": "model.py:Net"}, "'module' needs 'inputs'"),
    ],
)
def test_bad_text_generation_model_json_is_422_naming_the_key(document: dict[str, Any], words: str) -> None:
    with pytest.raises(UnprocessableError) as caught:
        parse_spec(json.dumps(document), "m/model.json")
    assert words in caught.value.message


def test_a_text_generation_module_needs_no_inputs() -> None:
    spec = parse_spec(json.dumps({"module": "model.py:Net", "task": "text-generation"}), "m/model.json")
    assert (spec.task, spec.context_length, spec.inputs) == ("text-generation", None, None)


def test_the_store_and_the_models_name_the_task_alike() -> None:
    from app.store.repository import TEXT_GENERATION
    from models.causal_lm import TEXT_GENERATION as MODELS_TEXT_GENERATION

    assert TEXT_GENERATION == MODELS_TEXT_GENERATION == "text-generation"
