"""KServe's Python SDK (``InferenceRESTClient``, V2 protocol) against a real server.

The client runs in a process of its own, as in ``tests/app/grpc/test_grpc_kserve_client.py``:
importing ``kserve`` registers its generated ``inference.*`` protocol messages in
protobuf's default pool, where ``tritonclient.grpc`` (imported by other tests of the same
worker) registers the same names, and the second import fails. The script makes every
call and prints one JSON line of what it got.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from _app_support import Server, mlp_weights, numpy_mlp

X = np.array([[1.0, -2.0, 0.5, 3.0], [0.25, 0.0, -1.0, 2.0]], np.float32)

CLIENT = r'''
import asyncio, json, sys

import httpx
import numpy as np
from kserve import InferenceRESTClient, InferInput, InferRequest, RESTConfig
from kserve.protocol.infer_type import RequestedOutput

URL = sys.argv[1]
X = np.array(json.loads(sys.argv[2]), dtype=np.float32)


def tensor(name, array, datatype, binary):
    made = InferInput(name, list(array.shape), datatype)
    made.set_data_from_numpy(array, binary_data=binary)
    return made


async def failure(client, request, model):
    try:
        await client.infer(URL, request, model_name=model)
    except httpx.HTTPStatusError as exc:
        return [exc.response.status_code, str(exc)]
    return [200, ""]


async def main():
    client = InferenceRESTClient(RESTConfig(protocol="v2", retries=0, timeout=30))
    out = {"health": [
        await client.is_server_live(URL),
        await client.is_server_ready(URL),
        await client.is_model_ready(URL, "mlp"),
        await client.is_model_ready(URL, "broken"),
    ]}
    out["outputs"] = []
    for binary in (False, True):
        request = InferRequest("mlp", [tensor("input", X, "FP32", binary)], request_id="kserve-1")
        response = await client.infer(URL, request, model_name="mlp")
        out["outputs"].append(
            [response.model_name, response.id, response.get_output_by_name("output").as_numpy().tolist()]
        )
    texts = tensor("text", np.array([b"one", b"three", b""], dtype=object), "BYTES", True)
    response = await client.infer(URL, InferRequest("text", [texts]), model_name="text")
    out["length"] = response.get_output_by_name("length").as_numpy().tolist()
    out["length_text"] = response.get_output_by_name("length_text").as_numpy().tolist()
    wanted = [RequestedOutput("output", parameters={"classification": 2})]
    request = InferRequest("mlp", [tensor("input", X, "FP32", False)], request_outputs=wanted)
    output = (await client.infer(URL, request, model_name="mlp")).get_output_by_name("output")
    out["classification"] = [output.datatype, output.shape, np.asarray(output.data).reshape(-1).tolist()]
    out["errors"] = [
        await failure(client, InferRequest("nope", [tensor("input", X, "FP32", False)]), "nope"),
        await failure(
            client, InferRequest("mlp", [tensor("input", np.ones((2, 5), np.float32), "FP32", False)]), "mlp"
        ),
        await failure(
            client,
            InferRequest(
                "sleepy",
                [tensor("x", np.ones((1, 2), np.float32), "FP32", False)],
                parameters={"sequence_id": 5, "sequence_start": True},
            ),
            "sleepy",
        ),
    ]
    await client.close()
    print(json.dumps(out))


asyncio.run(main())
'''


@pytest.fixture(scope="module")
def kserve_answers(stock_server: Server) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", CLIENT, stock_server.base_url, json.dumps(X.tolist())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_health_answers_what_the_sdk_reads(kserve_answers: dict[str, Any]) -> None:
    assert kserve_answers["health"] == [True, True, True, False]


def test_inference_json_and_binary(kserve_answers: dict[str, Any]) -> None:
    expected = numpy_mlp(mlp_weights(2), X)
    for model_name, request_id, output in kserve_answers["outputs"]:
        assert (model_name, request_id) == ("mlp", "kserve-1")
        np.testing.assert_allclose(np.array(output, np.float32), expected, rtol=1e-5, atol=1e-6)


def test_bytes_in_and_out(kserve_answers: dict[str, Any]) -> None:
    assert kserve_answers["length"] == [[3], [5], [0]]
    assert kserve_answers["length_text"] == ["3", "5", "0"]  # a BYTES output read from JSON: str


def test_classification_through_a_requested_output_parameter(kserve_answers: dict[str, Any]) -> None:
    datatype, shape, items = kserve_answers["classification"]
    assert (datatype, shape) == ("BYTES", [2, 2])
    top = [int(item.split(":")[1]) for item in np.asarray(items).reshape(2, 2)[:, 0]]
    assert top == list(np.argmax(numpy_mlp(mlp_weights(2), X), axis=1))


@pytest.mark.parametrize(
    ("case", "status", "message"),
    [
        (0, 404, "Request for unknown model: 'nope' is not found"),
        (1, 422, "input 'input' has shape [2, 5]"),
        (2, 400, "sequence batching is not supported"),
    ],
)
def test_errors_carry_status_and_message(
    kserve_answers: dict[str, Any], case: int, status: int, message: str
) -> None:
    got_status, got_message = kserve_answers["errors"][case]
    assert got_status == status
    assert message in got_message


DEFAULT_CLIENT = r'''
import asyncio, json, sys

import httpx
import numpy as np
from kserve import InferenceRESTClient, InferInput, InferRequest

URL = sys.argv[1]


async def main():
    client = InferenceRESTClient()  # what the README warns about: KServe's v1 protocol by default
    out = {}
    try:
        await client.is_server_ready(URL)
    except Exception as exc:
        out["ready"] = [type(exc).__name__, str(exc)]
    tensor = InferInput("input", [1, 4], "FP32")
    tensor.set_data_from_numpy(np.zeros((1, 4), np.float32))
    try:
        await client.infer(URL, InferRequest("mlp", [tensor]), model_name="mlp")
    except httpx.HTTPStatusError as exc:
        out["infer"] = [exc.response.status_code, str(exc.request.url)]
    await client.close()
    print(json.dumps(out))


asyncio.run(main())
'''


def test_the_sdks_default_protocol_fails_as_the_readme_says(stock_server: Server) -> None:
    """README: ``InferenceRESTClient()`` is v1; health raises ``Unsupported protocol v1``, infer asks /v1/."""
    run = subprocess.run([sys.executable, "-c", DEFAULT_CLIENT, stock_server.base_url],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    answers = json.loads(run.stdout.strip().splitlines()[-1])
    assert answers["ready"][1].startswith("Unsupported protocol v1")
    status, url = answers["infer"]
    # /v1/models/{id} is OpenAI's model card (GET only), so v1's POST there is a 405
    assert status == 405 and url == f"{stock_server.base_url}/v1/models/mlp:predict"
