"""The stock ``tritonclient.http`` client, default settings, against a real ``python -m app``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _app_support import MLP_CONFIG, WRITE_HEADERS, mlp_weights, torch_mlp

import mininn
import models
from mininn.serialization import load

httpclient = pytest.importorskip("tritonclient.http")
from tritonclient.utils import InferenceServerException  # noqa: E402

X = np.random.default_rng(11).standard_normal((6, 4)).astype(np.float32)


@pytest.fixture(scope="module")
def triton(server: Any) -> Iterator[Any]:
    with httpclient.InferenceServerClient(url=server.url, network_timeout=30.0) as client:
        yield client


@pytest.fixture(scope="module")
def in_process(server: Any) -> dict[int, Any]:
    """The same mlp versions, loaded in this process from the server's own files."""
    servables = {}
    for version in (1, 2):
        servable = models.servable("mlp", MLP_CONFIG)
        servable.module.load_state_dict(
            load(server.repository / "mlp" / str(version) / "weights.safetensors")
        )
        servable.module.eval()
        servables[version] = servable
    return servables


def predict(servable: Any, x: np.ndarray) -> np.ndarray:
    with mininn.no_grad():
        return servable.predict({"input": x})["output"]


def make_input(x: np.ndarray, binary: bool = True) -> Any:
    tensor = httpclient.InferInput("input", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x, binary_data=binary)
    return tensor


def test_health(triton: Any) -> None:
    assert triton.is_server_live() and triton.is_server_ready()
    assert triton.is_model_ready("mlp") and triton.is_model_ready("mlp", "1")
    assert not triton.is_model_ready("broken")
    assert not triton.is_model_ready("does-not-exist")
    assert not triton.is_model_ready("mlp", "9")


def test_server_and_model_metadata(triton: Any) -> None:
    server = triton.get_server_metadata()
    assert server["name"] == "mininn-serve"
    assert {"binary_tensor_data", "model_repository", "statistics"} <= set(server["extensions"])
    model = triton.get_model_metadata("mlp")
    assert (model["name"], model["platform"], model["versions"]) == ("mlp", "mininn", ["1", "2"])
    assert model["inputs"] == [{"name": "input", "datatype": "FP32", "shape": [-1, 4]}]
    assert triton.get_model_metadata("mlp", "1")["outputs"] == [
        {"name": "output", "datatype": "FP32", "shape": [-1, 3]}
    ]
    config = triton.get_model_config("mlp")
    assert (config["max_batch_size"], config["input"][0]["dims"], config["input"][0]["data_type"]) == (
        32,
        [4],
        "TYPE_FP32",
    )


def test_repository_index(triton: Any) -> None:
    rows = {row["name"]: row for row in triton.get_model_repository_index()}
    assert rows["mlp"]["state"] == "READY" and rows["mlp"]["version"] == "2"
    assert rows["broken"]["state"] == "UNAVAILABLE"
    assert "size mismatch" in rows["broken"]["reason"]


def test_unload_and_load(triton: Any) -> None:
    triton.unload_model("mlp-spare", headers=WRITE_HEADERS)
    assert not triton.is_model_ready("mlp-spare")
    with pytest.raises(InferenceServerException) as raised:
        triton.infer("mlp-spare", [make_input(X)])
    assert (raised.value.status(), raised.value.message()) == (
        "503",
        "model 'mlp-spare' is not ready: unavailable (unloaded)",
    )
    triton.load_model("mlp-spare", headers=WRITE_HEADERS)
    assert triton.is_model_ready("mlp-spare")


def test_binary_inference_matches_in_process_and_torch(triton: Any, in_process: dict[int, Any]) -> None:
    torch = pytest.importorskip("torch")
    result = triton.infer("mlp", [make_input(X)], request_id="req-e2e")  # defaults: binary in and out
    out = result.as_numpy("output")
    assert out.dtype == np.float32 and out.shape == (6, 3)
    assert result.get_response()["id"] == "req-e2e"
    assert result.get_response()["outputs"][0]["parameters"]["binary_data_size"] == out.nbytes
    np.testing.assert_array_equal(out, predict(in_process[2], X))
    with torch.no_grad():
        np.testing.assert_allclose(
            out, torch_mlp(mlp_weights(2))(torch.from_numpy(X)).numpy(), rtol=1e-5, atol=1e-6
        )


