"""Fuzzing ``infer`` and ``activations`` with random V2 JSON and binary bodies.

Bodies range from arbitrary JSON and bytes to near-valid requests (the right
keys with random values: names, datatypes, shapes, data, parameters, requested
outputs, capture fields), sent as JSON or as a JSON header plus a binary tail
under a random ``Inference-Header-Content-Length``, optionally compressed or
labelled with a random ``Content-Encoding``. Every request goes straight into
the app on its own event loop (:func:`asgi_request`) with a time limit, so a
hang fails the test.

The property: 200 with a well-formed body, or a 4xx ``{"error": ...}``; 504
only for a request that set its own ``timeout``; never a 5xx otherwise, and
the model keeps serving.
"""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any

import numpy as np
import pytest
from _hardening_support import INFER_BODY, asgi_request, bearer, examples
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.v2.datatypes import DATATYPES

pytestmark = pytest.mark.timeout(300)

FUZZ = settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MODELS = ["mlp", "digits"]
MODULE_NAMES = ["0", "1", "2", "3", "4", "conv1", "features.0", "*", "**", "[", "fc.*", "", "nope"]

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**65), 2**65)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=20,
)
DIM = st.integers(-2, 6) | st.sampled_from([0, 28, 2**31, 2**63, 10**30]) | SCALARS
SHAPES = st.lists(DIM, max_size=5) | JSON
NUMBERS = st.floats(-1e6, 1e6) | st.integers(-(2**40), 2**40) | st.booleans()


@st.composite
def data_for(draw: st.DrawFn, shape: Any) -> Any:
    """Tensor data: usually the right count of numbers for ``shape`` (flat or nested), else anything."""
    dims = shape if isinstance(shape, list) and all(type(d) is int and 0 <= d <= 64 for d in shape) else None
    count = int(np.prod(dims)) if dims else 1
    choice = draw(st.integers(0, 5))
    if dims is not None and count <= 4096 and choice <= 2:
        values = draw(st.lists(NUMBERS, min_size=count, max_size=count))
        return np.asarray(values, dtype=object).reshape(dims).tolist() if choice == 1 and dims else values
    if choice == 3:
        return draw(st.lists(st.lists(NUMBERS, max_size=4), max_size=4))
    return draw(JSON)


@st.composite
def input_entries(draw: st.DrawFn, binary_sizes: list[int]) -> Any:
    """One entry of ``inputs``: mostly the model's input name, a datatype, a shape and data."""
    if draw(st.integers(0, 9)) == 0:
        return draw(JSON)
    entry: dict[str, Any] = {
        "name": draw(st.sampled_from(["input", "image", "x", ""]) | JSON),
        "datatype": draw(st.sampled_from([*DATATYPES, "FP32", "FP32", "fp32", "TYPE_FP32"]) | JSON),
        "shape": draw(st.sampled_from([[1, 4], [2, 4], [0, 4], [1, 1, 28, 28], [1, 784]]) | SHAPES),
    }
    if draw(st.booleans()):
        size = draw(st.integers(0, 4096) | st.sampled_from([16, 32, 3136, 2**40, -1]) | SCALARS)
        entry["parameters"] = {"binary_data_size": size}
        if isinstance(size, int) and not isinstance(size, bool) and 0 <= size <= 4096:
            binary_sizes.append(size)
    else:
        entry["data"] = draw(data_for(entry["shape"]))
    if draw(st.integers(0, 4)) == 0:
        entry[draw(st.text(max_size=6))] = draw(JSON)
    return entry


