"""``tritonclient.grpc`` (sync) against a real server: every call it makes, each error with its status."""

from __future__ import annotations

import re
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from _app_support import WRITE_KEY, mlp_weights, numpy_mlp
from _grpc_support import GrpcServer
from google.protobuf import json_format
from tritonclient.grpc import model_config_pb2, service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

WRITE = {"authorization": f"Bearer {WRITE_KEY}"}


@pytest.fixture
def client(grpc_server: GrpcServer) -> Any:
    with grpcclient.InferenceServerClient(grpc_server.url) as client:
        yield client


def _input(name: str, array: np.ndarray, datatype: str = "FP32") -> grpcclient.InferInput:
    tensor = grpcclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


def _refusal(call: Any) -> tuple[str, str]:
    with pytest.raises(InferenceServerException) as caught:
        call()
    return caught.value.status(), caught.value.message()


def _rest_error(grpc_server: GrpcServer, method: str, path: str, **kwargs: Any) -> str:
    response = httpx.request(method, f"{grpc_server.http.base_url}{path}", **kwargs)
    assert response.status_code >= 400
    return response.json()["error"]


# ---- health, metadata, configuration, statistics, repository ------------------------------------
def test_health_calls_answer_and_unknown_or_failed_models_are_not_ready(client: Any) -> None:
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("mlp") and client.is_model_ready("mlp", "1")
    assert not client.is_model_ready("nope")
    assert not client.is_model_ready("broken")
    assert not client.is_model_ready("mlp", "7")


def test_server_metadata_names_the_server_and_its_extensions(client: Any, grpc_server: GrpcServer) -> None:
    metadata = client.get_server_metadata()
    rest = httpx.get(f"{grpc_server.http.base_url}/v2").json()
    assert (metadata.name, metadata.version, list(metadata.extensions)) == (
        rest["name"],
        rest["version"],
        rest["extensions"],
    )


def test_model_metadata_is_the_rest_metadata(client: Any, grpc_server: GrpcServer) -> None:
    metadata = client.get_model_metadata("mlp")
    rest = httpx.get(f"{grpc_server.http.base_url}/v2/models/mlp").json()
    assert (metadata.name, list(metadata.versions), metadata.platform) == ("mlp", ["1", "2"], "mininn")
    tensors = [
        {"name": t.name, "datatype": t.datatype, "shape": list(t.shape)}
        for t in (*metadata.inputs, *metadata.outputs)
    ]
    assert tensors == [*rest["inputs"], *rest["outputs"]]
    assert list(client.get_model_metadata("mlp", "1").versions) == ["1", "2"]


def test_model_config_carries_tritons_fields(client: Any, grpc_server: GrpcServer) -> None:
    config = client.get_model_config("mlp").config
    assert (config.name, config.platform, config.backend) == ("mlp", "mininn", "mininn")
    assert config.max_batch_size == 32
    (tensor,) = config.input
    assert (tensor.name, tensor.data_type, list(tensor.dims)) == ("input", model_config_pb2.TYPE_FP32, [4])
    assert (config.output[0].name, list(config.output[0].dims)) == ("output", [3])
    assert config.instance_group[0].kind == model_config_pb2.ModelInstanceGroup.KIND_CPU
    assert config.HasField("dynamic_batching")
    assert config.dynamic_batching.default_queue_policy.max_queue_size == 256
    assert config.parameters["architecture"].string_value == "mlp"
    rest = httpx.get(f"{grpc_server.http.base_url}/v2/models/mlp/config").json()
    as_dict = json_format.MessageToDict(config, preserving_proto_field_name=True)
    assert as_dict["input"] == [{"name": "input", "data_type": "TYPE_FP32", "dims": ["4"]}]
    assert as_dict["instance_group"] == [{**rest["instance_group"][0], "count": 1}]
    assert as_dict["parameters"] == rest["parameters"]


