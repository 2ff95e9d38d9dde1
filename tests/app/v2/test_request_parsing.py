from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from app.errors import BadRequestError, UnprocessableError
from app.v2.request import parse_inference_request


@dataclass(frozen=True)
class Spec:
    name: str
    datatype: str
    shape: tuple[int, ...]


INPUTS = [Spec("x", "FP32", (-1, 3)), Spec("ids", "INT64", (-1, 2))]
OUTPUTS = [Spec("y", "FP32", (-1, 1)), Spec("z", "FP32", (-1, 2))]


def parse(document: Any, tail: bytes = b"", *, binary: bool | None = None, **kwargs: Any):
    header = json.dumps(document).encode()
    binary = bool(tail) if binary is None else binary
    kwargs.setdefault("max_batch_size", 8)
    return parse_inference_request(
        header + tail,
        str(len(header)) if binary else None,
        model="m",
        inputs=INPUTS,
        outputs=OUTPUTS,
        **kwargs,
    )


def json_inputs(batch: int = 2) -> list[dict[str, Any]]:
    return [
        {"name": "x", "shape": [batch, 3], "datatype": "FP32", "data": list(range(batch * 3))},
        {"name": "ids", "shape": [batch, 2], "datatype": "INT64", "data": [[1, 2]] * batch},
    ]


def test_json_request_gives_arrays_id_parameters_and_all_outputs() -> None:
    request = parse({"id": "r1", "parameters": {"custom": 3}, "inputs": json_inputs()})
    assert request.id == "r1"
    assert request.parameters == {"custom": 3}
    assert request.inputs["x"].dtype == np.float32 and request.inputs["x"].shape == (2, 3)
    assert request.inputs["ids"].tolist() == [[1, 2], [1, 2]]
    assert [(o.name, o.binary) for o in request.outputs] == [("y", False), ("z", False)]
    assert request.batch_size == 2
    assert request.timeout_us is None


def test_binary_inputs_follow_the_json_header_in_order() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ids = np.array([[7, 8], [9, 10]], dtype=np.int64)
    document = {
        "inputs": [
            {"name": "x", "shape": [2, 3], "datatype": "FP32", "parameters": {"binary_data_size": x.nbytes}},
            {
                "name": "ids",
                "shape": [2, 2],
                "datatype": "INT64",
                "parameters": {"binary_data_size": ids.nbytes},
            },
        ],
        "parameters": {"binary_data_output": True},
    }
    request = parse(document, x.tobytes() + ids.tobytes())
    np.testing.assert_array_equal(request.inputs["x"], x)
    np.testing.assert_array_equal(request.inputs["ids"], ids)
    assert all(o.binary for o in request.outputs)


def test_binary_and_json_inputs_mix() -> None:
    ids = np.array([[1, 2]], dtype=np.int64)
    document = {
        "inputs": [
            {"name": "x", "shape": [1, 3], "datatype": "FP32", "data": [0.5, 1.5, 2.5]},
            {"name": "ids", "shape": [1, 2], "datatype": "INT64", "parameters": {"binary_data_size": 16}},
        ]
    }
    request = parse(document, ids.tobytes())
    assert request.inputs["x"].tolist() == [[0.5, 1.5, 2.5]]
    assert request.inputs["ids"].tolist() == [[1, 2]]


def test_requested_outputs_keep_their_order_and_binary_flags() -> None:
    document = {
        "inputs": json_inputs(),
        "outputs": [{"name": "z", "parameters": {"binary_data": True}}, {"name": "y"}],
        "parameters": {"binary_data_output": False},
    }
    assert [(o.name, o.binary) for o in parse(document).outputs] == [("z", True), ("y", False)]


def test_per_output_binary_data_overrides_binary_data_output() -> None:
    document = {
        "inputs": json_inputs(),
        "outputs": [{"name": "y", "parameters": {"binary_data": False}}, {"name": "z"}],
        "parameters": {"binary_data_output": True},
    }
    assert [(o.name, o.binary) for o in parse(document).outputs] == [("y", False), ("z", True)]


