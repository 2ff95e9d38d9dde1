"""Limits that hold under abuse: sizes, nesting, element counts, captures, outputs, headers, slow clients.

In process (fast): request and upload body sizes (declared, streamed and
decompressed), JSON nesting depth, tensor element counts, activation output
size and the number of outputs requested. On a real ``python -m app`` (the
limits live in its HTTP protocol and middleware): header size, and clients
that send their head or body a byte at a time, which are cut off by timeouts
while other clients, even with a queue of one, are served.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from _app_support import Server, make_repository, run_server, start_client
from _hardening_support import API_KEY, INFER_BODY, bearer, mlp_state
from fastapi.testclient import TestClient

import mininn
from app.http.json_limits import MAX_JSON_DEPTH

pytestmark = pytest.mark.timeout(120)
REQUEST_LIMIT = 64 * 1024
UPLOAD_LIMIT = 4096


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """An in-process app with small request, upload and capture limits."""
    root = make_repository(tmp_path_factory.mktemp("limits") / "model_repository")
    client = start_client(
        root,
        api_key=API_KEY,
        max_request_bytes=REQUEST_LIMIT,
        max_upload_bytes=UPLOAD_LIMIT,
        max_activation_elements=20,
        repository_poll_ms=0,
    )
    yield client
    client.__exit__(None, None, None)


def _error(response: httpx.Response) -> str:
    return response.json()["error"]


# ---- body sizes ------------------------------------------------------------------------------------
def test_an_inference_body_over_the_limit_is_413_by_its_declared_length(limited: TestClient) -> None:
    response = limited.post("/v2/models/mlp/infer", content=b" " * (REQUEST_LIMIT + 1))
    assert response.status_code == 413
    assert _error(response) == (
        f"request body of {REQUEST_LIMIT + 1} bytes is over the {REQUEST_LIMIT}-byte limit "
        "(MININN_MAX_REQUEST_BYTES)"
    )


def test_a_streamed_body_without_a_length_is_cut_at_the_limit(limited: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(1000):  # 8 MB if nobody stopped reading
            yield b" " * 8192

    response = limited.post("/v2/models/mlp/infer", content=chunks())
    assert response.status_code == 413
    assert (
        _error(response) == f"request body is over the {REQUEST_LIMIT}-byte limit (MININN_MAX_REQUEST_BYTES)"
    )


@pytest.mark.parametrize("route", ["infer", "activations"])
def test_a_compression_bomb_is_413_without_inflating_it(limited: TestClient, route: str) -> None:
    bomb = gzip.compress(b"[" + b" " * (50 * 2**20) + b"]")  # 50 MiB of blanks, ~50 KiB compressed
    assert len(bomb) < REQUEST_LIMIT
    response = limited.post(f"/v2/models/mlp/{route}", content=bomb, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 413
    assert "decompresses to more than" in _error(response)


def test_an_upload_over_the_limit_is_413_and_leaves_nothing(limited: TestClient) -> None:
    data = np.zeros(UPLOAD_LIMIT + 1, np.uint8).tobytes()
    root = limited.app.state.service.repository.root
    before = sorted(p.name for p in (root / "mlp").iterdir())
    declared = limited.put("/v2/models/mlp/state_dict", content=data, headers=bearer())
    assert declared.status_code == 413
    streamed = limited.put("/v2/models/mlp/state_dict", content=iter([data[:100], data]), headers=bearer())
    assert streamed.status_code == 413
    assert sorted(p.name for p in (root / "mlp").iterdir()) == before


# ---- JSON nesting -------------------------------------------------------------------------------------
def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1000, 30_000])
@pytest.mark.parametrize(
    ("route", "template", "around"),
    [
        ("/v2/models/mlp/infer", '{"inputs": [], "parameters": {"x": %s}}', 2),
        ("/v2/models/mlp/activations", '{"inputs": [], "modules": %s}', 1),
        ("/v2/models/mlp/infer", "%s", 0),
        ("/v2/repository/index", '{"ready": %s}', 1),
    ],
)
def test_json_nested_deeper_than_the_limit_is_400(
    limited: TestClient, route: str, template: str, around: int, depth: int
) -> None:
    response = limited.post(route, content=template % _nested(depth - around))
    assert response.status_code == 400, response.text
    assert _error(response).endswith(f"nests JSON arrays and objects more than {MAX_JSON_DEPTH} levels deep")


def test_json_at_the_depth_limit_is_parsed(limited: TestClient) -> None:
    # an input's parameters: the server reads binary_data_size there and leaves the rest alone
    tensor = {**INFER_BODY["inputs"][0], "parameters": {"x": json.loads(_nested(MAX_JSON_DEPTH - 4))}}
    document = {**INFER_BODY, "inputs": [tensor]}
    assert limited.post("/v2/models/mlp/infer", json=document).status_code == 200


def test_a_deep_interventions_string_is_400(limited: TestClient) -> None:
    body = {**INFER_BODY, "parameters": {"capture": "0", "interventions": _nested(5000)}}
    response = limited.post("/v2/models/mlp/infer", json=body)
    assert response.status_code == 400
    assert _error(response).startswith("parameter 'interventions' nests JSON")


# ---- element counts, captures, outputs ------------------------------------------------------------------
@pytest.mark.parametrize("shape", [[2**31, 4], [2**62, 4], [10**30, 4]])
def test_a_huge_declared_shape_is_refused_before_any_allocation(
    limited: TestClient, shape: list[int]
) -> None:
    header = json.dumps(
        {
            "inputs": [
                {"name": "input", "shape": shape, "datatype": "FP32", "parameters": {"binary_data_size": 16}}
            ]
        }
    ).encode()
    started = time.perf_counter()
    response = limited.post(
        "/v2/models/mlp/infer",
        content=header + bytes(16),
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    assert response.status_code in (400, 422)
    assert time.perf_counter() - started < 5  # nothing sized by the declared shape
    json_body = {"inputs": [{"name": "input", "shape": shape, "datatype": "FP32", "data": [1, 2, 3, 4]}]}
    assert limited.post("/v2/models/mlp/infer", json=json_body).status_code == 422


def test_a_batch_over_max_batch_size_is_422(limited: TestClient) -> None:
    rows = np.zeros((33, 4), np.float32).tolist()
    body = {"inputs": [{"name": "input", "shape": [33, 4], "datatype": "FP32", "data": rows}]}
    response = limited.post("/v2/models/mlp/infer", json=body)
    assert response.status_code == 422
    expected = "batch size 33 is over model 'mlp' max_batch_size 32; send at most 32 rows"
    assert _error(response).startswith(expected)


def test_captures_over_the_activation_limit_are_413(limited: TestClient) -> None:
    body = {**INFER_BODY, "modules": ["*"]}
    response = limited.post("/v2/models/mlp/activations", json=body)
    assert response.status_code == 413
    assert "over the limit of 20 (MININN_MAX_ACTIVATION_ELEMENTS)" in _error(response)
    assert (
        limited.post("/v2/models/mlp/activations", json={**INFER_BODY, "modules": ["3"]}).status_code == 200
    )


@pytest.mark.parametrize(
    "outputs",
    [
        [{"name": "output"}] * 50_000,
        [{"name": f"o{i}"} for i in range(50_000)],
        [{"name": "output", "parameters": {"binary_data": True}}] + [{}] * 50_000,
    ],
)
def test_tens_of_thousands_of_requested_outputs_are_422_at_once(
    keyed_client: TestClient, outputs: list[object]
) -> None:
    started = time.perf_counter()
    response = keyed_client.post("/v2/models/mlp/infer", json={**INFER_BODY, "outputs": outputs})
    assert response.status_code == 422
    assert time.perf_counter() - started < 10  # linear: a quadratic check would take minutes


# ---- headers and slow clients, on a real server -----------------------------------------------------------
HEADER_LIMIT = 8192


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``python -m app`` with short head/body timeouts, a small head limit and a queue of one."""
    folder = tmp_path_factory.mktemp("abuse_server")
    repository = make_repository(folder / "model_repository")
    with run_server(
        repository,
        folder / "server.log",
        MININN_SEED_REPOSITORY="false",
        MININN_API_KEY=API_KEY,
        MININN_MAX_HEADER_BYTES=str(HEADER_LIMIT),
        MININN_HEADER_TIMEOUT_S="2",
        MININN_BODY_TIMEOUT_S="2",
        MININN_MAX_QUEUE="1",
    ) as running:
        running.wait_ready(60)
        yield running


