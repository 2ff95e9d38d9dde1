from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import (
    binary_request,
    mlp_weights,
    numpy_mlp,
    split_binary_response,
    start_client,
    torch_mlp,
)
from fastapi.testclient import TestClient

X = np.random.default_rng(7).standard_normal((5, 4)).astype(np.float32)


def json_body(x: np.ndarray = X, **extra: Any) -> dict[str, Any]:
    return {
        "inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32", "data": x.tolist()}],
        **extra,
    }


def infer_json(client: TestClient, path: str = "/v2/models/mlp/infer", **extra: Any) -> dict[str, Any]:
    response = client.post(path, json=json_body(**extra))
    assert response.status_code == 200, response.text
    return response.json()


def output_of(body: dict[str, Any], name: str = "output") -> np.ndarray:
    output = next(o for o in body["outputs"] if o["name"] == name)
    return np.asarray(output["data"], dtype=np.float32).reshape(output["shape"])


def test_json_inference_matches_numpy_and_torch(client: TestClient) -> None:
    torch = pytest.importorskip("torch")
    body = infer_json(client, id="req-1")
    assert (body["model_name"], body["model_version"], body["id"]) == ("mlp", "2", "req-1")
    assert body["outputs"][0]["datatype"] == "FP32" and body["outputs"][0]["shape"] == [5, 3]
    out = output_of(body)
    np.testing.assert_allclose(out, numpy_mlp(mlp_weights(2), X), rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        expected = torch_mlp(mlp_weights(2))(torch.from_numpy(X)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_flat_data_gives_the_same_result(client: TestClient) -> None:
    flat = {
        "inputs": [{"name": "input", "shape": [5, 4], "datatype": "FP32", "data": X.reshape(-1).tolist()}]
    }
    np.testing.assert_array_equal(
        output_of(client.post("/v2/models/mlp/infer", json=flat).json()), output_of(infer_json(client))
    )


def test_a_named_version_is_served(client: TestClient) -> None:
    body = infer_json(client, "/v2/models/mlp/versions/1/infer")
    assert body["model_version"] == "1"
    np.testing.assert_allclose(output_of(body), numpy_mlp(mlp_weights(1), X), rtol=1e-5, atol=1e-6)


def test_binary_request_and_response(client: TestClient) -> None:
    body, headers = binary_request({"input": X}, outputs=["output"], id="b")
    response = client.post("/v2/models/mlp/infer", content=body, headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"
    document, arrays = split_binary_response(
        response.content, int(response.headers["inference-header-content-length"])
    )
    assert document["id"] == "b"
    assert document["outputs"] == [
        {"name": "output", "datatype": "FP32", "shape": [5, 3], "parameters": {"binary_data_size": 60}}
    ]
    np.testing.assert_allclose(arrays["output"], numpy_mlp(mlp_weights(2), X), rtol=1e-5, atol=1e-6)


def test_binary_data_output_makes_every_output_binary(client: TestClient) -> None:
    body, headers = binary_request({"input": X}, parameters={"binary_data_output": True})
    response = client.post("/v2/models/mlp/infer", content=body, headers=headers)
    _, arrays = split_binary_response(
        response.content, int(response.headers["inference-header-content-length"])
    )
    np.testing.assert_array_equal(arrays["output"], output_of(infer_json(client)))


def test_json_only_responses_have_no_header_length(client: TestClient) -> None:
    response = client.post("/v2/models/mlp/infer", json=json_body())
    assert "inference-header-content-length" not in response.headers
    assert response.headers["content-type"] == "application/json"


def test_a_request_without_content_type_is_accepted(client: TestClient) -> None:
    response = client.post("/v2/models/mlp/infer", content=json.dumps(json_body()).encode())
    assert response.status_code == 200


@pytest.mark.parametrize(("encoding", "compress"), [("gzip", gzip.compress), ("deflate", zlib.compress)])
def test_compressed_requests_are_decoded(client: TestClient, encoding: str, compress: Any) -> None:
    body, headers = binary_request({"input": X}, outputs=["output"])
    response = client.post(
        "/v2/models/mlp/infer", content=compress(body), headers={**headers, "Content-Encoding": encoding}
    )
    assert response.status_code == 200, response.text
    _, arrays = split_binary_response(
        response.content, int(response.headers["inference-header-content-length"])
    )
    np.testing.assert_allclose(arrays["output"], numpy_mlp(mlp_weights(2), X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_responses_are_compressed_when_accepted(client: TestClient, encoding: str) -> None:
    big = np.random.default_rng(0).standard_normal((32, 4)).astype(np.float32)
    response = client.post("/v2/models/mlp/infer", json=json_body(big), headers={"Accept-Encoding": encoding})
    assert response.headers["content-encoding"] == encoding
    assert response.headers["vary"] == "Accept-Encoding"
    assert output_of(response.json()).shape == (32, 3)  # httpx decoded it


def test_small_responses_are_not_compressed(client: TestClient) -> None:
    response = client.post("/v2/models/mlp/infer", json=json_body(X[:1]), headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in response.headers


def test_the_parameters_stock_clients_send_are_accepted(client: TestClient) -> None:
    routine = {"timeout": 5_000_000, "priority": 2, "content_type": "np", "binary_data_output": False}
    no_sequence = {"sequence_id": 0, "sequence_start": False, "sequence_end": False}
    body = infer_json(client, parameters={**routine, **no_sequence})
    assert output_of(body).shape == (5, 3)


def test_a_parameter_nobody_reads_is_refused_not_ignored(client: TestClient) -> None:
    status, message = error(client, json=json_body(parameters={"my_param": 3, "timeout": 5_000_000}))
    assert (status, message) == (
        400,
        "unknown request parameter 'my_param' for model 'mlp'; this endpoint accepts 'binary_data_output', "
        "'capture', 'capture_mode', 'content_type', 'headers', 'interventions', 'priority', 'steering', "
        "'timeout'",
    )


def test_a_sequence_is_refused_as_sequence_batching_is_not_supported(client: TestClient) -> None:
    for parameters in (
        {"sequence_id": 7, "sequence_start": True},
        {"sequence_id": "s1"},
        {"sequence_end": True},
    ):
        status, message = error(client, json=json_body(parameters=parameters))
        assert status == 400
        assert message.startswith("sequence batching is not supported: model 'mlp' is not stateful"), message


def test_request_id_header_is_echoed(client: TestClient) -> None:
    response = client.post("/v2/models/mlp/infer", json=json_body(), headers={"X-Request-ID": "abc-123"})
    assert response.headers["x-request-id"] == "abc-123"


def error(client: TestClient, path: str = "/v2/models/mlp/infer", **kwargs: Any) -> tuple[int, str]:
    response = client.post(path, **kwargs)
    body = response.json()
    assert set(body) == {"error"}
    return response.status_code, body["error"]


def test_unknown_model_is_404(client: TestClient) -> None:
    assert error(client, "/v2/models/nope/infer", json=json_body()) == (
        404,
        "Request for unknown model: 'nope' is not found; available models: broken, mlp, mlp-spare",
    )


def test_unknown_version_is_404(client: TestClient) -> None:
    assert error(client, "/v2/models/mlp/versions/5/infer", json=json_body()) == (
        404,
        "model 'mlp' has no version 5; its versions are 1, 2",
    )


def test_model_not_ready_is_503(client: TestClient) -> None:
    response = client.post("/v2/models/broken/infer", json=json_body())
    assert response.status_code == 503
    assert response.json()["error"].startswith("model 'broken' is not ready: unavailable (version 1: loading")


def test_wrong_shape_is_422(client: TestClient) -> None:
    assert error(client, json=json_body(np.ones((2, 5), np.float32))) == (
        422,
        "input 'input' has shape [2, 5] but model 'mlp' expects [-1, 4] (-1: any size)",
    )


def test_wrong_datatype_is_422(client: TestClient) -> None:
    body = json_body()
    body["inputs"][0]["datatype"] = "INT64"
    assert error(client, json=body) == (422, "input 'input' has datatype INT64 but model 'mlp' expects FP32")


def test_malformed_json_is_400(client: TestClient) -> None:
    status, message = error(client, content=b'{"inputs": [')
    assert status == 400
    assert message.startswith("request body is not valid JSON: Expecting value: line 1 column 13 (char 12)")


def test_malformed_binary_header_is_400(client: TestClient) -> None:
    body, _ = binary_request({"input": X})
    assert error(client, content=body, headers={"Inference-Header-Content-Length": "x1"}) == (
        400,
        "Inference-Header-Content-Length must be a non-negative integer, got 'x1'",
    )
    assert error(client, content=body, headers={"Inference-Header-Content-Length": "100000"}) == (
        400,
        f"Inference-Header-Content-Length is 100000 but the request body has only {len(body)} bytes",
    )


def test_binary_size_that_does_not_fit_the_shape_is_400(client: TestClient) -> None:
    body, headers = binary_request({"input": X})
    document = json.loads(body[: int(headers["Inference-Header-Content-Length"])])
    document["inputs"][0]["parameters"]["binary_data_size"] = 40
    raw = json.dumps(document).encode()
    status, message = error(
        client, content=raw + X.tobytes()[:40], headers={"Inference-Header-Content-Length": str(len(raw))}
    )
    assert (status, message) == (
        400,
        "input 'input': binary_data_size is 40 but shape [5, 4] of FP32 needs 80 bytes",
    )


def test_missing_input_is_422(client: TestClient) -> None:
    body = {"inputs": [{"name": "extra", "shape": [1], "datatype": "FP32", "data": [1]}]}
    assert error(client, json=body) == (422, "model 'mlp' has no input 'extra'; its inputs are 'input'")
    assert error(client, json={"inputs": []}) == (
        422,
        "the request needs a non-empty 'inputs' list; model 'mlp' takes 'input'",
    )


def test_unknown_output_is_422(client: TestClient) -> None:
    assert error(client, json=json_body(outputs=[{"name": "logits"}])) == (
        422,
        "model 'mlp' has no output 'logits'; its outputs are 'output'",
    )


def test_data_that_does_not_fit_the_shape_is_422(client: TestClient) -> None:
    body = {"inputs": [{"name": "input", "shape": [2, 4], "datatype": "FP32", "data": [1, 2, 3]}]}
    assert error(client, json=body) == (422, "input 'input': shape [2, 4] needs 8 elements but data has 3")


def test_batch_over_max_batch_size_is_422(client_factory: Any) -> None:
    client = client_factory(max_batch_size=4)
    assert error(client, json=json_body()) == (
        422,
        "batch size 5 is over model 'mlp' max_batch_size 4; send at most 4 rows per request, or raise the "
        "limit with \"max_batch_size\" in its model.json (PUT /v2/repository/models/mlp) or "
        "MININN_MAX_BATCH_SIZE",
    )


def test_unknown_content_encoding_is_415(client: TestClient) -> None:
    assert error(client, content=b"{}", headers={"Content-Encoding": "br"}) == (
        415,
        "unsupported Content-Encoding 'br'; use gzip, deflate or none",
    )


def test_body_over_the_limit_is_413(client_factory: Any) -> None:
    client = client_factory(max_request_bytes=1024)
    big = np.zeros((64, 4), np.float32)
    status, message = error(client, json=json_body(big))
    assert status == 413
    assert message.startswith("request body of ") and message.endswith(
        "bytes is over the 1024-byte limit (MININN_MAX_REQUEST_BYTES)"
    )
    bomb = gzip.compress(json.dumps(json_body(big)).encode())
    assert len(bomb) < 1024
    assert error(client, content=bomb, headers={"Content-Encoding": "gzip"}) == (
        413,
        "request body decompresses to more than 1024 bytes (MININN_MAX_REQUEST_BYTES)",
    )


def test_a_request_that_waits_past_its_timeout_is_504(slow_repository: Path) -> None:
    client = start_client(slow_repository, inference_threads=1)
    try:
        body = {"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [1, 2]}]}
        first = threading.Thread(target=lambda: client.post("/v2/models/slow/infer", json=body))
        first.start()
        time.sleep(0.1)
        response = client.post("/v2/models/slow/infer", json={**body, "parameters": {"timeout": 1000}})
        first.join()
        assert response.status_code == 504
        assert response.json()["error"].startswith("request for model 'slow' waited ")
    finally:
        client.__exit__(None, None, None)


def test_the_fast_path_answers_as_the_router_does(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under a root_path, InferenceFastPath leaves /infer to FastAPI's router: both must answer alike.
    from app.routes.infer import InferenceFastPath

    served: list[str] = []  # the paths the fast path served
    fast_path = InferenceFastPath.__call__

    async def counting(self: InferenceFastPath, scope: dict[str, Any], receive: Any, send: Any) -> None:
        served.append(scope["path"])
        await fast_path(self, scope, receive, send)

    monkeypatch.setattr(InferenceFastPath, "__call__", counting)
    routed = TestClient(client.app, root_path="/api")
    x = np.ones((2, 4), np.float32)
    binary, binary_headers = binary_request({"input": x})
    cases = [
        ("/v2/models/mlp/infer", {"json": json_body(x)}),
        ("/v2/models/mlp/versions/1/infer", {"json": json_body(x, id="a", outputs=[{"name": "output"}])}),
        ("/v2/models/mlp/infer", {"content": binary, "headers": binary_headers}),
        ("/v2/models/nope/infer", {"json": json_body(x)}),
        ("/v2/models/mlp/versions/x/infer", {"json": json_body(x)}),
        ("/v2/models/mlp/versions/9/infer", {"json": json_body(x)}),
        ("/v2/models/mlp/infer", {"json": json_body(np.ones((2, 3), np.float32))}),
        ("/v2/models/mlp/infer", {"content": b"{"}),
        ("/v2/models/broken/infer", {"json": json_body(x)}),
    ]
    for path, kwargs in cases:
        fast = client.post(path, **kwargs)
        assert served == [path], path  # the fast path answered it, not the router
        slow = routed.post(path, **kwargs)
        assert served == [path], path  # and left the root_path one to the router
        served.clear()
        assert (fast.status_code, fast.content) == (slow.status_code, slow.content), path
        for header in ("content-type", "inference-header-content-length", "retry-after"):
            assert fast.headers.get(header) == slow.headers.get(header), (path, header)
        assert fast.headers["x-request-id"] and slow.headers["x-request-id"]
        for response in (fast, slow):  # once: tritonclient's parser refuses a repeated Content-Length
            assert response.headers.get_list("content-length") == [str(len(response.content))], path
            assert len(response.headers.get_list("x-request-id")) == 1, path
    assert client.get("/v2/models/mlp/infer").status_code == 405  # other methods: the router's 405


def test_with_opentelemetry_on_inference_takes_fastapi_s_way(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FastAPI traces requests only through its own stack: with its telemetry on, /infer goes there.
    import app.main
    from app.routes.infer import InferenceFastPath

    async def refuse(*args: Any) -> None:
        raise AssertionError("the fast path served a request that FastAPI should trace")

    monkeypatch.setattr(app.main, "_telemetry_enabled", lambda app: True)
    monkeypatch.setattr(InferenceFastPath, "__call__", refuse)
    response = client.post("/v2/models/mlp/infer", json=json_body())
    assert response.status_code == 200
    assert response.json()["outputs"][0]["name"] == "output"



def test_steering_on_a_model_that_does_not_generate_text_is_refused_with_the_alternative(
    client: TestClient,
) -> None:
    status, message = error(client, json=json_body(parameters={"steering": '[{"name": "joy", "scale": 2}]'}))
    assert status == 422
    assert "model 'mlp' is not a text-generation model" in message
    assert "with 'interventions' instead" in message