def test_statistics_count_the_grpc_inferences(client: Any) -> None:
    def counts() -> tuple[int, int]:
        (stats,) = client.get_inference_statistics("mlp", "1").model_stats
        return stats.inference_count, stats.inference_stats.success.count

    before = counts()
    client.infer("mlp", [_input("input", np.ones((2, 4), np.float32))], model_version="1")
    assert counts() == (before[0] + 2, before[1] + 1)
    names = {(s.name, s.version) for s in client.get_inference_statistics().model_stats}
    assert {("mlp", "1"), ("mlp", "2"), ("mlp-spare", "1")} <= names
    assert _refusal(lambda: client.get_inference_statistics("nope"))[0] == "StatusCode.NOT_FOUND"


def test_repository_index_lists_every_model_with_its_state(client: Any) -> None:
    rows = {row.name: row for row in client.get_model_repository_index().models}
    assert (rows["mlp"].version, rows["mlp"].state) == ("2", "READY")
    assert rows["broken"].state == "UNAVAILABLE" and "size mismatch" in rows["broken"].reason
    only_ready = client._client_stub.RepositoryIndex(service_pb2.RepositoryIndexRequest(ready=True))
    ready = {row.name for row in only_ready.models}
    assert "broken" not in ready and "mlp" in ready


def test_load_and_unload_need_the_write_key(client: Any, grpc_server: GrpcServer) -> None:
    status, message = _refusal(lambda: client.unload_model("mlp-spare"))
    assert status == "StatusCode.UNAUTHENTICATED"
    assert message == _rest_error(grpc_server, "POST", "/v2/repository/models/mlp-spare/unload")
    wrong = {"authorization": "Bearer wrong"}
    status, message = _refusal(lambda: client.load_model("mlp-spare", headers=wrong))
    assert status == "StatusCode.PERMISSION_DENIED"
    assert message == "the bearer key is not valid for this write endpoint"
    try:
        client.unload_model("mlp-spare", headers=WRITE)
        assert not client.is_model_ready("mlp-spare")
        x = np.ones((1, 4), np.float32)
        status, message = _refusal(lambda: client.infer("mlp-spare", [_input("input", x)]))
        assert status == "StatusCode.UNAVAILABLE"
    finally:
        client.load_model("mlp-spare", headers=WRITE)
    assert client.is_model_ready("mlp-spare")


def test_a_failed_load_is_invalid_argument_with_the_reason(client: Any) -> None:
    status, message = _refusal(lambda: client.load_model("broken", headers=WRITE))
    assert status == "StatusCode.INVALID_ARGUMENT"
    assert "size mismatch" in message


def test_load_with_a_config_applies_it_to_that_load(client: Any) -> None:
    try:
        client.load_model("mlp-spare", headers=WRITE, config='{"max_batch_size": 8}')
        assert client.get_model_config("mlp-spare").config.max_batch_size == 8
        unknown = '{"nope": 1}'
        status, message = _refusal(lambda: client.load_model("mlp-spare", headers=WRITE, config=unknown))
        assert status == "StatusCode.INVALID_ARGUMENT" and "nope" in message
    finally:
        client.load_model("mlp-spare", headers=WRITE)
    assert client.get_model_config("mlp-spare").config.max_batch_size == 32


# ---- inference --------------------------------------------------------------------------------
def test_raw_contents_give_the_models_outputs(client: Any) -> None:
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    result = client.infer("mlp", [_input("input", x)], model_version="1", request_id="r-1")
    np.testing.assert_allclose(result.as_numpy("output"), numpy_mlp(mlp_weights(1), x), rtol=1e-5, atol=1e-5)
    response = result.get_response()
    assert (response.model_name, response.model_version, response.id) == ("mlp", "1", "r-1")
    assert [(o.name, o.datatype, list(o.shape)) for o in response.outputs] == [("output", "FP32", [3, 3])]


