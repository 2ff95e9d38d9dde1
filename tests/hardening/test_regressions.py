"""Regression tests of the bugs the hardening work found, one test (or two) per bug.

Each was a 500 (or an unbounded wait or buffer) before its fix; SECURITY.md
lists them with the fix.
"""

from __future__ import annotations

import io
import json
import logging
import re
import struct
import zipfile

import numpy as np
import pytest
from _hardening_support import (
    INFER_BODY,
    asgi_request,
    bearer,
    mlp_state,
    safetensors_bytes,
    safetensors_parts,
)
from fastapi.testclient import TestClient

import mininn
from app.errors import BadRequestError
from app.http.json_limits import MAX_JSON_DEPTH, parse_json
from mininn.serialization import CheckpointError


# ---- JSON nested past the interpreter's recursion limit was a RecursionError (500) ----------------
@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("/v2/models/mlp/infer", b"[" * 5000),
        ("/v2/models/mlp/activations", b"[" * 5000 + b"]" * 5000),
        ("/v2/repository/index", b"[" * 5000 + b"]" * 5000),
    ],
)
def test_json_nested_thousands_deep_is_400_not_500(keyed_client: TestClient, route: str, body: bytes) -> None:
    response = keyed_client.post(route, content=body)
    assert response.status_code == 400
    assert "more than 64 levels deep" in response.json()["error"]


def test_an_interventions_string_nested_thousands_deep_is_400_not_500(keyed_client: TestClient) -> None:
    body = {**INFER_BODY, "parameters": {"capture": "0", "interventions": "[" * 3000 + "]" * 3000}}
    response = keyed_client.post("/v2/models/mlp/infer", json=body)
    assert response.status_code == 400


def test_parse_json_measures_depth_without_recursing() -> None:
    assert parse_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, "x") is not None
    assert parse_json(json.dumps({"a": list(range(100_000))}), "x")["a"][-1] == 99_999
    with pytest.raises(BadRequestError, match="^x nests JSON arrays and objects more than 64 levels deep$"):
        parse_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "x")
    with pytest.raises(BadRequestError):
        parse_json('{"a": ' * 100_000 + "1" + "}" * 100_000, "x")
    with pytest.raises(json.JSONDecodeError):
        parse_json("[1,", "x")


# ---- a non-ASCII digit in Inference-Header-Content-Length passed isdigit() and failed int() (500) ----
@pytest.mark.parametrize("value", [b"\xb2", b"1\xb9", b"\xbc"])  # '²', '1¹', '¼' in latin-1
def test_a_non_ascii_digit_header_length_is_400(keyed_client: TestClient, value: bytes) -> None:
    for route in ("infer", "activations"):
        response = asgi_request(
            keyed_client,
            "POST",
            f"/v2/models/mlp/{route}",
            body=json.dumps(INFER_BODY).encode(),
            headers=[(b"inference-header-content-length", value)],
        )
        assert response.status == 400
        assert json.loads(response.body)["error"].startswith("Inference-Header-Content-Length must be")


def test_a_non_ascii_digit_content_length_is_not_a_500(keyed_client: TestClient) -> None:
    response = asgi_request(
        keyed_client,
        "POST",
        "/v2/models/mlp/infer",
        body=json.dumps(INFER_BODY).encode(),
        headers=[(b"content-length", b"\xb2")],
    )
    assert response.status == 200


def test_a_non_ascii_digit_upload_content_length_is_400(keyed_client: TestClient) -> None:
    buf = io.BytesIO()
    mininn.save(mlp_state(1), buf)
    response = asgi_request(
        keyed_client,
        "PUT",
        "/v2/models/mlp/state_dict",
        body=buf.getvalue(),
        headers=[(b"content-length", b"\xb2"), (b"authorization", bearer()["Authorization"].encode())],
    )
    assert response.status == 400
    assert json.loads(response.body)["error"] == "invalid Content-Length '²'"


# ---- a safetensors dtype that is a JSON array or object raised TypeError (upload: 500) ----------------
@pytest.mark.parametrize("dtype", [[], {"a": 1}, ["F32"], 3, None])
def test_a_safetensors_dtype_that_is_not_a_string_is_a_checkpoint_error(dtype: object) -> None:
    buf = io.BytesIO()
    mininn.save(mlp_state(1), buf)
    header, payload = safetensors_parts(buf.getvalue())
    header["0.bias"]["dtype"] = dtype
    with pytest.raises(CheckpointError, match=r"safetensors tensor '0.bias' has unsupported dtype"):
        mininn.load(io.BytesIO(safetensors_bytes(header, payload)))