def test_timeout_parameter_is_read_in_microseconds() -> None:
    assert parse({"inputs": json_inputs(), "parameters": {"timeout": 1500}}).timeout_us == 1500


@pytest.mark.parametrize("timeout", [-1, 1.5, "10", True])
def test_bad_timeout_is_422(timeout: Any) -> None:
    with pytest.raises(
        UnprocessableError, match="parameter 'timeout' must be a non-negative integer of microseconds"
    ):
        parse({"inputs": json_inputs(), "parameters": {"timeout": timeout}})


def test_malformed_json_is_400() -> None:
    with pytest.raises(BadRequestError, match="request body is not valid JSON: Expecting"):
        parse_inference_request(b'{"inputs": [', None, model="m", inputs=INPUTS, outputs=OUTPUTS)


def test_binary_body_without_header_length_hints_at_the_header() -> None:
    with pytest.raises(BadRequestError, match="needs the Inference-Header-Content-Length header"):
        parse_inference_request(b'{"inputs": []}\x00\x01', None, model="m", inputs=INPUTS, outputs=OUTPUTS)


def test_empty_body_is_400() -> None:
    with pytest.raises(
        BadRequestError, match=r"request body is empty; send a JSON object such as \{\"inputs\""
    ):
        parse_inference_request(b"", None, model="m", inputs=INPUTS, outputs=OUTPUTS)


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", ""])
def test_header_length_must_be_an_integer(value: str) -> None:
    with pytest.raises(
        BadRequestError, match="Inference-Header-Content-Length must be a non-negative integer"
    ):
        parse_inference_request(b"{}", value, model="m", inputs=INPUTS, outputs=OUTPUTS)


def test_header_length_past_the_body_is_400() -> None:
    with pytest.raises(
        BadRequestError, match="Inference-Header-Content-Length is 99 but the request body has only 2 bytes"
    ):
        parse_inference_request(b"{}", "99", model="m", inputs=INPUTS, outputs=OUTPUTS)


def test_binary_size_past_the_body_is_400() -> None:
    document = {
        "inputs": [{"name": "x", "shape": [1, 3], "datatype": "FP32", "parameters": {"binary_data_size": 12}}]
    }
    with pytest.raises(
        BadRequestError, match="input 'x': binary_data_size is 12 but only 8 bytes of binary data remain"
    ):
        parse(document, bytes(8))


def test_unclaimed_trailing_bytes_are_400() -> None:
    x = np.zeros((1, 3), np.float32)
    ids = np.zeros((1, 2), np.int64)
    document = {
        "inputs": [
            {"name": "x", "shape": [1, 3], "datatype": "FP32", "parameters": {"binary_data_size": 12}},
            {"name": "ids", "shape": [1, 2], "datatype": "INT64", "parameters": {"binary_data_size": 16}},
        ]
    }
    with pytest.raises(BadRequestError, match="the request body has 4 bytes after the binary tensor data"):
        parse(document, x.tobytes() + ids.tobytes() + b"junk")


