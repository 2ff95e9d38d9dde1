"""Users' own model files (``tests/app/user_models``, written for torch) served by a real server.

Each model is trained a few steps in real torch, its ``state_dict`` saved with
``torch.save`` and uploaded to a folder holding ``model.json`` (``"module"``) and
the model's code. The served outputs, captures and interventions are compared
with torch's on the same input.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import io
import json
import shutil
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import Server, binary_request, run_server, split_binary_response, wait_until

torch = pytest.importorskip("torch")
# torchvision's C++ operators fail to register beside the CPU torch wheel; the model files use only its
# Python modules, so its operator registrations are skipped (as tests/mininn/vision/_torchvision.py does)
sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))

USER_MODELS = Path(__file__).parent / "user_models"
KEY = "user-model-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
TOL = dict(rtol=1e-4, atol=1e-5)


@dataclass
class Case:
    """One user model: its folder, model.json, example inputs and how to train it."""

    name: str
    folder: str
    spec: dict[str, Any]
    inputs: Callable[[np.random.Generator], dict[str, np.ndarray]]
    loss: Callable[[Any, dict[str, Any]], Any] = field(default=lambda out, x: _sum_of_squares(out))
    model: Any = None  # the trained torch module (eval mode)
    lr: float = 0.05  # SGD's learning rate for the few training steps


def _sum_of_squares(out: Any) -> Any:
    parts = out.values() if isinstance(out, dict) else (out if isinstance(out, tuple) else (out,))
    return sum((p.float() ** 2).mean() for p in parts if p is not None)


def _image(shape: tuple[int, ...]) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(shape).astype(np.float32)


CASES = [
    Case(
        "cnn",
        "cnn",
        {"module": "model.py:SmallResNet", "init": {"num_classes": 5, "width": 4},
         "inputs": [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 16, 16]}],
         "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 5]}]},
        lambda rng: {"image": _image((2, 3, 16, 16))(rng)},
    ),
    Case(
        "two-inputs",
        "two_inputs",
        {"module": "model.py:ImageAndTabular",
         "inputs": [{"datatype": "FP32", "shape": [-1, 1, 8, 8]}, {"datatype": "FP32", "shape": [-1, 5]}]},
        lambda rng: {"image": _image((3, 1, 8, 8))(rng), "features": _image((3, 5))(rng)},
    ),
    Case(
        "tuple-heads",
        "heads",
        {"module": "model.py:TupleHeads", "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 6]}]},
        lambda rng: {"x": _image((4, 6))(rng)},
    ),
    Case(
        "dict-heads",
        "heads",
        {"module": "model.py:DictHeads", "init": {"d_hidden": 10},
         "inputs": [{"datatype": "FP32", "shape": [-1, 6]}]},
        lambda rng: {"x": _image((4, 6))(rng)},
    ),
    Case(
        "gpt",
        "gpt",
        {"module": "model.py:TinyGPT", "init": {"vocab_size": 50, "context": 16},
         "inputs": [{"name": "idx", "datatype": "INT64", "shape": [-1, -1]}]},
        lambda rng: {"idx": rng.integers(0, 50, (2, 7)).astype(np.int64)},
        loss=lambda out, x: out[1],
    ),
    Case(
        "factory",
        "factory",
        {"module": "model.py:make_mlp",
         "init": {"in_features": 3, "hidden": [8, 8], "out_features": 2, "activation": "silu"},
         "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3]}]},
        lambda rng: {"x": _image((5, 3))(rng)},
    ),
    Case(
        "einops-vit",
        "einops_vit",
        {"module": "model.py:ViT", "init": {"num_classes": 4},
         "inputs": [{"name": "img", "datatype": "FP32", "shape": [-1, 3, 8, 8]}]},
        lambda rng: {"img": _image((2, 3, 8, 8))(rng)},
    ),
    Case(
        "custom-function",
        "custom_function",
        {"module": "model.py:SwishQuantMLP", "init": {"d_hidden": 12},
         "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 6]}]},
        lambda rng: {"x": _image((4, 6))(rng)},
    ),
    Case(  # `from torch.utils.data import Dataset, DataLoader` and a Dataset beside the model
        "dataset-beside",
        "dataset_beside",
        {"module": "model.py:WindowForecaster", "init": {"channels": 3, "hidden": 16},
         "inputs": [{"name": "window", "datatype": "FP32", "shape": [-1, 3, 16]}]},
        lambda rng: {"window": _image((4, 3, 16))(rng)},
    ),
    Case(  # @torch.jit.script helpers in forward, a @torch.jit.ignore'd method, torch.jit.Final
        "jit-helpers",
        "jit_helpers",
        {"module": "model.py:ResidualMLP", "init": {"in_features": 8, "num_classes": 4},
         "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 8]}]},
        lambda rng: {"x": _image((5, 8))(rng)},
    ),
    Case(
        "keywords",
        "keywords",
        {"module": "model.py:KeywordNet", "init": {"channels": 6, "num_classes": 3},
         "inputs": [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 8, 8]}],
         "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 3]}]},
        lambda rng: {"image": _image((2, 3, 8, 8))(rng)},
    ),
    Case(
        "tv-backbone",
        "tv_backbone",
        {"module": "model.py:BackboneClassifier", "init": {"num_classes": 4},
         "inputs": [{"name": "images", "datatype": "FP32", "shape": [-1, 3, 64, 64]}]},
        lambda rng: {"images": _image((2, 3, 64, 64))(rng)},
        lr=1e-3,  # ResNet-50 diverges at 0.05 on batches of two
    ),
    Case(  # sparse COO adjacency built in forward, torch.spmm (issue 30)
        "graph-net",
        "graph_net",
        {"module": "model.py:GCN",
         "init": {"num_nodes": 10, "in_features": 5, "hidden": 16, "num_classes": 3},
         "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 10, 5]}]},
        lambda rng: {"x": _image((2, 10, 5))(rng)},
    ),
    Case(  # nn.Parameter(torch.FloatTensor(n, m)) initialised through .data.uniform_ (issue 30)
        "legacy-params",
        "legacy_params",
        {"module": "model.py:LegacyNet", "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, -1, 6]}]},
        lambda rng: {"x": _image((3, 4, 6))(rng)},
    ),
]
BY_NAME = {case.name: case for case in CASES}


def torch_import(folder: Path, package: str) -> Any:
    """Import ``folder/model.py`` with real torch, as the user ran it (relative imports work)."""
    if package not in sys.modules:
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        module = importlib.util.module_from_spec(spec)
        module.__path__ = [str(folder)]
        sys.modules[package] = module
    return importlib.import_module(f"{package}.model")


def train(case: Case) -> tuple[Any, bytes]:
    """The case's module trained 3 SGD steps in torch (then eval) and its ``torch.save``d state dict."""
    code = torch_import(USER_MODELS / case.folder, f"user_model_{case.folder}")
    torch.manual_seed(0)
    module_name = case.spec["module"].split(":")[1]
    model = getattr(code, module_name)(**case.spec.get("init", {}))
    optimizer = torch.optim.SGD(model.parameters(), lr=case.lr)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = {k: torch.from_numpy(v) for k, v in case.inputs(rng).items()}
        if case.name == "gpt":
            out = model(x["idx"], torch.roll(x["idx"], 1, dims=1))
        else:
            out = model(*x.values())
        loss = case.loss(out, x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return model, buffer.getvalue()


def torch_outputs(case: Case, x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    with torch.no_grad():
        out = case.model(*(torch.from_numpy(v) for v in x.values()))
    if isinstance(out, dict):
        return {k: v.numpy() for k, v in out.items()}
    if isinstance(out, tuple):
        kept = [o for o in out if o is not None]
        declared = [o["name"] for o in case.spec.get("outputs", [])]
        names = declared or [f"output__{i}" for i in range(len(kept))]
        return {name: o.numpy() for name, o in zip(names, kept)}
    names = [o["name"] for o in case.spec.get("outputs", [])] or ["output"]
    return {names[0]: out.numpy()}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose repository holds every case's code and model.json; weights uploaded as .pt."""
    folder = tmp_path_factory.mktemp("user_models")
    repository = folder / "model_repository"
    for case in CASES:
        target = repository / case.name
        shutil.copytree(USER_MODELS / case.folder, target)
        (target / "model.json").write_text(json.dumps(case.spec))
    simple = repository / "simple"
    shutil.copytree(USER_MODELS / "simple", simple)
    (simple / "model.json").write_text(json.dumps(SIMPLE_SPEC))
    (simple / "1").mkdir()
    (simple / "1" / "weights.safetensors").write_bytes(_empty_safetensors())
    env = {"MININN_API_KEY": KEY, "MININN_SEED_REPOSITORY": "false", "MININN_LOG_LEVEL": "info"}
    with run_server(repository, folder / "server.log", **env) as server:
        server.wait_ready(60)
        for case in CASES:
            case.model, body = train(case)
            response = httpx.put(f"{server.base_url}/v2/models/{case.name}/state_dict", content=body,
                                 headers=AUTH, timeout=60)
            assert response.status_code == 201, response.text
        yield server


SIMPLE_SPEC = {
    "module": "model.py:AddSub",
    "inputs": [{"datatype": "INT32", "shape": [-1, 16]}, {"datatype": "INT32", "shape": [-1, 16]}],
    "outputs": [{"name": "OUTPUT0", "datatype": "INT32", "shape": [-1, 16]},
                {"name": "OUTPUT1", "datatype": "INT32", "shape": [-1, 16]}],
}


def _empty_safetensors() -> bytes:
    header = b'{"__metadata__":{}}'
    header += b" " * (-len(header) % 8)
    return len(header).to_bytes(8, "little") + header


def _v2(array: np.ndarray) -> str:
    return {"float32": "FP32", "int64": "INT64", "int32": "INT32"}[str(array.dtype)]


def infer_json(server: Server, name: str, x: dict[str, np.ndarray], **extra: Any) -> dict[str, Any]:
    body = {"inputs": [{"name": k, "datatype": _v2(v), "shape": list(v.shape), "data": v.ravel().tolist()}
                       for k, v in x.items()], **extra}
    response = httpx.post(f"{server.base_url}/v2/models/{name}/infer", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def as_arrays(document: dict[str, Any]) -> dict[str, np.ndarray]:
    return {o["name"]: np.asarray(o["data"]).reshape(o["shape"]) for o in document["outputs"]}


@pytest.mark.parametrize("name", [case.name for case in CASES])
def test_served_outputs_equal_torch_over_json_and_binary(served: Server, name: str) -> None:
    case = BY_NAME[name]
    x = case.inputs(np.random.default_rng(7))
    expected = torch_outputs(case, x)
    over_json = as_arrays(infer_json(served, name, x))
    assert sorted(over_json) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(over_json[key], value, **TOL, err_msg=key)
    body, headers = binary_request(x, outputs=list(expected))
    response = httpx.post(f"{served.base_url}/v2/models/{name}/infer", content=body, headers=headers)
    assert response.status_code == 200, response.text
    length = int(response.headers["inference-header-content-length"])
    _, arrays = split_binary_response(response.content, length)
    for key, value in expected.items():
        np.testing.assert_allclose(arrays[key], value, **TOL, err_msg=key)


@pytest.mark.parametrize("name", [case.name for case in CASES])
def test_tritonclient_reads_user_model_outputs(served: Server, name: str) -> None:
    import tritonclient.http as httpclient

    case = BY_NAME[name]
    x = case.inputs(np.random.default_rng(8))
    expected = torch_outputs(case, x)
    with httpclient.InferenceServerClient(url=served.url) as client:
        inputs = []
        for key, value in x.items():
            tensor = httpclient.InferInput(key, list(value.shape), _v2(value))
            tensor.set_data_from_numpy(value)
            inputs.append(tensor)
        result = client.infer(name, inputs)
    for key, value in expected.items():
        np.testing.assert_allclose(result.as_numpy(key), value, **TOL, err_msg=key)


def test_metadata_names_outputs_from_the_warm_up(served: Server) -> None:
    def outputs(name: str) -> list[dict[str, Any]]:
        return httpx.get(f"{served.base_url}/v2/models/{name}").json()["outputs"]

    # a tuple whose second element (the loss without targets) is None: one output; sequence length varies
    assert outputs("gpt") == [{"name": "output__0", "datatype": "FP32", "shape": [-1, -1, 50]}]
    assert outputs("dict-heads") == [
        {"name": "logits", "datatype": "FP32", "shape": [-1, 4]},
        {"name": "box", "datatype": "FP32", "shape": [-1, 2]},
    ]
    assert [o["name"] for o in outputs("tuple-heads")] == ["output__0", "output__1"]
    assert [o["name"] for o in outputs("factory")] == ["output"]
    metadata = httpx.get(f"{served.base_url}/v2/models/two-inputs").json()
    assert [i["name"] for i in metadata["inputs"]] == ["image", "features"]  # forward's parameter names
    assert metadata["module"] == "model.py:ImageAndTabular"


def _torch_hooked(case: Case, module: str, x: dict[str, np.ndarray], edit: Callable[[Any], Any] | None = None
                  ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    seen: list[np.ndarray] = []

    def hook(_: Any, __: Any, output: Any) -> Any:
        seen.append(output.detach().clone().numpy())
        return edit(output) if edit is not None else None

    handle = case.model.get_submodule(module).register_forward_hook(hook)
    try:
        outputs = torch_outputs(case, x)
    finally:
        handle.remove()
    return seen[0], outputs


CAPTURES = [  # (model, module): one captured layer per case that shows something new
    ("cnn", "stage1"),
    ("gpt", "blocks.0.attn"),
    ("einops-vit", "to_patch_embedding.0"),
    ("custom-function", "body.3"),
    ("dataset-beside", "encoder"),
    ("jit-helpers", "blocks.1"),
    ("keywords", "mixer"),
    ("tv-backbone", "backbone.layer4"),
    ("graph-net", "gc1"),
    ("legacy-params", "pool"),
]


@pytest.mark.parametrize(("name", "module"), CAPTURES)
def test_activation_capture_equals_a_torch_forward_hook(served: Server, name: str, module: str) -> None:
    case = BY_NAME[name]
    x = case.inputs(np.random.default_rng(9))
    captured, _ = _torch_hooked(case, module, x)
    body = {"inputs": [{"name": k, "datatype": _v2(v), "shape": list(v.shape), "data": v.ravel().tolist()}
                       for k, v in x.items()], "modules": module}
    response = httpx.post(f"{served.base_url}/v2/models/{name}/activations", json=body, timeout=30)
    assert response.status_code == 200, response.text
    arrays = as_arrays(response.json())
    np.testing.assert_allclose(arrays[f"{module}:output"], captured, **TOL)


def test_intervention_changes_the_output_as_the_same_edit_in_torch(served: Server) -> None:
    case = BY_NAME["cnn"]
    x = case.inputs(np.random.default_rng(10))

    def zero_channels(output: Any) -> Any:
        output = output.clone()
        output[:, [0, 2]] = 0
        return output

    _, edited = _torch_hooked(case, "stage1", x, zero_channels)
    body = {"inputs": [{"name": "image", "datatype": "FP32", "shape": list(x["image"].shape),
                        "data": x["image"].ravel().tolist()}],
            "interventions": [{"module": "stage1", "op": "zero", "index": [0, 2]}]}
    response = httpx.post(f"{served.base_url}/v2/models/cnn/activations", json=body, timeout=30)
    assert response.status_code == 200, response.text
    served_logits = as_arrays(response.json())["logits"]
    np.testing.assert_allclose(served_logits, edited["logits"], **TOL)
    assert not np.allclose(served_logits, torch_outputs(case, x)["logits"], **TOL)


def test_gpt_batches_and_refuses_a_too_long_sequence_with_the_models_own_message(served: Server) -> None:
    too_long = {"idx": np.zeros((1, 17), np.int64)}
    body = {"inputs": [{"name": "idx", "datatype": "INT64", "shape": [1, 17], "data": [0] * 17}]}
    response = httpx.post(f"{served.base_url}/v2/models/gpt/infer", json=body, timeout=30)
    assert response.status_code == 422
    assert "model.py:" in response.json()["error"]
    assert "17 tokens do not fit the context of 16" in response.json()["error"]
    assert too_long["idx"].shape == (1, 17)


def test_triton_simple_example_calls_pass_through_tritonclient(served: Server) -> None:
    """The calls of Triton's simple_http_infer_client example, against the few-line model.py."""
    import tritonclient.http as httpclient

    with httpclient.InferenceServerClient(url=served.url) as client:
        input0 = np.arange(16, dtype=np.int32).reshape(1, 16)
        input1 = np.ones((1, 16), dtype=np.int32)
        inputs = [httpclient.InferInput("INPUT0", [1, 16], "INT32"),
                  httpclient.InferInput("INPUT1", [1, 16], "INT32")]
        inputs[0].set_data_from_numpy(input0, binary_data=False)
        inputs[1].set_data_from_numpy(input1, binary_data=True)
        outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
                   httpclient.InferRequestedOutput("OUTPUT1", binary_data=False)]
        result = client.infer("simple", inputs, outputs=outputs, query_params={"test_1": 1})
        assert result.get_response()["model_name"] == "simple"
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), input0 + input1)
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), input0 - input1)
        assert result.as_numpy("OUTPUT0").dtype == np.int32
        metadata = client.get_model_metadata("simple")
        assert [i["name"] for i in metadata["inputs"]] == ["INPUT0", "INPUT1"]
        assert client.is_model_ready("simple")