def test_typed_contents_give_the_same_outputs_as_raw_contents(client: Any, grpc_server: GrpcServer) -> None:
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    request = service_pb2.ModelInferRequest(model_name="mlp")
    tensor = request.inputs.add(name="input", datatype="FP32", shape=[2, 4])
    tensor.contents.fp32_contents.extend(x.reshape(-1).tolist())
    with grpc.insecure_channel(grpc_server.url) as channel:
        response = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request)
    typed = np.frombuffer(response.raw_output_contents[0], np.float32).reshape(2, 3)
    raw = client.infer("mlp", [_input("input", x)]).as_numpy("output")
    assert typed.tobytes() == raw.tobytes()


def test_typed_contents_of_the_wrong_field_are_refused(grpc_server: GrpcServer) -> None:
    request = service_pb2.ModelInferRequest(model_name="mlp")
    request.inputs.add(name="input", datatype="FP32", shape=[1, 4]).contents.int_contents.extend([1, 2, 3, 4])
    with grpc.insecure_channel(grpc_server.url) as channel, pytest.raises(grpc.RpcError) as caught:
        service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == (
        "input 'input' has datatype FP32, whose elements go in contents.fp32_contents; "
        "the request sent contents.int_contents"
    )


def test_int32_tensors_of_the_simple_model(client: Any) -> None:
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    result = client.infer("simple", [_input("INPUT0", a, "INT32"), _input("INPUT1", b, "INT32")])
    assert result.as_numpy("OUTPUT0").tolist() == (a + b).tolist()
    assert result.as_numpy("OUTPUT1").dtype == np.int32


def test_bytes_tensors_in_and_out(client: Any, grpc_server: GrpcServer) -> None:
    texts = np.array([b"hello", b"\xff\x00 binary", b""], dtype=object)
    result = client.infer("text", [_input("text", texts, "BYTES")])
    assert result.as_numpy("length").tolist() == [5.0, 9.0, 0.0]
    assert result.as_numpy("label").tolist() == [b"5 bytes", b"9 bytes", b"0 bytes"]
    request = service_pb2.ModelInferRequest(model_name="text")
    tensor = request.inputs.add(name="text", datatype="BYTES", shape=[3])
    tensor.contents.bytes_contents.extend(texts.tolist())
    with grpc.insecure_channel(grpc_server.url) as channel:
        response = service_pb2_grpc.GRPCInferenceServiceStub(channel).ModelInfer(request)
    assert [o.name for o in response.outputs] == ["length", "label"]
    assert response.raw_output_contents[1] == b"".join(
        len(label).to_bytes(4, "little") + label for label in (b"5 bytes", b"9 bytes", b"0 bytes")
    )


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compressed_requests_are_served(client: Any, algorithm: str) -> None:
    x = np.linspace(-2.0, 2.0, 128, dtype=np.float32).reshape(32, 4)  # distinct rows: a garbled body shows
    plain = client.infer("mlp", [_input("input", x)]).as_numpy("output")
    compressed = client.infer("mlp", [_input("input", x)], compression_algorithm=algorithm).as_numpy("output")
    assert compressed.tobytes() == plain.tobytes()


def test_requested_outputs_choose_what_comes_back(client: Any) -> None:
    a = np.zeros((1, 16), np.int32)
    inputs = [_input("INPUT0", a, "INT32"), _input("INPUT1", a, "INT32")]
    result = client.infer("simple", inputs, outputs=[grpcclient.InferRequestedOutput("OUTPUT1")])
    assert [o.name for o in result.get_response().outputs] == ["OUTPUT1"]
    status, message = _refusal(
        lambda: client.infer("simple", inputs, outputs=[grpcclient.InferRequestedOutput("OUTPUT9")])
    )
    assert status == "StatusCode.INVALID_ARGUMENT" and "OUTPUT9" in message