@pytest.mark.parametrize("size", [-1, "12", 1.0, None])
def test_bad_binary_data_size_is_400(size: Any) -> None:
    document = {
        "inputs": [
            {"name": "x", "shape": [1, 3], "datatype": "FP32", "parameters": {"binary_data_size": size}}
        ]
    }
    if size is None:
        with pytest.raises(
            UnprocessableError, match="input 'x' has neither 'data' nor a 'binary_data_size' parameter"
        ):
            parse(document, bytes(12))
        return
    with pytest.raises(BadRequestError, match="input 'x': binary_data_size must be a non-negative integer"):
        parse(document, bytes(12))


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([1, 2], "the inference request must be a JSON object, got an array"),
        ({"inputs": []}, "the request needs a non-empty 'inputs' list; model 'm' takes 'ids', 'x'"),
        ({"inputs": {"x": 1}}, "the request needs a non-empty 'inputs' list"),
        ({"inputs": ["x"]}, r"inputs\[0\] must be a JSON object, got a string"),
        ({"inputs": [{"shape": [1]}]}, r"inputs\[0\] needs a string 'name'"),
        ({"id": 5, "inputs": json_inputs()}, "request 'id' must be a string, got a number"),
        (
            {"parameters": [], "inputs": json_inputs()},
            "request 'parameters' must be a JSON object, got an array",
        ),
        ({"outputs": {}, "inputs": json_inputs()}, "request 'outputs' must be a list, got an object"),
        (
            {"outputs": [{"nam": "y"}], "inputs": json_inputs()},
            r"outputs\[0\] must be a JSON object with a string 'name'",
        ),
    ],
)
def test_wrong_structure_is_422(document: Any, message: str) -> None:
    with pytest.raises(UnprocessableError, match=message):
        parse(document)


def test_unknown_input_is_422_and_lists_the_inputs() -> None:
    document = {"inputs": [{"name": "w", "shape": [1], "datatype": "FP32", "data": [1]}]}
    with pytest.raises(UnprocessableError, match="model 'm' has no input 'w'; its inputs are 'ids', 'x'"):
        parse(document)


def test_missing_input_is_422() -> None:
    with pytest.raises(
        UnprocessableError, match="missing input 'ids' for model 'm' \\(it takes 'ids', 'x'\\)"
    ):
        parse({"inputs": json_inputs()[:1]})


def test_duplicate_input_is_422() -> None:
    inputs = json_inputs()
    with pytest.raises(UnprocessableError, match="input 'x' appears more than once in the request"):
        parse({"inputs": [inputs[0], inputs[0], inputs[1]]})


def test_wrong_datatype_is_422() -> None:
    inputs = json_inputs()
    inputs[0]["datatype"] = "FP64"
    with pytest.raises(UnprocessableError, match="input 'x' has datatype FP64 but model 'm' expects FP32"):
        parse({"inputs": inputs})


def test_unknown_datatype_is_422() -> None:
    inputs = json_inputs()
    inputs[0]["datatype"] = "FLOAT"
    with pytest.raises(UnprocessableError, match="input 'x': unknown datatype 'FLOAT'; expected one of BOOL"):
        parse({"inputs": inputs})


def test_wrong_shape_is_422() -> None:
    inputs = json_inputs()
    inputs[0]["shape"], inputs[0]["data"] = [2, 4], list(range(8))
    with pytest.raises(
        UnprocessableError, match=r"input 'x' has shape \[2, 4\] but model 'm' expects \[-1, 3\]"
    ):
        parse({"inputs": inputs})


def test_wrong_rank_is_422() -> None:
    inputs = json_inputs()
    inputs[0]["shape"] = [6]
    with pytest.raises(
        UnprocessableError, match=r"input 'x' has shape \[6\] but model 'm' expects \[-1, 3\]"
    ):
        parse({"inputs": inputs})


@pytest.mark.parametrize("shape", [[2, -3], "2x3", [2.0, 3], None])
def test_shape_must_be_non_negative_integers(shape: Any) -> None:
    inputs = json_inputs()
    inputs[0]["shape"] = shape
    with pytest.raises(
        UnprocessableError, match="input 'x': 'shape' must be a list of non-negative integers"
    ):
        parse({"inputs": inputs})


def test_inputs_must_agree_on_the_batch_size() -> None:
    inputs = json_inputs()
    inputs[1] = {"name": "ids", "shape": [3, 2], "datatype": "INT64", "data": [[1, 2]] * 3}
    with pytest.raises(UnprocessableError, match="inputs disagree on the batch size: 'x' has 2, 'ids' has 3"):
        parse({"inputs": inputs})


def test_batch_over_max_batch_size_is_422() -> None:
    with pytest.raises(UnprocessableError, match="batch size 9 is over model 'm' max_batch_size 8"):
        parse({"inputs": json_inputs(9)})