def test_code_upload_is_refused_by_default_and_writes_nothing(served: Server) -> None:
    folder = served.repository / "cnn"
    before = sorted(p.name for p in folder.iterdir())
    code = (folder / "model.py").read_bytes()
    response = httpx.put(f"{served.base_url}/v2/repository/models/cnn/files/model.py", content=b"x = 1\n",
                         headers=AUTH)
    assert response.status_code == 403
    assert "MININN_ALLOW_CODE_UPLOAD=true" in response.json()["error"]
    assert sorted(p.name for p in folder.iterdir()) == before
    assert (folder / "model.py").read_bytes() == code


def test_a_data_file_uploads_with_the_write_key(served: Server) -> None:
    url = f"{served.base_url}/v2/repository/models/factory/files/labels.txt"
    assert httpx.put(url, content=b"yes\nno\n").status_code in (401, 403)
    response = httpx.put(url, content=b"yes\nno\n", headers=AUTH)
    assert response.status_code == 201, response.text
    assert (served.repository / "factory" / "labels.txt").read_bytes() == b"yes\nno\n"
    bad = httpx.put(f"{served.base_url}/v2/repository/models/factory/files/..%2Fx", content=b"", headers=AUTH)
    assert bad.status_code in (400, 404)


def test_architectures_are_listed_with_config_keys(served: Server) -> None:
    listing = httpx.get(f"{served.base_url}/v2/repository/architectures").json()["architectures"]
    mlp = next(a for a in listing if a["name"] == "mlp")
    assert {"key": "in_features", "type": "int", "default": 784, "required": False} in mlp["config"]
    assert mlp["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [-1, 784]}]
    assert {a["name"] for a in listing} >= {"lenet5", "resnet18", "bert_encoder", "minilm"}


# -- models that fail -----------------------------------------------------------------------------------

BROKEN = {
    "missing-layer": (
        "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.q = nn.quantized.Linear(4, 4)\n",
        "model.py:7 in __init__: torch.nn.quantized is not available in mininn",
    ),
    "missing-import": (
        "import torch\nfrom torch.nn import Magic\n\n\nclass Net(torch.nn.Module):\n    pass\n",
        "model.py:2: torch.nn.Magic is not available in mininn",
    ),
    "raises-in-init": (
        "import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        raise ValueError('no config for this size')\n",
        "model.py:7 in __init__: ValueError: no config for this size",
    ),
    "downloads-weights": (
        "import torch\nfrom torch.hub import load_state_dict_from_url\n\n\nclass Net(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = torch.nn.Linear(4, 4)\n"
        "        self.load_state_dict(load_state_dict_from_url('https://example.org/net-1a2b3c4d.pth'))\n",
        "model.py:9 in __init__: DownloadRefusedError: https://example.org/net-1a2b3c4d.pth is not in the "
        "hub cache",
    ),
    "raises-at-warm-up": (
        "import torch\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        return x.reshape(3, 5)\n",
        "model.py:6 in forward: ",
    ),
}


def test_broken_model_code_is_unavailable_with_file_and_line_and_the_rest_serves(tmp_path: Path) -> None:
    repository = tmp_path / "model_repository"
    for name, (code, _) in BROKEN.items():
        (repository / name / "1").mkdir(parents=True)
        (repository / name / "model.py").write_text(code)
        spec = {"module": "model.py:Net", "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]}
        (repository / name / "model.json").write_text(json.dumps(spec))
        (repository / name / "1" / "weights.safetensors").write_bytes(_empty_safetensors())
    shutil.copytree(USER_MODELS / "simple", repository / "simple")
    (repository / "simple" / "model.json").write_text(json.dumps(SIMPLE_SPEC))
    (repository / "simple" / "1").mkdir()
    (repository / "simple" / "1" / "weights.safetensors").write_bytes(_empty_safetensors())
    env = {"MININN_SEED_REPOSITORY": "false"}
    with run_server(repository, tmp_path / "server.log", **env) as server:
        server.wait_ready(60)
        index = {row["name"]: row for row in httpx.post(f"{server.base_url}/v2/repository/index").json()}
        for name, (_, reason) in BROKEN.items():
            assert index[name]["state"] == "UNAVAILABLE"
            assert reason in index[name]["reason"], index[name]["reason"]
            response = httpx.post(f"{server.base_url}/v2/models/{name}/infer", json={"inputs": []})
            assert response.status_code == 503
            assert httpx.get(f"{server.base_url}/v2/models/{name}/ready").status_code != 200
        assert index["simple"]["state"] == "READY"
        assert httpx.get(f"{server.base_url}/v2/health/ready").status_code == 200
        x = np.ones((1, 16), np.int32)
        assert infer_json(server, "simple", {"INPUT0": x, "INPUT1": x})["outputs"][0]["data"] == [2] * 16
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def test_opted_in_code_upload_is_checked_and_a_broken_one_changes_nothing(tmp_path: Path) -> None:
    repository = tmp_path / "model_repository"
    shutil.copytree(USER_MODELS / "factory", repository / "factory")
    spec = BY_NAME["factory"].spec
    (repository / "factory" / "model.json").write_text(json.dumps(spec))
    env = {"MININN_API_KEY": KEY, "MININN_SEED_REPOSITORY": "false", "MININN_ALLOW_CODE_UPLOAD": "true"}
    x = {"x": np.ones((1, 3), np.float32)}
    with run_server(repository, tmp_path / "server.log", **env) as server:
        server.wait_ready(60)
        torch.manual_seed(0)
        model = torch_import(USER_MODELS / "factory", "user_model_factory").make_mlp(**spec["init"])
        body = io.BytesIO()
        torch.save(model.state_dict(), body)
        url = f"{server.base_url}/v2/models/factory/state_dict"
        assert httpx.put(url, content=body.getvalue(), headers=AUTH).status_code == 201
        before = infer_json(server, "factory", x)["outputs"][0]["data"]
        code = (repository / "factory" / "model.py").read_bytes()
        files_url = f"{server.base_url}/v2/repository/models/factory/files/model.py"

        broken = code.replace(b"nn.Linear(width, out_features)", b"nn.Linear(width, out_features + 1)")
        response = httpx.put(files_url, content=broken, headers=AUTH)
        assert response.status_code == 422, response.text
        assert "nothing changed" in response.json()["error"] and "size mismatch" in response.json()["error"]
        assert (repository / "factory" / "model.py").read_bytes() == code
        assert not (repository / "factory" / ".code-from-http.json").exists()
        assert infer_json(server, "factory", x)["outputs"][0]["data"] == before

        not_python = httpx.put(files_url, content=b"def broken(:\n", headers=AUTH)
        assert not_python.status_code == 422 and "model.py:1" in not_python.json()["error"]

        scaled = code.replace(b"return nn.Sequential(*layers)", b"layers.append(nn.Tanh())\n    "
                              b"return nn.Sequential(*layers)")
        response = httpx.put(files_url, content=scaled, headers=AUTH)
        assert response.status_code == 200, response.text
        after = infer_json(server, "factory", x)["outputs"][0]["data"]
        np.testing.assert_allclose(after, np.tanh(before), rtol=1e-5)


@pytest.mark.slow
def test_a_folder_made_by_add_model_serves_on_both_workers_within_a_second(tmp_path: Path) -> None:
    from test_multiworker_uploads import _request, _workers

    repository = tmp_path / "model_repository"
    repository.mkdir()
    case = BY_NAME["two-inputs"]
    case_model, state = train(case)
    weights = tmp_path / "net.pt"
    weights.write_bytes(state)
    env = {"MININN_SEED_REPOSITORY": "false", "MININN_WORKERS": "2"}
    x = case.inputs(np.random.default_rng(3))
    with torch.no_grad():
        expected = case_model(*(torch.from_numpy(v) for v in x.values())).numpy()
    with run_server(repository, tmp_path / "server.log", **env) as server:
        ready: set[int] = set()
        wait_until(lambda: (ready.add(_request(server, "GET", "/v2/health/ready")[0]) or len(ready) == 2)
                   and len(_workers(server)) == 2, 60, "both workers ready")
        code = str(USER_MODELS / "two_inputs" / "model.py") + ":ImageAndTabular"
        command = [sys.executable, "-m", "app", "add-model", "two-inputs", "--code", code,
                   "--weights", str(weights), "--input", ":FP32:-1,1,8,8", "--input", ":FP32:-1,5",
                   "--repository", str(repository)]
        added = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert added.returncode == 0, added.stderr
        assert "urllib.request" in added.stdout and "/v2/models/two-inputs/infer" in added.stdout
        body = json.dumps({"inputs": [{"name": k, "datatype": "FP32", "shape": list(v.shape),
                                       "data": v.ravel().tolist()} for k, v in x.items()]})
        serving: set[int] = set()

        def both_serve() -> bool:
            worker, status, document = _request(server, "POST", "/v2/models/two-inputs/infer", body)
            if status == 200:
                np.testing.assert_allclose(as_arrays(document)["output"], expected, **TOL)
                serving.add(worker)
            return len(serving) == 2

        assert wait_until(both_serve, 10.0, "both workers serving the new folder") < 1.0


def test_an_opted_in_code_upload_is_checked_with_the_folders_code_packages(tmp_path: Path) -> None:
    repository = tmp_path / "model_repository"
    folder = repository / "packaged"
    (folder / "parts").mkdir(parents=True)
    parts = "from torch import nn\n\n\ndef head():\n    return nn.Linear(3, 2)\n"
    (folder / "parts" / "__init__.py").write_text(parts)
    (folder / "model.py").write_text("from .parts import head\n\n\ndef build():\n    return head()\n")
    spec = {"module": "model.py:build", "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3]}]}
    (folder / "model.json").write_text(json.dumps(spec))
    env = {"MININN_API_KEY": KEY, "MININN_SEED_REPOSITORY": "false", "MININN_ALLOW_CODE_UPLOAD": "true"}
    with run_server(repository, tmp_path / "server.log", **env) as server:
        server.wait_ready(60)
        code = b"from .parts import head\n\n\ndef build():\n    return head()  # same model, edited file\n"
        response = httpx.put(f"{server.base_url}/v2/repository/models/packaged/files/model.py", content=code,
                             headers=AUTH)
        assert response.status_code == 200, response.text