PARAMETERS = st.fixed_dictionaries(
    {},
    optional={
        "timeout": st.integers(-1, 10**7) | SCALARS,
        "binary_data_output": st.booleans() | SCALARS,
        "capture": st.sampled_from(["0", "0,3", "*", "1", "nope", " ", "0,0"]) | SCALARS,
        "capture_mode": st.sampled_from(["output", "input", "both", "all"]) | SCALARS,
        "interventions": st.just('[{"module": "0", "op": "zero"}]') | st.text(max_size=20) | JSON,
        "modules": st.lists(st.sampled_from(MODULE_NAMES), max_size=3) | JSON,
    },
)
INTERVENTION = st.fixed_dictionaries(
    {
        "module": st.sampled_from(MODULE_NAMES) | JSON,
        "op": st.sampled_from(["zero", "scale", "add", "set", "x"]) | JSON,
    },
    optional={
        "value": st.floats(allow_nan=True) | JSON,
        "index": st.lists(st.integers(-5, 10**12), max_size=4) | JSON,
        "element": st.lists(st.integers(-5, 10), max_size=4) | JSON,
    },
)


@st.composite
def v2_documents(draw: st.DrawFn, *, activations: bool) -> tuple[dict[str, Any], list[int]]:
    """A near-valid V2 request document and the binary sizes its inputs declare."""
    sizes: list[int] = []
    document: dict[str, Any] = {
        "inputs": draw(st.lists(input_entries(sizes), min_size=0, max_size=3) | JSON),
    }
    if draw(st.booleans()):
        document["id"] = draw(st.text(max_size=10) | JSON)
    if draw(st.booleans()):
        document["parameters"] = draw(PARAMETERS | JSON)
    if draw(st.booleans()):
        output = st.fixed_dictionaries(
            {"name": st.sampled_from(["output", "logits", "0:output", "x"]) | JSON},
            optional={"parameters": st.fixed_dictionaries({}, optional={"binary_data": SCALARS}) | JSON},
        )
        document["outputs"] = draw(st.lists(output | JSON, max_size=40) | JSON)
    if activations:
        document.update(
            draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "modules": st.lists(st.sampled_from(MODULE_NAMES), max_size=4) | JSON,
                        "capture": st.sampled_from(["output", "input", "both", "x"]) | JSON,
                        "reduce": st.sampled_from(["none", "stats", "x"]) | JSON,
                        "bins": st.integers(-2, 10**9) | JSON,
                        "interventions": st.lists(INTERVENTION, max_size=3) | JSON,
                    },
                )
            )
        )
    return document, sizes


def _check(response: Any, document: Any) -> None:
    status = response.status
    timeout_set = (
        isinstance(document, dict)
        and isinstance(document.get("parameters"), dict)
        and ("timeout" in document["parameters"])
    )
    assert status == 200 or 400 <= status < 500 or (status == 504 and timeout_set), (
        status,
        response.body[:300],
    )
    if status == 200:
        length = response.headers.get(b"inference-header-content-length")
        body = response.body
        if response.headers.get(b"content-encoding") == b"gzip":
            body = gzip.decompress(body)
        header = json.loads(body[: int(length)] if length is not None else body)
        assert isinstance(header["outputs"], list)
    else:
        assert isinstance(json.loads(response.body)["error"], str)


def _post(client: TestClient, path: str, body: bytes, headers: list[tuple[bytes, bytes]]) -> Any:
    return asgi_request(client, "POST", path, body=body, headers=headers, timeout=60)


@pytest.fixture(scope="module")
def fuzz_client(keyed_client: TestClient) -> TestClient:
    """The keyed client, with the demo ``digits`` model (28x28 images, convolutions) added."""
    import models

    service = keyed_client.app.state.service
    models.seed_repository(service.repository.root, names=["digits"])
    assert keyed_client.post("/v2/repository/models/digits/load", headers=bearer()).status_code == 200
    return keyed_client


@FUZZ
@given(
    body=JSON | st.binary(max_size=300),
    model=st.sampled_from(MODELS),
    route=st.sampled_from(["infer", "activations"]),
)
def test_arbitrary_json_and_bytes_get_a_4xx(
    fuzz_client: TestClient, body: Any, model: str, route: str
) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = _post(fuzz_client, f"/v2/models/{model}/{route}", raw, [])
    _check(response, body)
    assert response.status != 200