def test_client_timeout_is_deadline_exceeded(client: Any) -> None:
    x = np.full((1, 2), -1.0, np.float32)  # sleepy sleeps 2 s on a negative first value
    status, _ = _refusal(lambda: client.infer("sleepy", [_input("x", x)], client_timeout=0.3))
    assert status == "StatusCode.DEADLINE_EXCEEDED"


def test_captures_and_interventions_come_back_as_outputs(client: Any) -> None:
    weights = mlp_weights(1)
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    result = client.infer("mlp", [_input("input", x)], model_version="1", parameters={"capture": "0,1"})
    names = [o.name for o in result.get_response().outputs]
    assert names == ["output", "0:output", "1:output"]
    hidden = x.astype(np.float64) @ weights["0.weight"].T + weights["0.bias"]
    np.testing.assert_allclose(result.as_numpy("0:output"), hidden, rtol=1e-5, atol=1e-5)
    zeroed = client.infer(
        "mlp",
        [_input("input", x)],
        model_version="1",
        parameters={"capture": "1", "interventions": '[{"module": "1", "op": "zero"}]'},
    )
    assert not zeroed.as_numpy("1:output").any()
    bias_only = np.broadcast_to(weights["3.bias"], (2, 3))
    np.testing.assert_allclose(zeroed.as_numpy("output"), bias_only, rtol=1e-6)
    status, message = _refusal(
        lambda: client.infer("mlp", [_input("input", x)], parameters={"capture": "nope*"})
    )
    assert status == "StatusCode.INVALID_ARGUMENT" and "capture" in message


def test_classification_returns_the_top_classes_as_over_rest(client: Any, grpc_server: GrpcServer) -> None:
    x = np.random.default_rng(5).standard_normal((2, 4)).astype(np.float32)
    top = [grpcclient.InferRequestedOutput("output", class_count=2)]
    plain = client.infer("labelled", [_input("input", x)]).as_numpy("output")
    classes = client.infer("labelled", [_input("input", x)], outputs=top).as_numpy("output")
    assert classes.shape == (2, 2)
    labels = ["cat", "dog", "bird"]
    for row, scores in zip(classes, plain):
        best = np.argsort(-scores)[:2]
        assert [item.decode().split(":")[1:] for item in row] == [[str(i), labels[i]] for i in best]
    with httpclient.InferenceServerClient(grpc_server.http.url) as rest:
        tensor = httpclient.InferInput("input", [2, 4], "FP32")
        tensor.set_data_from_numpy(x)
        top_rest = [httpclient.InferRequestedOutput("output", class_count=2)]
        over_rest = rest.infer("labelled", [tensor], outputs=top_rest)
    assert over_rest.as_numpy("output").tolist() == classes.tolist()
    config = client.get_model_config("labelled").config
    assert config.output[0].label_filename == "labels.txt"


# ---- errors -------------------------------------------------------------------------------------
def test_unknown_model_is_not_found_with_the_rest_message(client: Any, grpc_server: GrpcServer) -> None:
    x = np.ones((1, 4), np.float32)
    status, message = _refusal(lambda: client.infer("nope", [_input("input", x)]))
    assert status == "StatusCode.NOT_FOUND"
    assert message.startswith("Request for unknown model: 'nope' is not found")
    assert message == _rest_error(grpc_server, "GET", "/v2/models/nope/config")
    assert _refusal(lambda: client.get_model_metadata("nope"))[0] == "StatusCode.NOT_FOUND"
    assert _refusal(lambda: client.get_model_config("nope"))[0] == "StatusCode.NOT_FOUND"


