"""MLServer's codecs against a real server: requests they encode are served, responses decode with them.

MLServer cannot be installed beside the server (it pins an older FastAPI), so the client
side runs in its own venv (``mlserver_python``, see ``_client_envs``): the script below
encodes each request with ``mlserver.codecs``, posts it with the standard library, decodes
the answer with the codecs again, and prints what it got as one JSON document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import Server, mlp_weights, numpy_mlp
from _client_envs import run_client_script

X = [[1.0, -2.0, 0.5, 3.0], [0.25, 0.0, -1.0, 2.0]]

SCRIPT = r"""
import json
import sys
import urllib.error
import urllib.request

import numpy as np
from mlserver.codecs import NumpyCodec, NumpyRequestCodec, StringCodec
from mlserver.types import InferenceRequest, InferenceResponse, RequestOutput

base, x = sys.argv[1], np.array(json.loads(sys.argv[2]), dtype=np.float32)


def post(model, request):
    body = request.model_dump_json(exclude_none=True).encode()
    sent = urllib.request.Request(
        f"{base}/v2/models/{model}/infer", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(sent, timeout=30) as answer:
            return answer.status, InferenceResponse.model_validate_json(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


report = {}

status, response = post("mlp", InferenceRequest(inputs=[NumpyCodec.encode_input("input", x)]))
report["numpy"] = [status, NumpyCodec.decode_output(response.outputs[0]).tolist()]

request = NumpyRequestCodec.encode_request(x)  # request-level content_type "np"
request.inputs[0].name = "input"
status, response = post("mlp", request)
decoded = NumpyRequestCodec.decode_response(response).tolist()
report["numpy_request"] = [status, request.parameters.content_type, decoded]

texts = ["one", "three", ""]
string_input = StringCodec.encode_input("text", texts, use_bytes=False)  # shape [3, 1], content_type "str"
status, response = post("text", InferenceRequest(inputs=[string_input]))
outputs = {output.name: output for output in response.outputs}
report["strings"] = [
    status,
    string_input.shape,
    NumpyCodec.decode_output(outputs["length"]).tolist(),
    StringCodec.decode_output(outputs["length_text"]),
]

ranked = InferenceRequest(
    inputs=[NumpyCodec.encode_input("input", x)],
    outputs=[RequestOutput(name="output", parameters={"classification": 2})],
)
status, response = post("mlp", ranked)
report["classification"] = [status, response.outputs[0].shape, StringCodec.decode_output(response.outputs[0])]

status, body = post("nope", InferenceRequest(inputs=[NumpyCodec.encode_input("input", x)]))
report["unknown"] = [status, body["error"]]

print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def report(stock_server: Server, mlserver_python: Path) -> dict[str, Any]:
    return run_client_script(mlserver_python, SCRIPT, stock_server.base_url, str(X).replace(" ", ""))


def test_numpy_codec_requests_and_responses(report: dict[str, Any]) -> None:
    expected = numpy_mlp(mlp_weights(2), np.array(X, np.float32))
    status, decoded = report["numpy"]
    assert status == 200
    np.testing.assert_allclose(decoded, expected, rtol=1e-5, atol=1e-6)
    status, content_type, decoded = report["numpy_request"]
    assert (status, content_type) == (200, "np")
    np.testing.assert_allclose(decoded, expected, rtol=1e-5, atol=1e-6)


def test_string_codec_sends_a_column_the_server_accepts(report: dict[str, Any]) -> None:
    status, shape, lengths, texts = report["strings"]
    assert (status, shape) == (200, [3, 1])
    assert lengths == [[3.0], [5.0], [0.0]]
    assert texts == ["3", "5", "0"]


def test_classification_decodes_as_strings(report: dict[str, Any]) -> None:
    status, shape, rows = report["classification"]
    assert (status, shape) == (200, [2, 2])
    expected = numpy_mlp(mlp_weights(2), np.array(X, np.float32))
    assert [int(rows[2 * r].split(":")[1]) for r in range(2)] == list(np.argmax(expected, axis=1))


def test_an_unknown_model_is_404_in_tritons_words(report: dict[str, Any]) -> None:
    status, message = report["unknown"]
    assert status == 404 and message.startswith("Request for unknown model: 'nope' is not found")