@FUZZ
@given(
    request=v2_documents(activations=False),
    model=st.sampled_from(MODELS),
    encoding=st.sampled_from([None, "gzip", "deflate", "identity", "br", "gzip, deflate", ""]),
    accept=st.sampled_from([None, "gzip", "deflate;q=0.5, gzip;q=0.9", "*", "gzip;q=abc"]),
)
def test_near_valid_json_inference_requests_end_in_200_or_a_4xx(
    fuzz_client: TestClient, request: Any, model: str, encoding: str | None, accept: str | None
) -> None:
    document, _ = request
    raw = json.dumps(document).encode()
    headers = []
    if encoding in ("gzip", "deflate"):
        raw = gzip.compress(raw) if encoding == "gzip" else zlib.compress(raw)
    if encoding is not None:
        headers.append((b"content-encoding", encoding.encode()))
    if accept is not None:
        headers.append((b"accept-encoding", accept.encode()))
    _check(_post(fuzz_client, f"/v2/models/{model}/infer", raw, headers), document)


@FUZZ
@given(request=v2_documents(activations=True), model=st.sampled_from(MODELS), in_parameters=st.booleans())
def test_near_valid_activation_requests_end_in_200_or_a_4xx(
    fuzz_client: TestClient, request: Any, model: str, in_parameters: bool
) -> None:
    document, _ = request
    if in_parameters and isinstance(document.get("parameters"), dict):
        for key in ("modules", "capture", "reduce", "bins", "interventions"):
            if key in document:
                document["parameters"][key] = document.pop(key)
    _check(_post(fuzz_client, f"/v2/models/{model}/activations", json.dumps(document).encode(), []), document)


HEADER_LENGTHS = st.sampled_from(["exact", "minus", "plus", "zero", "junk"])


@FUZZ
@given(
    request=v2_documents(activations=False),
    route=st.sampled_from(["infer", "activations"]),
    model=st.sampled_from(MODELS),
    tail=st.binary(max_size=64),
    length_kind=HEADER_LENGTHS,
    junk=st.sampled_from([b"", b"-1", b"1e3", b" 12", b"\xb2", b"\xd9\xa3", b"0x10", b"9" * 40, b"\x00"]),
)
def test_binary_requests_with_random_tails_and_header_lengths_end_in_200_or_a_4xx(
    fuzz_client: TestClient, request: Any, route: str, model: str, tail: bytes, length_kind: str, junk: bytes
) -> None:
    document, sizes = request
    header = json.dumps(document).encode()
    rng = np.random.default_rng(len(tail))
    body = header + b"".join(rng.bytes(size) for size in sizes) + tail
    length = {
        "exact": str(len(header)).encode(),
        "minus": str(max(len(header) - 1, 0)).encode(),
        "plus": str(len(header) + 3).encode(),
        "zero": b"0",
        "junk": junk,
    }[length_kind]
    response = _post(
        fuzz_client, f"/v2/models/{model}/{route}", body, [(b"inference-header-content-length", length)]
    )
    _check(response, document)


@FUZZ
@given(
    depth=st.integers(1, 30_000),
    where=st.sampled_from(["body", "parameter", "data", "interventions", "output"]),
)
def test_deeply_nested_json_never_gets_a_5xx(fuzz_client: TestClient, depth: int, where: str) -> None:
    nested = "[" * depth + "]" * depth
    body = {
        "body": nested,
        "parameter": '{"inputs": [], "parameters": {"x": %s}}' % nested,
        "data": '{"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": %s}]}' % nested,
        "interventions": json.dumps({**INFER_BODY, "parameters": {"capture": "0", "interventions": nested}}),
        "output": '{"inputs": [], "outputs": [{"name": "output", "parameters": %s}]}' % nested,
    }[where]
    for route in ("infer", "activations"):
        response = _post(fuzz_client, f"/v2/models/mlp/{route}", body.encode(), [])
        assert response.status == 200 or 400 <= response.status < 500, (where, depth, response.status)


def test_the_models_still_serve_after_the_fuzzing(fuzz_client: TestClient) -> None:
    response = fuzz_client.post("/v2/models/mlp/infer", json=INFER_BODY)
    assert response.status_code == 200
    assert response.json()["outputs"][0]["shape"] == [1, 3]