def test_bad_shape_is_invalid_argument_with_the_rest_message(client: Any, grpc_server: GrpcServer) -> None:
    x = np.ones((1, 5), np.float32)
    status, message = _refusal(lambda: client.infer("mlp", [_input("input", x)]))
    assert status == "StatusCode.INVALID_ARGUMENT"
    body = {"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 5], "data": [1.0] * 5}]}
    assert message == _rest_error(grpc_server, "POST", "/v2/models/mlp/infer", json=body)
    assert re.search(r"shape \[1, 5\] but model 'mlp' expects \[-1, 4\]", message)


def test_sequence_and_unknown_parameters_are_refused_as_over_rest(
    client: Any, grpc_server: GrpcServer
) -> None:
    x = np.ones((1, 4), np.float32)
    status, message = _refusal(lambda: client.infer("mlp", [_input("input", x)], sequence_id=5))
    assert status == "StatusCode.INVALID_ARGUMENT" and "sequence batching is not supported" in message
    status, message = _refusal(lambda: client.infer("mlp", [_input("input", x)], parameters={"my_param": 1}))
    body = {
        "inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 4], "data": [1.0] * 4}],
        "parameters": {"my_param": 1},
    }
    assert (status, message) == (
        "StatusCode.INVALID_ARGUMENT",
        _rest_error(grpc_server, "POST", "/v2/models/mlp/infer", json=body),
    )
    accepted = client.infer("mlp", [_input("input", x)], priority=1, timeout=10_000_000)
    assert accepted.as_numpy("output").shape == (1, 3)


def test_a_bad_version_is_invalid_argument(client: Any) -> None:
    x = np.ones((1, 4), np.float32)
    assert _refusal(lambda: client.infer("mlp", [_input("input", x)], model_version="x"))[0] == (
        "StatusCode.INVALID_ARGUMENT"
    )
    assert _refusal(lambda: client.infer("mlp", [_input("input", x)], model_version="9"))[0] == (
        "StatusCode.NOT_FOUND"
    )


# ---- one inference path -------------------------------------------------------------------------
def test_rest_and_grpc_give_bit_identical_outputs(client: Any, grpc_server: GrpcServer) -> None:
    rng = np.random.default_rng(3)
    with httpclient.InferenceServerClient(grpc_server.http.url) as rest:
        for rows in (1, 7, 32):
            x = rng.standard_normal((rows, 4)).astype(np.float32)
            over_grpc = client.infer("mlp", [_input("input", x)]).as_numpy("output")
            tensor = httpclient.InferInput("input", list(x.shape), "FP32")
            tensor.set_data_from_numpy(x, binary_data=True)
            over_rest = rest.infer("mlp", [tensor]).as_numpy("output")
            assert over_grpc.dtype == over_rest.dtype and over_grpc.tobytes() == over_rest.tobytes()
        a = rng.integers(-1000, 1000, (4, 16), dtype=np.int32)
        grpc_inputs = [_input("INPUT0", a, "INT32"), _input("INPUT1", a, "INT32")]
        rest_inputs = [httpclient.InferInput(n, [4, 16], "INT32") for n in ("INPUT0", "INPUT1")]
        for tensor in rest_inputs:
            tensor.set_data_from_numpy(a)
        over_grpc = client.infer("simple", grpc_inputs)
        over_rest = rest.infer("simple", rest_inputs)
        for name in ("OUTPUT0", "OUTPUT1"):
            assert over_grpc.as_numpy(name).tobytes() == over_rest.as_numpy(name).tobytes()


def test_grpc_calls_are_counted_in_the_request_metrics(client: Any, grpc_server: GrpcServer) -> None:
    client.infer("mlp", [_input("input", np.ones((1, 4), np.float32))])
    with pytest.raises(InferenceServerException):
        client.infer("nope", [_input("input", np.ones((1, 4), np.float32))])
    text = httpx.get(f"{grpc_server.http.base_url}/metrics").text
    endpoint = "/inference.GRPCInferenceService/ModelInfer"
    ok = f'mininn_requests_total{{endpoint="{endpoint}",method="GRPC",model="mlp",status="OK"}}'
    missing = f'mininn_request_failures_total{{endpoint="{endpoint}",model="_unknown",status="NOT_FOUND"}}'
    assert ok in text and missing in text
