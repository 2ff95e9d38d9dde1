"""Activation capture against a real ``python -m app``: the stock ``tritonclient.http`` reads
captures through the ``capture`` parameter of ``infer``, and 50 mixed requests sent in parallel
each get the result they get alone (up to the rounding of a batched forward)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import Server, run_server
from test_activations import (
    MIXED,
    TOL,
    X,
    assert_same_document,
    mixed_requests,
    torch_run,
    write_repository,
)

httpclient = pytest.importorskip("tritonclient.http")
pytest.importorskip("torch")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("activations-server")
    repository = write_repository(folder / "model_repository")
    # One BLAS thread per call: then forwards of the same rows round alike, alone or beside others.
    env = {"MININN_SEED_REPOSITORY": "false", "MININN_INFERENCE_THREADS": "4",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    with run_server(repository, folder / "server.log", **env) as running:
        running.wait_ready(60)
        yield running


def image_input(binary: bool = True) -> Any:
    tensor = httpclient.InferInput("image", list(X.shape), "FP32")
    tensor.set_data_from_numpy(X, binary_data=binary)
    return tensor


def test_tritonclient_reads_captures_as_outputs_of_infer(server: Server) -> None:
    theirs = torch_run()
    with httpclient.InferenceServerClient(url=server.url, network_timeout=30.0) as client:
        result = client.infer("cnn", [image_input()], parameters={"capture": "conv*,fc"})
        names = [o["name"] for o in result.get_response()["outputs"]]
        assert names == ["logits", "probabilities", "conv1:output", "conv2:output", "fc:output"]
        for name in ("logits", "conv1:output", "conv2:output", "fc:output"):
            np.testing.assert_allclose(result.as_numpy(name), theirs[name], **TOL, err_msg=name)

        only_logits = [httpclient.InferRequestedOutput("logits", binary_data=False)]
        result = client.infer("cnn", [image_input(binary=False)], outputs=only_logits,
                              parameters={"capture": "conv2", "capture_mode": "input"})
        assert [o["name"] for o in result.get_response()["outputs"]] == ["logits", "conv2:input"]
        np.testing.assert_allclose(result.as_numpy("conv2:input"), np.maximum(theirs["conv1:output"], 0),
                                   **TOL)

        ablation = json.dumps([{"module": "fc", "op": "zero", "index": [1]}])
        result = client.infer("cnn", [image_input()], parameters={"capture": "fc", "interventions": ablation})
        expected = theirs["logits"].copy()
        expected[:, 1] = 0
        np.testing.assert_allclose(result.as_numpy("logits"), expected, **TOL)
        np.testing.assert_array_equal(result.as_numpy("fc:output"), result.as_numpy("logits"))


def test_tritonclient_sees_capture_errors_as_inference_server_exceptions(server: Server) -> None:
    from tritonclient.utils import InferenceServerException

    with httpclient.InferenceServerClient(url=server.url, network_timeout=30.0) as client:
        with pytest.raises(InferenceServerException) as info:
            client.infer("cnn", [image_input()], parameters={"capture": "conv3"})
    assert info.value.status() == "422"
    assert info.value.message() == (
        "parameter 'capture': modules[0] 'conv3' is not a module of the model; closest names: "
        "'conv2', 'conv1'"
    )


def _post(base_url: str, request: tuple[str, dict[str, Any]]) -> Any:
    path, document = request
    response = httpx.post(base_url + path, content=json.dumps(document), timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.slow
def test_fifty_mixed_parallel_requests_each_get_their_result_alone(server: Server) -> None:
    requests = mixed_requests()
    alone = [_post(server.base_url, request) for request in requests[: len(MIXED)]]
    with ThreadPoolExecutor(max_workers=16) as pool:
        together = list(pool.map(lambda r: _post(server.base_url, r), requests))
    # Plain /infer requests may share a batched forward, which rounds like BLAS does for that
    # many rows (app/runtime/batching.py): equal up to that rounding, as in the in-process twin test.
    for i, document in enumerate(together):
        assert_same_document(document, alone[i % len(MIXED)], f"request {i}: {MIXED[i % len(MIXED)]}")
    plain = _post(server.base_url, requests[0])
    assert plain == alone[0] and [o["name"] for o in plain["outputs"]] == ["logits", "probabilities"]

