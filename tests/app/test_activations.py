"""``POST .../activations`` and the ``capture`` parameter of ``/infer``, in process: captures equal
torch's hooks, statistics, interventions, the element limit, every bad field (status, message, and
no hook left behind) and 50 concurrent mixed requests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import mlp_weights, split_binary_response, start_client, write_model
from fastapi.testclient import TestClient

from app import Settings, create_app

torch = pytest.importorskip("torch")

CNN_CONFIG = {"in_channels": 1, "image_size": 12, "num_classes": 3}
TOL = dict(rtol=1e-5, atol=1e-5)
X = np.random.default_rng(5).standard_normal((2, 1, 12, 12)).astype(np.float32)


def cnn_weights(seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = {
        "conv1.weight": (20, 1, 5, 5),
        "conv1.bias": (20,),
        "conv2.weight": (20, 20, 5, 5),
        "conv2.bias": (20,),
        "fc.weight": (3, 320),
        "fc.bias": (3,),
    }
    return {k: (rng.standard_normal(s) * 0.2).astype(np.float32) for k, s in shapes.items()}


class TorchCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 20, 5)
        self.conv2 = torch.nn.Conv2d(20, 20, 5)
        self.fc = torch.nn.Linear(320, 3)

    def forward(self, x: Any) -> Any:
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(x.flatten(1))


def torch_cnn(seed: int) -> TorchCNN:
    model = TorchCNN()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in cnn_weights(seed).items()})
    return model.eval()


def torch_run(
    edits: dict[str, Any] | None = None, mode: str = "output", seed: int = 7
) -> dict[str, np.ndarray]:
    """The logits and every capture of the cnn's weights from ``seed`` (version 2: 7,
    version 1: 8), recorded by plain torch hooks (edits first)."""
    model = torch_cnn(seed)
    got: dict[str, np.ndarray] = {}
    handles = []
    for name in ("conv1", "conv2", "fc"):
        module = model.get_submodule(name)
        if edits and name in edits:

            def edit(mod: Any, args: Any, out: Any, fn: Any = edits[name]) -> Any:
                out = out.clone()
                fn(out)
                return out

            handles.append(module.register_forward_hook(edit))
        if mode in ("input", "both"):
            handles.append(
                module.register_forward_pre_hook(
                    lambda mod, args, name=name: got.__setitem__(f"{name}:input", args[0].numpy().copy())
                )
            )
        if mode in ("output", "both"):
            handles.append(
                module.register_forward_hook(
                    lambda mod, args, out, name=name: got.__setitem__(f"{name}:output", out.numpy().copy())
                )
            )
    with torch.no_grad():
        got["logits"] = model(torch.from_numpy(X)).numpy()
    for handle in handles:
        handle.remove()
    return got


def write_repository(root: Path) -> Path:
    """``cnn`` (simple_cnn; version 1: weights of seed 8, version 2: seed 7) and ``mlp``."""
    write_model(
        root,
        "cnn",
        {1: cnn_weights(8), 2: cnn_weights(7)},
        {"architecture": "simple_cnn", "config": CNN_CONFIG},
    )
    write_model(root, "mlp", {1: mlp_weights(1)})
    return root


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_repository(tmp_path_factory.mktemp("activations") / "model_repository")


@pytest.fixture(scope="module")
def client(repository: Path) -> Iterator[TestClient]:
    client = start_client(repository)
    yield client
    client.__exit__(None, None, None)


def served_modules(client: TestClient, name: str) -> list[Any]:
    """Every module of every loaded version of model ``name``."""
    slots = client.app.state.service.manager.entry(name).versions.values()
    return [m for slot in slots if slot.loaded is not None for m in slot.loaded.module.modules()]


def no_hooks_left(client: TestClient) -> bool:
    return all(
        not (
            m._forward_hooks
            or m._forward_pre_hooks
            or m._forward_hooks_with_kwargs
            or m._forward_pre_hooks_with_kwargs
            or m._forward_hooks_always_called
        )
        for name in ("cnn", "mlp")
        for m in served_modules(client, name)
    )


def image(binary: bool = False, **extra: Any) -> dict[str, Any]:
    tensor: dict[str, Any] = {"name": "image", "shape": list(X.shape), "datatype": "FP32"}
    if not binary:
        tensor["data"] = X.ravel().tolist()
    return {"inputs": [tensor], **extra}


def post_json(client: TestClient, path: str, document: dict[str, Any]) -> httpx.Response:
    return client.post(path, content=json.dumps(document))


def post_binary(client: TestClient, path: str, document: dict[str, Any]) -> httpx.Response:
    document["inputs"][0]["parameters"] = {"binary_data_size": X.nbytes}
    header = json.dumps(document).encode()
    return client.post(
        path, content=header + X.tobytes(), headers={"Inference-Header-Content-Length": str(len(header))}
    )


def arrays(response: httpx.Response) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    assert response.status_code == 200, response.text
    length = response.headers.get("inference-header-content-length")
    if length is None:
        document = response.json()
        return document, {
            o["name"]: np.array(o["data"], np.float32).reshape(o["shape"]) for o in document["outputs"]
        }
    return split_binary_response(response.content, int(length))


# ---- captures -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["output", "input", "both"])
def test_activations_return_outputs_then_captures_equal_to_torch_hooks(client, mode):
    response = post_json(client, "/v2/models/cnn/activations", image(modules=["fc", "conv*"], capture=mode))
    document, got = arrays(response)
    theirs = torch_run(mode=mode)
    kinds = {"output": ["output"], "input": ["input"], "both": ["input", "output"]}[mode]
    names = [f"{m}:{k}" for m in ("conv1", "conv2", "fc") for k in kinds]
    assert [o["name"] for o in document["outputs"]] == ["logits", "probabilities", *names]
    for name in ["logits", *names]:
        np.testing.assert_allclose(got[name], theirs[name], **TOL, err_msg=name)
    assert document["model_name"] == "cnn" and document["model_version"] == "2"
    assert no_hooks_left(client)


def test_binary_requests_get_binary_captures_and_fields_may_sit_in_parameters(client):
    document = image(
        binary=True, parameters={"binary_data_output": True, "modules": "conv2, fc", "capture": "output"}
    )
    response = post_binary(client, "/v2/models/cnn/versions/1/activations", document)
    header, got = arrays(response)
    assert response.headers["inference-header-content-length"]
    assert [o["name"] for o in header["outputs"]] == ["logits", "probabilities", "conv2:output", "fc:output"]
    assert all("data" not in o for o in header["outputs"])
    np.testing.assert_allclose(got["fc:output"], got["logits"], **TOL)
    np.testing.assert_allclose(got["conv2:output"], torch_run(seed=8)["conv2:output"], **TOL)
    assert header["model_version"] == "1"


def test_reduce_stats_returns_statistics_as_json_beside_the_outputs(client):
    response = post_json(
        client, "/v2/models/cnn/activations", image(modules=["conv1", "fc"], reduce="stats", bins=4)
    )
    document, _ = arrays(response)
    assert [o["name"] for o in document["outputs"]] == ["logits", "probabilities"]
    assert [a["name"] for a in document["activations"]] == ["conv1:output", "fc:output"]
    conv1 = torch.from_numpy(torch_run()["conv1:output"]).double()
    stats = document["activations"][0]
    assert stats["shape"] == [2, 20, 8, 8]
    assert stats["mean"] == pytest.approx(conv1.mean().item(), rel=1e-5)
    assert stats["std"] == pytest.approx(conv1.std(correction=0).item(), rel=1e-5)
    assert stats["min"] == pytest.approx(conv1.min().item(), rel=1e-6)
    assert stats["max"] == pytest.approx(conv1.max().item(), rel=1e-6)
    assert stats["l2_norm"] == pytest.approx(conv1.norm().item(), rel=1e-5)
    assert stats["zero_fraction"] == 0.0
    assert stats["histogram"] == torch.histc(conv1, bins=4).long().tolist()
    assert len(stats["bin_edges"]) == 5


def _zero_channels(o: Any) -> None:
    o[:, [0, 5]] = 0


INTERVENTIONS = [
    ({"module": "conv1", "op": "zero", "index": [0, 5]}, "conv1", _zero_channels),
    ({"module": "conv2", "op": "scale", "value": 3.0, "index": 2}, "conv2", lambda o: o[:, 2].mul_(3.0)),
    ({"module": "conv2", "op": "add", "value": 0.5, "index": ":, :, 0:2"}, "conv2",
     lambda o: o[:, :, 0:2].add_(0.5)),
    ({"module": "fc", "op": "set", "value": [1.0, -1.0, 0.0]}, "fc",
     lambda o: o.copy_(torch.tensor([1.0, -1.0, 0.0]).expand_as(o))),
]


@pytest.mark.parametrize(("spec", "module", "edit"), INTERVENTIONS, ids=[s[0]["op"] for s in INTERVENTIONS])
def test_interventions_give_the_outputs_of_the_same_edit_by_a_torch_hook(client, spec, module, edit):
    response = post_json(client, "/v2/models/cnn/activations", image(modules=["fc"], interventions=[spec]))
    _, got = arrays(response)
    theirs = torch_run({module: edit})
    np.testing.assert_allclose(got["logits"], theirs["logits"], **TOL)
    assert not np.allclose(got["logits"], torch_run()["logits"], atol=1e-4)
    assert no_hooks_left(client)


def test_interventions_alone_need_no_modules_and_may_be_a_json_string_parameter(client):
    spec = [{"module": "conv1", "op": "zero"}]
    response = post_json(
        client, "/v2/models/cnn/activations", image(parameters={"interventions": json.dumps(spec)})
    )
    document, got = arrays(response)
    assert [o["name"] for o in document["outputs"]] == ["logits", "probabilities"]
    np.testing.assert_allclose(got["logits"], torch_run({"conv1": lambda o: o.zero_()})["logits"], **TOL)


# ---- the infer parameter --------------------------------------------------------------------
def test_infer_capture_parameter_appends_captures_as_outputs(client):
    plain = arrays(post_json(client, "/v2/models/cnn/infer", image()))[1]
    document, got = arrays(
        post_json(client, "/v2/models/cnn/infer", image(parameters={"capture": "conv*,fc"}))
    )
    assert [o["name"] for o in document["outputs"]] == [
        "logits",
        "probabilities",
        "conv1:output",
        "conv2:output",
        "fc:output",
    ]
    np.testing.assert_array_equal(got["logits"], plain["logits"])
    np.testing.assert_allclose(got["conv2:output"], torch_run()["conv2:output"], **TOL)
    assert no_hooks_left(client)


def test_infer_requested_outputs_filter_model_outputs_but_captures_still_come_binary(client):
    document = image(
        binary=True,
        parameters={"capture": "fc", "capture_mode": "both"},
        outputs=[{"name": "probabilities", "parameters": {"binary_data": True}}],
    )
    header, got = arrays(post_binary(client, "/v2/models/cnn/infer", document))
    assert [o["name"] for o in header["outputs"]] == ["probabilities", "fc:input", "fc:output"]
    assert all("binary_data_size" in o["parameters"] for o in header["outputs"])
    assert got["fc:input"].shape == (2, 320)


def test_infer_interventions_parameter_edits_the_forward(client):
    spec = json.dumps([{"module": "fc", "op": "add", "value": 1.0}])
    _, got = arrays(
        post_json(client, "/v2/models/cnn/infer", image(parameters={"capture": "fc", "interventions": spec}))
    )
    np.testing.assert_allclose(got["logits"], torch_run()["logits"] + 1.0, **TOL)
    np.testing.assert_array_equal(got["fc:output"], got["logits"])


# ---- limits and errors ----------------------------------------------------------------------
def test_captures_over_the_element_limit_are_413_naming_the_total(repository):
    client = start_client(repository, max_activation_elements=3000)
    try:
        response = post_json(client, "/v2/models/cnn/activations", image(modules=["conv*", "fc"]))
        assert response.status_code == 413
        assert response.json() == {
            "error": (
                "the captures of model 'cnn' would return 3206 elements, over the limit of 3000 "
                "(MININN_MAX_ACTIVATION_ELEMENTS); capture fewer modules, send a smaller batch, or use "
                '"reduce": "stats"'
            )
        }
        smaller = post_json(client, "/v2/models/cnn/activations", image(modules=["conv2", "fc"]))
        assert smaller.status_code == 200
        assert no_hooks_left(client)
    finally:
        client.__exit__(None, None, None)


ACTIVATION_ERRORS = [
    (
        {"modules": ["conv3"]},
        "modules[0] 'conv3' is not a module of the model; closest names: 'conv2', 'conv1'",
    ),
    (
        {"modules": ["layer1.*"]},
        "modules[0] pattern 'layer1.*' matches no module; the model's top-level modules are 'conv1', "
        "'conv2', 'fc'",
    ),
    (
        {"modules": 3},
        "modules must be a list of module names or glob patterns, or one comma-separated string; got 3",
    ),
    (
        {"modules": ["fc"], "capture": "outputs"},
        "capture must be one of 'output', 'input', 'both', got 'outputs'",
    ),
    ({"modules": ["fc"], "reduce": "max"}, "reduce must be one of 'none', 'stats', got 'max'"),
    ({"modules": ["fc"], "reduce": "stats", "bins": 0}, "bins must be an integer from 1 to 10000, got 0"),
    ({"modules": ["fc"], "bins": "10"}, "bins must be an integer from 1 to 10000, got '10'"),
    (
        {"interventions": {"module": "fc", "op": "zero"}},
        "interventions must be a list of interventions, got {'module': 'fc', 'op': 'zero'}",
    ),
    (
        {"interventions": [{"module": "fc", "op": "negate"}]},
        "interventions[0].op must be one of 'zero', 'scale', 'add', 'set', got 'negate'",
    ),
    (
        {"interventions": [{"module": "fc", "op": "scale"}]},
        "interventions[0].value is required by op 'scale'",
    ),
    (
        {"interventions": [{"module": "fcc", "op": "zero"}]},
        "interventions[0].module 'fcc' is not a module of the model; closest names: 'fc'",
    ),
    (
        {
            "interventions": [
                {"module": "fc", "op": "zero", "index": "0:"},
                {"module": "fc", "op": "zero", "index": [0.5]},
            ]
        },
        "interventions[1].index must be an int, a non-empty list of ints (dimension 1) or an index "
        "expression string such as ':, :, 0', got [0.5]",
    ),
    (
        {"interventions": [{"module": "fc", "op": "zero", "dim": 1}]},
        "interventions[0].dim is not a known key; use 'module', 'op', 'value', 'index', 'element'",
    ),
    (
        {"parameters": {"interventions": "[{"}},
        "interventions is a string but not a JSON list of interventions: Expecting property name "
        "enclosed in double quotes: line 1 column 3 (char 2)",
    ),
    (
        {"modules": ["fc"], "parameters": {"modules": "conv1"}},
        "'modules' is given both at the top level and in 'parameters'; give it once",
    ),
    (
        {"capture": "input"},
        "an activations request needs 'modules' (names or glob patterns of the modules to capture) or "
        "'interventions'",
    ),
    (
        {"interventions": [{"module": "fc", "op": "zero", "index": [3]}]},
        "model 'cnn': interventions[0].index [3] does not fit the output of 'fc' with shape [2, 3]: index "
        "3 is out of bounds for axis 1 with size 3",
    ),
    (
        {"interventions": [{"module": "conv1", "op": "set", "value": [1, 2], "index": 0}]},
        "model 'cnn': interventions[0].value of shape [2] does not broadcast to the [2, 8, 8] elements of "
        "'conv1' that index selects",
    ),
]


@pytest.mark.parametrize(("fields", "message"), ACTIVATION_ERRORS, ids=[m[:60] for _, m in ACTIVATION_ERRORS])
def test_bad_activation_fields_are_422_naming_the_field_and_leave_no_hook(client, fields, message):
    response = post_json(client, "/v2/models/cnn/activations", image(**fields))
    assert (response.status_code, response.json()) == (422, {"error": message})
    assert no_hooks_left(client)


INFER_ERRORS = [
    (
        {"capture": 5},
        "parameter 'capture' must be a comma-separated string of module names or glob "
        'patterns, such as "layer1.*,fc"; got 5',
    ),
    (
        {"capture": "fc,conv9"},
        "parameter 'capture': modules[1] 'conv9' is not a module of the model; "
        "closest names: 'conv2', 'conv1'",
    ),
    (
        {"capture": "fc", "capture_mode": "all"},
        "parameter 'capture_mode' must be one of 'output', 'input', 'both', got 'all'",
    ),
    (
        {"capture_mode": "input"},
        "parameter 'capture_mode' needs the parameter 'capture' (modules to capture, comma-separated)",
    ),
    (
        {"capture": "fc", "interventions": '[{"module": "fc"}]'},
        "parameter 'interventions': interventions[0].op is required",
    ),
]


@pytest.mark.parametrize(("parameters", "message"), INFER_ERRORS, ids=[m[:60] for _, m in INFER_ERRORS])
def test_bad_capture_parameters_of_infer_are_422_and_leave_no_hook(client, parameters, message):
    response = post_json(client, "/v2/models/cnn/infer", image(parameters=parameters))
    assert (response.status_code, response.json()) == (422, {"error": message})
    assert no_hooks_left(client)


def test_inputs_the_model_rejects_fail_the_capture_without_leaving_hooks(client):
    document = image(modules=["*"], capture="both")
    document["inputs"][0]["shape"] = [2, 1, 12, 13]
    document["inputs"][0]["data"] = [0.0] * (2 * 12 * 13)
    response = post_json(client, "/v2/models/cnn/activations", document)
    assert response.status_code == 422
    assert "expects [-1, 1, 12, 12]" in response.json()["error"]
    assert no_hooks_left(client)


# ---- isolation: 50 concurrent mixed requests, in process ---------------------------------------
MIXED = [
    ("/v2/models/cnn/infer", {}),
    ("/v2/models/cnn/activations", {"modules": ["conv1"]}),
    ("/v2/models/cnn/activations", {"modules": ["fc"], "capture": "both"}),
    (
        "/v2/models/cnn/activations",
        {"interventions": [{"module": "conv2", "op": "zero", "index": [1, 2]}], "modules": ["conv2"]},
    ),
    ("/v2/models/cnn/infer", {"parameters": {"capture": "conv2"}}),
    ("/v2/models/cnn/activations", {"modules": "conv*", "reduce": "stats"}),
    ("/v2/models/cnn/activations", {"interventions": [{"module": "fc", "op": "scale", "value": -2.0}]}),
]


def mixed_requests() -> list[tuple[str, dict[str, Any]]]:
    return [(path, image(**fields)) for i in range(50) for path, fields in [MIXED[i % len(MIXED)]]]


async def _post_all(app: Any, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        responses = await asyncio.gather(*(client.post(p, content=json.dumps(d)) for p, d in requests))
    return [r.json() for r in responses]


def test_concurrent_mixed_requests_each_get_their_own_result_and_leave_no_hooks(repository):
    app = create_app(Settings(model_repository=repository, seed_repository=False, inference_threads=4))
    service = app.state.service

    async def scenario() -> tuple[list[Any], list[Any]]:
        await service.start()
        requests = mixed_requests()
        alone = [(await _post_all(app, [r]))[0] for r in requests[: len(MIXED)]]
        together = await _post_all(app, requests)
        return alone, together

    try:
        alone, together = asyncio.run(scenario())
    finally:
        service.close()
    for i, document in enumerate(together):
        assert_same_document(document, alone[i % len(MIXED)], f"request {i} {MIXED[i % len(MIXED)]}")
    module = service.manager.version("cnn").module
    assert all(not (m._forward_hooks or m._forward_pre_hooks) for m in module.modules())


def assert_same_document(got: Any, want: Any, where: str) -> None:
    """Equal structure, names and shapes; numbers equal up to BLAS rounding.

    (Concurrent BLAS calls may run single-threaded and round the last bit differently,
    which can also move a value across a histogram edge.)
    """
    if isinstance(want, dict):
        assert list(got) == list(want), where
        for key in want:
            if key == "histogram":
                assert sum(got[key]) == sum(want[key]), where
                assert np.abs(np.subtract(got[key], want[key])).sum() <= 2, where
            else:
                assert_same_document(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list) and want and all(isinstance(v, float) for v in want):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=where)
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_document(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), where
    else:
        assert got == want, where