# ---- a hostile .npy header raised tokenize.TokenError / SyntaxError (upload: 500) ----------------------
@pytest.mark.parametrize(
    "header",
    [
        b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,",  # unterminated: TokenError
        b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} )",  # SyntaxError
        b"{'descr': '<f4', 'fortran_order': False, 'shape': " + b"(" * 3000 + b")" * 3000 + b"}",
    ],
)
def test_a_hostile_npy_header_is_a_checkpoint_error(header: bytes) -> None:
    header = header + b" " * (-(len(header) + 11) % 64) + b"\n"
    member = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + bytes(8)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("w.npy", member)
    with pytest.raises(CheckpointError, match="npz member 'w.npy'"):
        mininn.load(io.BytesIO(buf.getvalue()))


def test_uploading_either_hostile_file_is_400(keyed_client: TestClient) -> None:
    buf = io.BytesIO()
    mininn.save(mlp_state(1), buf)
    header, payload = safetensors_parts(buf.getvalue())
    header["0.bias"]["dtype"] = []
    bad_npy = (
        b"\x93NUMPY\x01\x00"
        + struct.pack("<H", 54)
        + b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,"
        + b"\n"
    )
    npz = io.BytesIO()
    with zipfile.ZipFile(npz, "w") as zf:
        zf.writestr("0.bias.npy", bad_npy + np.zeros(2, np.float32).tobytes())
    for data in (safetensors_bytes(header, payload), npz.getvalue()):
        response = keyed_client.put("/v2/models/mlp/state_dict", content=data, headers=bearer())
        assert response.status_code == 400, response.text


# ---- a model name with a newline forged a log line ("model=x\nWARNING ...") ---------------------------
def test_control_characters_from_the_request_cannot_forge_log_lines(
    keyed_client: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    forged = "x\nWARNING admin logged in\r\x1b[31m"
    raw = b"/v2/models/x%0AWARNING%20admin%20logged%20in%0D%1B%5B31m/config"
    with caplog.at_level(logging.INFO, logger="app.errors"):
        response = asgi_request(keyed_client, "GET", f"/v2/models/{forged}/config", raw_path=raw)
    assert response.status == 400
    lines = [record.getMessage() for record in caplog.records if record.name == "app.errors"]
    assert lines and all("\n" not in line and "\r" not in line and "\x1b" not in line for line in lines)
    assert any("model=x\\nWARNING admin logged in\\r\\x1b[31m" in line for line in lines)


# ---- PUT model.json nested ~600 deep: written, then a 500 from the response's serializer -------------
@pytest.mark.parametrize("depth", [600, 5000])
def test_a_deeply_nested_model_json_is_400_and_writes_nothing(keyed_client: TestClient, depth: int) -> None:
    spec = '{"architecture": "mlp", "config": {"in_features": 4, "hidden_sizes": [8], "out_features": 3}, '
    name = f"deep{depth}"
    response = keyed_client.put(
        f"/v2/repository/models/{name}",
        content=spec + '"x": %s}' % ("[" * depth + "]" * depth),
        headers=bearer(),
    )
    assert response.status_code == 400, response.text
    assert "more than 64 levels deep" in response.json()["error"]
    assert not (keyed_client.app.state.service.repository.root / name).exists()


# ---- a model.json whose sizes cannot be allocated raised MemoryError: 500 ---------------------------------
@pytest.mark.parametrize("hidden", [[2**40], [2**45], [8, 2**42]])
def test_a_model_json_too_big_to_allocate_is_422(keyed_client: TestClient, hidden: list[int]) -> None:
    spec = {"architecture": "mlp", "config": {"in_features": 4, "hidden_sizes": hidden, "out_features": 3}}
    response = keyed_client.put("/v2/repository/models/huge", json=spec, headers=bearer())
    assert response.status_code == 422, response.text
    assert "cannot be built with this config: MemoryError: Unable to allocate" in response.json()["error"]
    assert not (keyed_client.app.state.service.repository.root / "huge").exists()


# ---- every uploaded version left its Prometheus series behind: /metrics and memory grew per upload -----
def test_metrics_keep_no_series_of_unloaded_versions(keyed_client: TestClient) -> None:
    for seed in range(30):
        buf = io.BytesIO()
        mininn.save(mlp_state(100 + seed), buf)
        assert (
            keyed_client.put(
                "/v2/models/mlp/state_dict", content=buf.getvalue(), headers=bearer()
            ).status_code
            == 201
        )
        assert keyed_client.post("/v2/models/mlp/infer", json=INFER_BODY).status_code == 200
    text = keyed_client.get("/metrics").text
    versions = set(re.findall(r'model="mlp",version="(\d+)"', text))
    assert len(versions) <= 2, sorted(versions, key=int)  # the newest and MININN_MAX_OLDER_VERSIONS=1