def test_max_batch_size_zero_does_not_limit() -> None:
    assert parse({"inputs": json_inputs(9)}, max_batch_size=0).batch_size == 9


def test_unknown_output_is_422_and_lists_the_outputs() -> None:
    with pytest.raises(UnprocessableError, match="model 'm' has no output 'w'; its outputs are 'y', 'z'"):
        parse({"inputs": json_inputs(), "outputs": [{"name": "w"}]})


def test_unknown_output_passes_when_extra_outputs_are_allowed() -> None:
    request = parse({"inputs": json_inputs(), "outputs": [{"name": "0:output"}]}, extra_outputs=True)
    assert [o.name for o in request.outputs] == ["0:output"]


def test_duplicate_output_is_422() -> None:
    with pytest.raises(UnprocessableError, match="output 'y' is requested more than once"):
        parse({"inputs": json_inputs(), "outputs": [{"name": "y"}, {"name": "y"}]})


def test_bad_binary_flags_are_422() -> None:
    with pytest.raises(
        UnprocessableError, match="parameter 'binary_data_output' must be true or false, got 1"
    ):
        parse({"inputs": json_inputs(), "parameters": {"binary_data_output": 1}})
    with pytest.raises(UnprocessableError, match="output 'y': binary_data must be true or false, got 'yes'"):
        parse({"inputs": json_inputs(), "outputs": [{"name": "y", "parameters": {"binary_data": "yes"}}]})


# ---- nesting: numeric data is measured along its first elements, the rest walked ----------------------
def _nest(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("extra", [0, 1])
def test_numeric_data_nested_past_the_depth_limit_is_400_even_when_its_count_fits(extra: int) -> None:
    # document, inputs list and input object are 3 levels; data [[...[0, 1, 2]...]] adds its own
    from app.http.json_limits import MAX_JSON_DEPTH

    levels = MAX_JSON_DEPTH - 3 + extra
    inputs = json_inputs(1)
    inputs[0]["data"] = _nest([0.0, 1.0, 2.0], levels - 1)  # size 3 fits shape [1, 3] at any nesting
    if extra:
        with pytest.raises(BadRequestError, match="more than 64 levels deep"):
            parse({"inputs": inputs})
    else:
        assert parse({"inputs": inputs}).inputs["x"].tolist() == [[0.0, 1.0, 2.0]]


def test_deep_nesting_beside_numeric_data_is_400() -> None:
    inputs = json_inputs(1)
    inputs[1]["parameters"] = {"note": _nest(1, 62)}  # 3 + 62 levels
    with pytest.raises(BadRequestError, match="more than 64 levels deep"):
        parse({"inputs": inputs})
    with pytest.raises(BadRequestError, match="more than 64 levels deep"):
        parse({"inputs": json_inputs(1), "extra": _nest(1, 64)})


def test_a_too_deep_request_is_400_before_its_other_faults() -> None:
    inputs = json_inputs(1)
    inputs[0]["datatype"] = "INT8"  # a 422 on its own
    with pytest.raises(BadRequestError, match="more than 64 levels deep"):
        parse({"inputs": inputs, "extra": _nest(1, 64)})
    with pytest.raises(BadRequestError, match="more than 64 levels deep"):
        parse(_nest(1, 65))  # not an object, and too deep


def test_unused_data_beside_binary_data_is_walked_for_depth() -> None:
    x = np.zeros((1, 3), np.float32)
    ids = np.zeros((1, 2), np.int64)
    inputs = [
        {"name": "x", "shape": [1, 3], "datatype": "FP32", "parameters": {"binary_data_size": 12},
         "data": _nest(0, 64)},
        {"name": "ids", "shape": [1, 2], "datatype": "INT64", "parameters": {"binary_data_size": 16}},
    ]
    with pytest.raises(BadRequestError, match="more than 64 levels deep"):
        parse({"inputs": inputs}, x.tobytes() + ids.tobytes())
