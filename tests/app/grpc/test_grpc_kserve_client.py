"""KServe's ``InferenceGRPCClient`` (the ``kserve`` SDK, in the test extra) against a real server.

The client runs in a process of its own: KServe's and ``tritonclient.grpc``'s generated
protocol modules both register ``inference.*`` in protobuf's default descriptor pool, so
the two SDKs cannot be imported into one process (our server's modules use a pool of
their own, see ``app/grpc/generate.py``). The script makes every call and prints one
JSON line of what it got.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from _app_support import mlp_weights, numpy_mlp
from _grpc_support import GrpcServer

CLIENT = r'''
import asyncio, json, sys

import grpc
import numpy as np
from kserve import InferenceGRPCClient, InferInput, InferRequest

X = np.array(json.loads(sys.argv[2]), dtype=np.float32)


def request(model, *inputs):
    return InferRequest(model_name=model, infer_inputs=list(inputs), request_id="k-1")


def tensor(name, array, datatype):
    raw = InferInput(name, list(array.shape), datatype)
    raw.set_data_from_numpy(array, binary_data=True)
    return raw


async def status(client, call, **kwargs):
    try:
        await client.infer(call, **kwargs)
    except grpc.RpcError as exc:
        return exc.code().name
    return "OK"


async def main():
    client = InferenceGRPCClient(sys.argv[1], timeout=10, retries=0)
    out = {
        "health": [await client.is_server_live(), await client.is_server_ready(),
                   await client.is_model_ready("mlp"), await client.is_model_ready("nope")],
    }
    typed = InferInput("input", list(X.shape), "FP32", data=X.reshape(-1).tolist())
    answers = [await client.infer(request("mlp", t)) for t in (tensor("input", X, "FP32"), typed)]
    out["ids"] = [[a.model_name, a.id] for a in answers]
    out["outputs"] = [a.outputs[0].as_numpy().tolist() for a in answers]
    texts = tensor("text", np.array([b"hello", b"kserve!"], dtype=object), "BYTES")
    out["labels"] = [b.decode() for b in (await client.infer(request("text", texts))).outputs[1].as_numpy()]
    out["unknown"] = await status(client, request("nope", tensor("input", X, "FP32")))
    slow = tensor("x", np.full((1, 2), -1.0, np.float32), "FP32")
    out["deadline"] = await status(client, request("sleepy", slow), timeout=0.3)
    await client.close()
    print(json.dumps(out))


asyncio.run(main())
'''


@pytest.fixture(scope="module")
def kserve_answers(grpc_server: GrpcServer) -> dict[str, Any]:
    x = np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32)
    run = subprocess.run(
        [sys.executable, "-c", CLIENT, grpc_server.url, json.dumps(x.tolist())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return {"x": x, **json.loads(run.stdout.strip().splitlines()[-1])}


def test_health_calls(kserve_answers: dict[str, Any]) -> None:
    assert kserve_answers["health"] == [True, True, True, False]


def test_raw_and_typed_inputs_give_the_models_outputs(kserve_answers: dict[str, Any]) -> None:
    assert kserve_answers["ids"] == [["mlp", "k-1"], ["mlp", "k-1"]]
    from_raw, from_typed = (np.array(o, np.float32) for o in kserve_answers["outputs"])
    assert from_raw.tobytes() == from_typed.tobytes()
    expected = numpy_mlp(mlp_weights(2), kserve_answers["x"])
    np.testing.assert_allclose(from_raw, expected, rtol=1e-5, atol=1e-5)


def test_bytes_tensors(kserve_answers: dict[str, Any]) -> None:
    assert kserve_answers["labels"] == ["5 bytes", "7 bytes"]


def test_errors_are_rpc_errors_with_the_status(kserve_answers: dict[str, Any]) -> None:
    assert (kserve_answers["unknown"], kserve_answers["deadline"]) == ("NOT_FOUND", "DEADLINE_EXCEEDED")