def _exchange(server: Server, data: bytes, timeout: float = 10) -> bytes:
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except OSError:  # the server may close before a huge head is sent whole
            pass
        return _read_all(sock)


def _read_all(sock: socket.socket) -> bytes:
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except OSError:
        pass
    return received


@pytest.mark.parametrize("size", [HEADER_LIMIT + 1, 1 << 20])
def test_a_head_over_the_limit_is_431_and_closed(server: Server, size: int) -> None:
    head = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * size + b"\r\n\r\n"
    answer = _exchange(server, head)
    assert answer.startswith(b"HTTP/1.1 431 ") or answer == b""  # b"": reset while we were still sending
    many = b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 5000 + b"\r\n"
    assert _exchange(server, many).startswith(b"HTTP/1.1 431 ")
    assert httpx.get(f"{server.base_url}/v2/health/live", headers={"X-Fits": "a" * 4000}).status_code == 200


def _dribble(server: Server, data: bytes, results: dict[str, object], interval: float = 0.25) -> None:
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as sock:
        try:
            for byte in data:
                sock.sendall(bytes([byte]))
                time.sleep(interval)
        except OSError:
            pass
        results["answer"] = _read_all(sock)
        results["seconds"] = time.monotonic() - started


def test_a_head_sent_a_byte_at_a_time_is_cut_off_with_408(server: Server) -> None:
    results: dict[str, object] = {}
    _dribble(
        server, b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 100 + b"\r\n\r\n", results
    )
    assert results["answer"].startswith(b"HTTP/1.1 408 ")  # type: ignore[union-attr]
    assert b"MININN_HEADER_TIMEOUT_S" in results["answer"]  # type: ignore[operator]
    assert 1.5 < results["seconds"] < 8  # type: ignore[operator]


