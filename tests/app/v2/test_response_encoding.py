from __future__ import annotations

import json

import numpy as np
import pytest

from app.errors import UnprocessableError
from app.v2.request import RequestedOutput
from app.v2.response import encode_inference_response

Y = np.array([[1.0, 2.0]], dtype=np.float32)
Z = np.array([[3, 4, 5]], dtype=np.int64)


def encode(requested: list[RequestedOutput], **kwargs):
    kwargs.setdefault("request_id", "r1")
    return encode_inference_response(
        model_name="m", model_version="2", outputs={"y": Y, "z": Z}, requested=requested, **kwargs
    )


def test_json_response_echoes_id_and_names_the_model() -> None:
    encoded = encode([RequestedOutput("y", False)])
    assert encoded.header_length is None
    assert json.loads(encoded.body) == {
        "model_name": "m",
        "model_version": "2",
        "id": "r1",
        "outputs": [{"name": "y", "datatype": "FP32", "shape": [1, 2], "data": [1.0, 2.0]}],
    }


def test_no_id_means_no_id_member() -> None:
    assert "id" not in json.loads(encode([RequestedOutput("y", False)], request_id=None).body)


def test_binary_outputs_follow_the_header_in_order() -> None:
    encoded = encode([RequestedOutput("z", True), RequestedOutput("y", True)])
    header = json.loads(encoded.body[: encoded.header_length])
    assert [o["parameters"]["binary_data_size"] for o in header["outputs"]] == [24, 8]
    assert all("data" not in o for o in header["outputs"])
    tail = encoded.body[encoded.header_length :]
    np.testing.assert_array_equal(np.frombuffer(tail[:24], "<i8").reshape(1, 3), Z)
    np.testing.assert_array_equal(np.frombuffer(tail[24:], "<f4").reshape(1, 2), Y)


def test_mixed_json_and_binary_outputs() -> None:
    encoded = encode([RequestedOutput("y", False), RequestedOutput("z", True)])
    header = json.loads(encoded.body[: encoded.header_length])
    assert header["outputs"][0]["data"] == [1.0, 2.0]
    assert encoded.body[encoded.header_length :] == Z.tobytes()


def test_outputs_are_cast_to_their_declared_datatype() -> None:
    encoded = encode([RequestedOutput("z", False)], datatypes={"z": "FP32"})
    assert json.loads(encoded.body)["outputs"][0]["datatype"] == "FP32"


def test_an_output_the_model_did_not_produce_is_422() -> None:
    with pytest.raises(UnprocessableError, match="the model produced no output 'w'; it produced y, z"):
        encode([RequestedOutput("w", False)])


def test_nan_and_infinity_are_strings_in_strict_json_that_numpy_reads_back() -> None:
    y = np.array([[np.nan, np.inf, -np.inf, 0.5]], dtype=np.float32)
    body = encode_inference_response(
        model_name="m", model_version="1", request_id=None, outputs={"y": y},
        requested=[RequestedOutput("y", False)],
    ).body
    assert b'["NaN","Infinity","-Infinity",0.5]' in body

    def refuse(constant: str) -> None:
        raise AssertionError(f"not strict JSON: {constant}")

    data = json.loads(body, parse_constant=refuse)["outputs"][0]["data"]
    np.testing.assert_array_equal(np.array(data, dtype=np.float32), y[0])  # as tritonclient decodes it


def test_finite_outputs_read_back_to_the_same_float32_values() -> None:
    y = (np.random.default_rng(3).standard_normal((4, 50)) * 10.0 ** np.arange(-25, 25)).astype(np.float32)
    body = encode_inference_response(
        model_name="m", model_version="1", request_id="é\n", outputs={"y": y},
        requested=[RequestedOutput("y", False)],
    ).body
    document = json.loads(body)
    assert document["id"] == "é\n"
    np.testing.assert_array_equal(np.asarray(document["outputs"][0]["data"], np.float32), y.ravel())
