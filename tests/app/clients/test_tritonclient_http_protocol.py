"""``tritonclient.http`` on a real server: BYTES, deadlines, a full queue, keys, the parameters it sends."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from _app_support import WRITE_HEADERS, Server

httpclient = pytest.importorskip("tritonclient.http")
from tritonclient.utils import InferenceServerException  # noqa: E402


@pytest.fixture
def triton(stock_server: Server) -> Any:
    client = httpclient.InferenceServerClient(url=stock_server.url, concurrency=4, network_timeout=30)
    yield client
    client.close()


def _sleepy(first: float) -> Any:
    tensor = httpclient.InferInput("x", [1, 2], "FP32")
    tensor.set_data_from_numpy(np.array([[first, 1.0]], np.float32))
    return tensor


@pytest.mark.parametrize("binary", [True, False])
def test_bytes_tensors_both_ways(triton: Any, binary: bool) -> None:
    texts = np.array([b"one", "thr\u00e9e".encode(), b""], dtype=np.object_)
    tensor = httpclient.InferInput("text", [3], "BYTES")
    tensor.set_data_from_numpy(texts, binary_data=binary)
    outputs = [
        httpclient.InferRequestedOutput(name, binary_data=binary) for name in ("length", "length_text")
    ]
    result = triton.infer("text", [tensor], outputs=outputs)
    np.testing.assert_array_equal(result.as_numpy("length"), [[3.0], [6.0], [0.0]])
    texts_out = [t if isinstance(t, bytes) else t.encode() for t in result.as_numpy("length_text")]
    assert texts_out == [b"3", b"6", b"0"]


def test_a_string_column_shaped_n_by_1_is_accepted(triton: Any) -> None:
    tensor = httpclient.InferInput("text", [2, 1], "BYTES")
    tensor.set_data_from_numpy(np.array([[b"ab"], [b"abcd"]], dtype=np.object_))
    np.testing.assert_array_equal(triton.infer("text", [tensor]).as_numpy("length"), [[2.0], [4.0]])


def test_a_passed_deadline_is_504_and_the_model_keeps_serving(triton: Any) -> None:
    started = time.monotonic()
    with pytest.raises(InferenceServerException) as raised:
        triton.infer("sleepy", [_sleepy(-1.0)], timeout=200_000)  # 200 ms, in microseconds; it runs 1.5 s
    assert raised.value.status() == "504"
    assert "passed its deadline" in raised.value.message()
    assert time.monotonic() - started < 1.2  # answered at the deadline, not when the forward ended
    np.testing.assert_array_equal(triton.infer("sleepy", [_sleepy(2.0)]).as_numpy("y"), [[2.0, 1.0]])


def test_a_full_queue_is_503_with_its_reason(triton: Any) -> None:
    pending = [triton.async_infer("sleepy", [_sleepy(-1.0)]) for _ in range(4)]  # the queue holds 2
    outcomes = []
    for request in pending:
        try:
            outcomes.append(request.get_result().as_numpy("y").tolist())
        except InferenceServerException as exc:
            outcomes.append((exc.status(), exc.message()))
    refused = [o for o in outcomes if isinstance(o, tuple)]
    # 2 fit (one more may be refused while an earlier test's expired forward still runs)
    assert 2 <= len(refused) <= 3 and [-1.0, 1.0] in outcomes[0], outcomes
    assert all(status == "503" and "requests waiting" in message for status, message in refused), refused


def test_load_and_unload_need_the_write_key(triton: Any) -> None:
    for call in (
        lambda h: triton.load_model("mlp-spare", headers=h),
        lambda h: triton.unload_model("mlp-spare", headers=h),
    ):
        with pytest.raises(InferenceServerException) as raised:
            call(None)
        assert raised.value.status() == "401"
        with pytest.raises(InferenceServerException) as raised:
            call({"Authorization": "Bearer wrong"})
        assert raised.value.status() == "403"
    triton.load_model("mlp-spare", headers=WRITE_HEADERS)
    assert triton.is_model_ready("mlp-spare")
    triton.unload_model("mlp-spare", headers=WRITE_HEADERS)
    assert not triton.is_model_ready("mlp-spare")


def test_the_parameters_tritonclient_sends_are_honoured_or_refused(triton: Any) -> None:
    x = httpclient.InferInput("input", [1, 4], "FP32")
    x.set_data_from_numpy(np.ones((1, 4), np.float32))
    result = triton.infer("mlp", [x], priority=1, timeout=5_000_000, request_id="r-1")
    assert result.get_response()["id"] == "r-1"
    with pytest.raises(InferenceServerException) as raised:
        triton.infer("mlp", [x], sequence_id=42, sequence_start=True)
    assert raised.value.status() == "400"
    assert raised.value.message().startswith(
        "sequence batching is not supported: model 'mlp' is not stateful"
    )
    with pytest.raises(InferenceServerException) as raised:
        triton.infer("mlp", [x], parameters={"temperature": 0.5})
    assert raised.value.status() == "400"
    assert raised.value.message().startswith("unknown request parameter 'temperature' for model 'mlp'")


def test_config_and_repository_index(triton: Any, stock_server: Server) -> None:
    config = triton.get_model_config("digits")
    assert config["input"][0]["format"] == "FORMAT_NCHW"
    assert config["output"][0]["label_filename"] == "labels.txt"
    assert triton.get_model_config("simple")["input"][0]["format"] == "FORMAT_NONE"
    index = {row["name"]: row for row in triton.get_model_repository_index()}
    assert set(index) == {p.name for p in stock_server.repository.iterdir()}
    assert index["broken"]["state"] == "UNAVAILABLE" and index["digits"]["state"] == "READY"
