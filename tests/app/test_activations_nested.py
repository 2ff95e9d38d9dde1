"""Interventions on a nested output over HTTP: ``element`` names ``h_n`` of an LSTM's
``(output, (h_n, c_n))`` by the path its capture name uses, the served model's outputs equal
the same edit made by a torch hook on the same model file, and a path that names no tensor is
a 422 listing the paths that do, with no hook left behind."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import start_client, write_model
from fastapi.testclient import TestClient

torch = pytest.importorskip("torch")

MODEL_PY = '''
import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 3, batch_first=True)
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        output, (h_n, c_n) = self.rnn(x)
        return self.head(h_n[-1] + output[:, -1] + c_n[-1])
'''
X = np.random.default_rng(4).standard_normal((2, 5, 4)).astype(np.float32)


def _torch_model(folder: Path) -> Any:
    spec = importlib.util.spec_from_file_location("tagger_model", folder / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    return module.Tagger().eval()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Any]]:
    root = tmp_path_factory.mktemp("nested") / "model_repository"
    folder = root / "tagger"
    folder.mkdir(parents=True)
    (folder / "model.py").write_text(MODEL_PY)
    model = _torch_model(folder)
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    spec = {"module": "model.py:Tagger", "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 5, 4]}]}
    write_model(root, "tagger", {1: weights}, spec)
    client = start_client(root)
    yield client, model
    client.__exit__(None, None, None)


def _request(intervention: dict[str, Any]) -> dict[str, Any]:
    tensor = {"name": "x", "shape": list(X.shape), "datatype": "FP32", "data": X.ravel().tolist()}
    return {"inputs": [tensor], "modules": ["rnn"], "interventions": [intervention]}


def _outputs(response: Any) -> dict[str, np.ndarray]:
    assert response.status_code == 200, response.text
    outputs = response.json()["outputs"]
    return {o["name"]: np.array(o["data"], np.float32).reshape(o["shape"]) for o in outputs}


def _torch_logits(model: Any, position: int) -> np.ndarray:
    def zero_state(module: Any, args: Any, out: Any) -> Any:
        output, states = out
        states = list(states)
        states[position] = torch.zeros_like(states[position])
        return output, tuple(states)

    handle = model.rnn.register_forward_hook(zero_state)
    try:
        with torch.no_grad():
            return model(torch.from_numpy(X)).numpy()
    finally:
        handle.remove()


def _no_hooks_left(client: TestClient) -> bool:
    versions = client.app.state.service.manager.entry("tagger").versions.values()
    return all(
        not (m._forward_hooks or m._forward_pre_hooks or m._forward_hooks_with_kwargs)
        for version in versions
        if version.loaded is not None
        for m in version.loaded.module.modules()
    )


@pytest.mark.parametrize(("element", "position"), [("1.0", 0), ([1, 0], 0), ("1.1", 1), ([1, 1], 1)])
def test_element_path_edits_h_n_or_c_n_as_a_torch_hook_does(served, element, position):
    client, model = served
    response = client.post(
        "/v2/models/tagger/activations", content=json.dumps(_request({"module": "rnn", "op": "zero",
                                                                       "element": element}))
    )
    outputs = _outputs(response)
    np.testing.assert_allclose(outputs["output"], _torch_logits(model, position), rtol=1e-5, atol=1e-5)
    edited, kept = ("rnn:output.1.0", "rnn:output.1.1")[:: 1 if position == 0 else -1]
    assert not outputs[edited].any() and outputs[kept].any()
    assert _no_hooks_left(client)


def test_element_path_in_the_interventions_parameter_of_infer(served):
    client, model = served
    spec = json.dumps([{"module": "rnn", "op": "zero", "element": "1.0"}])
    body = {**_request({})}
    del body["modules"], body["interventions"]
    body["parameters"] = {"capture": "rnn", "interventions": spec}
    outputs = _outputs(client.post("/v2/models/tagger/infer", content=json.dumps(body)))
    np.testing.assert_allclose(outputs["output"], _torch_logits(model, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("element", "shown"), [(1, "1"), ("1.2", "'1.2'"), ("2", "'2'")])
def test_an_element_that_names_no_tensor_is_422_listing_the_paths(served, element, shown):
    client, _ = served
    response = client.post(
        "/v2/models/tagger/activations", content=json.dumps(_request({"module": "rnn", "op": "zero",
                                                                       "element": element}))
    )
    assert response.status_code == 422
    assert response.json()["error"] == (
        f"model 'tagger': interventions[0].element {shown} names no tensor in the tuple output of 'rnn'; "
        "its tensors are at '0', '1.0', '1.1'"
    )
    assert _no_hooks_left(client)