def test_json_inference_gives_the_same_numbers(triton: Any, in_process: dict[int, Any]) -> None:
    outputs = [httpclient.InferRequestedOutput("output", binary_data=False)]
    result = triton.infer("mlp", [make_input(X, binary=False)], outputs=outputs)
    assert "data" in result.get_response()["outputs"][0]
    np.testing.assert_array_equal(result.as_numpy("output"), predict(in_process[2], X))


def test_binary_input_with_json_output(triton: Any, in_process: dict[int, Any]) -> None:
    outputs = [httpclient.InferRequestedOutput("output", binary_data=False)]
    result = triton.infer("mlp", [make_input(X)], outputs=outputs, model_version="1")
    np.testing.assert_array_equal(result.as_numpy("output"), predict(in_process[1], X))


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compressed_requests_and_responses(triton: Any, in_process: dict[int, Any], algorithm: str) -> None:
    x = np.random.default_rng(3).standard_normal((32, 4)).astype(np.float32)
    result = triton.infer(
        "mlp",
        [make_input(x)],
        outputs=[httpclient.InferRequestedOutput("output", binary_data=False)],  # > 1 KiB: compressed
        request_compression_algorithm=algorithm,
        response_compression_algorithm=algorithm,
    )
    np.testing.assert_array_equal(result.as_numpy("output"), predict(in_process[2], x))


def test_timeout_is_honoured_and_unknown_custom_parameters_are_refused(triton: Any) -> None:
    result = triton.infer("mlp", [make_input(X)], timeout=10_000_000, priority=1)
    assert result.as_numpy("output").shape == (6, 3)
    with pytest.raises(InferenceServerException) as raised:
        triton.infer("mlp", [make_input(X)], parameters={"my_param": 3})
    assert raised.value.status() == "400"
    assert raised.value.message().startswith("unknown request parameter 'my_param' for model 'mlp'")


def test_statistics(triton: Any) -> None:
    triton.infer("mlp", [make_input(X)], model_version="1")
    stats = triton.get_inference_statistics("mlp", "1")["model_stats"]
    assert stats[0]["name"] == "mlp" and stats[0]["version"] == "1"
    assert stats[0]["inference_stats"]["success"]["count"] >= 1
    assert stats[0]["inference_count"] >= 6
    every = triton.get_inference_statistics()["model_stats"]  # GET /v2/models/stats
    assert {(s["name"], s["version"]) for s in every} >= {("mlp", "1"), ("mlp", "2")}


@pytest.mark.parametrize(
    ("call", "status", "message"),
    [
        (
            lambda t: t.get_model_metadata("nope"),
            "404",
            "Request for unknown model: 'nope' is not found; available models: broken, mlp, mlp-spare",
        ),
        (
            lambda t: t.infer("mlp", [make_input(X)], model_version="7"),
            "404",
            "model 'mlp' has no version 7; its versions are 1, 2",
        ),
        (
            lambda t: t.infer("mlp", [make_input(np.ones((2, 5), np.float32))]),
            "422",
            "input 'input' has shape [2, 5] but model 'mlp' expects [-1, 4] (-1: any size)",
        ),
        (
            lambda t: t.infer("mlp", [_int64_input()]),
            "422",
            "input 'input' has datatype INT64 but model 'mlp' expects FP32",
        ),
        (
            lambda t: t.infer("mlp", [make_input(X)], outputs=[httpclient.InferRequestedOutput("logits")]),
            "422",
            "model 'mlp' has no output 'logits'; its outputs are 'output'",
        ),
        (
            lambda t: t.load_model("ghost", headers=WRITE_HEADERS),
            "404",
            "failed to load 'ghost': Request for unknown model: 'ghost' is not found; "
            "available models: broken, mlp, mlp-spare",
        ),
    ],
)
def test_errors_reach_tritonclient_as_messages(triton: Any, call: Any, status: str, message: str) -> None:
    with pytest.raises(InferenceServerException) as raised:
        call(triton)
    assert (raised.value.status(), raised.value.message()) == (status, message)


def _int64_input() -> Any:
    tensor = httpclient.InferInput("input", [1, 4], "INT64")
    tensor.set_data_from_numpy(np.ones((1, 4), np.int64))
    return tensor