def test_a_body_sent_a_byte_at_a_time_is_cut_off_and_holds_no_queue_slot(server: Server) -> None:
    body = json.dumps(INFER_BODY).encode()
    head = b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
    results: dict[str, object] = {}
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as sock:
        sock.sendall(head)
        slow = threading.Thread(target=_dribble_body, args=(sock, body, results))
        slow.start()
        time.sleep(0.5)
        # MININN_MAX_QUEUE=1: were the slow request queued, these would be 503s
        statuses = [
            httpx.post(f"{server.base_url}/v2/models/mlp/infer", json=INFER_BODY, timeout=10).status_code
            for _ in range(5)
        ]
        slow.join()
    assert statuses == [200] * 5
    answer = results["answer"]
    assert answer.startswith(b"HTTP/1.1 408 "), answer  # type: ignore[union-attr]
    assert b"MININN_BODY_TIMEOUT_S" in answer  # type: ignore[operator]
    assert b"connection: close" in answer.lower()  # type: ignore[union-attr]
    assert 1.5 < results["seconds"] < 8  # type: ignore[operator]


def _dribble_body(sock: socket.socket, body: bytes, results: dict[str, object]) -> None:
    started = time.monotonic()
    try:
        for byte in body:
            sock.sendall(bytes([byte]))
            time.sleep(0.25)
    except OSError:
        pass
    results["answer"] = _read_all(sock)
    results["seconds"] = time.monotonic() - started


def test_an_upload_at_a_steady_pace_is_not_cut_off(server: Server) -> None:
    import io

    buf = io.BytesIO()
    mininn.save(mlp_state(3), buf)
    data = buf.getvalue()

    def paced() -> Iterator[bytes]:
        for start in range(0, len(data), 128):
            yield data[start : start + 128]
            time.sleep(0.3 / (len(data) / 128))  # the whole body over ~0.3 s

    response = httpx.put(
        f"{server.base_url}/v2/models/mlp/state_dict", content=paced(), headers=bearer(), timeout=30
    )
    assert response.status_code == 201, response.text


def test_the_server_still_serves_after_the_abuse(server: Server) -> None:
    assert httpx.post(f"{server.base_url}/v2/models/mlp/infer", json=INFER_BODY).status_code == 200
    assert "Traceback" not in Path(server.log).read_text()


@pytest.mark.parametrize(
    "head",
    [
        b"POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n",
        b"POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n"
        b"Content-Length: 2\r\n\r\n{}",
        b"POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n{}",
        b"POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{}",
        b"GET /v2/health/live HTTP/1.1\r\nHost : x\r\n\r\n",
    ],
    ids=["cl-and-te", "obfuscated-te", "two-lengths", "negative-length", "space-before-colon"],
)
def test_ambiguous_framing_is_refused_with_400_and_nothing_smuggled(server: Server, head: bytes) -> None:
    answer = _exchange(server, head, timeout=5)
    statuses = [line for line in answer.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]
    assert statuses == [b"HTTP/1.1 400 Bad Request"], answer[:300]
