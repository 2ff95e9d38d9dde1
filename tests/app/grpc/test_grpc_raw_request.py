"""The direct decode of plain raw-contents ``ModelInfer`` requests against the general path.

Whatever :func:`decode_raw_request` accepts must decode exactly as the general path
(``request_document`` then ``decode_inference_document``) does; whatever it declines
must be left to the general path, whose errors are the ones the client sees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from app.errors import ServiceError
from app.grpc import inference_pb2 as pb
from app.grpc.codec import request_document
from app.grpc.raw_request import decode_raw_request
from app.v2 import InferenceRequest
from app.v2.request import decode_inference_document


@dataclass(frozen=True)
class Spec:
    name: str
    datatype: str
    shape: tuple[int, ...]


INPUTS = [Spec("x", "FP32", (-1, 3)), Spec("ids", "INT64", (-1, 2))]
OUTPUTS = [Spec("y", "FP32", (-1, 2)), Spec("z", "FP32", (-1, 1))]
MAX_BATCH = 4
RNG = np.random.default_rng(0)


def message(rows: int = 2, **changes: Any) -> pb.ModelInferRequest:
    """A valid request for the model above; ``changes`` replace its parts."""
    x = changes.pop("x", RNG.standard_normal((rows, 3)).astype("<f4"))
    ids = changes.pop("ids", np.arange(rows * 2, dtype="<i8").reshape(rows, 2))
    request = pb.ModelInferRequest(model_name="m", id=changes.pop("id", ""))
    for name, datatype, array in changes.pop("inputs", [("x", "FP32", x), ("ids", "INT64", ids)]):
        request.inputs.add(name=name, datatype=datatype, shape=array.shape)
        request.raw_input_contents.append(array.tobytes())
    for name in changes.pop("outputs", []):
        request.outputs.add(name=name)
    assert not changes, changes
    return request


def general(request: pb.ModelInferRequest) -> InferenceRequest:
    document, tail = request_document(request)
    return decode_inference_document(
        document, tail, model="m", inputs=INPUTS, outputs=OUTPUTS, max_batch_size=MAX_BATCH
    )


def direct(request: pb.ModelInferRequest) -> InferenceRequest | None:
    return decode_raw_request(request, inputs=INPUTS, outputs=OUTPUTS, max_batch_size=MAX_BATCH)


def assert_same(fast: InferenceRequest | None, slow: InferenceRequest) -> None:
    assert fast is not None
    assert (fast.id, fast.parameters, fast.outputs) == (slow.id, slow.parameters, slow.outputs)
    assert (fast.timeout_us, fast.batch_size) == (slow.timeout_us, slow.batch_size)
    assert list(fast.inputs) == list(slow.inputs)
    for name, array in fast.inputs.items():
        assert array.dtype == slow.inputs[name].dtype and array.dtype.isnative
        assert array.shape == slow.inputs[name].shape
        assert array.tobytes() == slow.inputs[name].tobytes()
        assert array.flags.c_contiguous and array.flags.aligned


def swapped(request: pb.ModelInferRequest) -> pb.ModelInferRequest:
    request.inputs[0].name, request.inputs[1].name = request.inputs[1].name, request.inputs[0].name
    return request


@pytest.mark.parametrize(
    "request_",
    [
        message(),
        message(rows=1, id="req-7"),
        message(rows=MAX_BATCH, outputs=["z", "y"]),
        message(rows=0),
        message(
            inputs=[
                ("ids", "INT64", np.zeros((3, 2), "<i8")),
                ("x", "FP32", np.full((3, 3), -0.0, "<f4")),
            ]
        ),
    ],
    ids=["two-rows", "one-row-with-id", "named-outputs", "zero-rows", "inputs-in-another-order"],
)
def test_plain_requests_decode_as_the_general_path_does(request_: pb.ModelInferRequest) -> None:
    assert_same(direct(request_), general(request_))


def test_kserve_binary_data_size_beside_raw_contents_is_read_as_the_general_path_reads_it() -> None:
    request = message()
    request.inputs[0].parameters["binary_data_size"].int64_param = 999  # ignored: the bytes' length counts
    assert_same(direct(request), general(request))


def test_the_arrays_are_the_little_endian_values_sent_and_read_only_views_of_the_message_bytes() -> None:
    x = np.array([[1.5, -2.25, 3e-8]], dtype=">f4")  # sent as little-endian bytes, as the protocol says
    request = message(rows=1, x=x.astype("<f4"))
    parsed = direct(request)
    assert parsed is not None
    np.testing.assert_array_equal(parsed.inputs["x"], x.astype(np.float32))
    assert not parsed.inputs["x"].flags.writeable  # the model never writes into a request's bytes


def test_misaligned_bytes_are_copied_into_aligned_native_memory() -> None:
    from app.grpc.raw_request import _array

    values = np.array([[1.0, 2.0, -3.5]], dtype="<f4")
    tensor = pb.ModelInferRequest.InferInputTensor(name="x", datatype="FP32", shape=[1, 3])
    misaligned = memoryview(b"\0" + values.tobytes())[1:]
    array = _array(tensor, misaligned, INPUTS[0])  # type: ignore[arg-type]
    assert array is not None and array.flags.aligned and array.dtype.isnative
    np.testing.assert_array_equal(array, values)


def _declined() -> dict[str, pb.ModelInferRequest]:
    cases: dict[str, pb.ModelInferRequest] = {}
    cases["wrong datatype"] = message(
        inputs=[("x", "FP64", np.zeros((2, 3))), ("ids", "INT64", np.zeros((2, 2), "<i8"))]
    )
    cases["wrong shape"] = message(
        inputs=[("x", "FP32", np.zeros((2, 4), "<f4")), ("ids", "INT64", np.zeros((2, 2), "<i8"))]
    )
    short = message()
    short.raw_input_contents[0] = short.raw_input_contents[0][:-4]
    cases["too few bytes"] = short
    negative = message()
    negative.inputs[0].shape[0] = -2
    cases["negative dimension"] = negative
    cases["unknown input"] = message(
        inputs=[("w", "FP32", np.zeros((2, 3), "<f4")), ("ids", "INT64", np.zeros((2, 2), "<i8"))]
    )
    cases["input twice"] = message(
        inputs=[("x", "FP32", np.zeros((2, 3), "<f4")), ("x", "FP32", np.zeros((2, 3), "<f4"))]
    )
    cases["missing input"] = message(inputs=[("x", "FP32", np.zeros((2, 3), "<f4"))])
    cases["batch sizes disagree"] = message(
        inputs=[("x", "FP32", np.zeros((2, 3), "<f4")), ("ids", "INT64", np.zeros((3, 2), "<i8"))]
    )
    cases["over max_batch_size"] = message(rows=MAX_BATCH + 1)
    cases["unknown output"] = message(outputs=["q"])
    cases["output twice"] = message(outputs=["y", "y"])
    classified = message()
    classified.outputs.add(name="y").parameters["classification"].int64_param = 1
    cases["output parameters"] = classified
    timed = message()
    timed.parameters["timeout"].int64_param = 1000
    cases["request parameters"] = timed
    contents = message()
    contents.inputs[0].contents.fp32_contents.append(1.0)
    cases["contents beside raw"] = contents
    typed = message()
    del typed.raw_input_contents[:]
    cases["no raw contents"] = typed
    one_raw = message()
    del one_raw.raw_input_contents[1:]
    cases["fewer raw contents than inputs"] = one_raw
    return cases


@pytest.mark.parametrize("name", list(_declined()))
def test_anything_else_goes_to_the_general_path_and_its_answer(name: str) -> None:
    request = _declined()[name]
    assert direct(request) is None
    try:
        general(request)
    except ServiceError:
        return  # the client gets the general path's error, as before
    assert name in ("request parameters", "output parameters")  # valid, and decoded there


def test_bytes_and_bool_inputs_take_the_general_path() -> None:
    inputs = [Spec("s", "BYTES", (-1,)), Spec("b", "BOOL", (-1,))]
    request = pb.ModelInferRequest(raw_input_contents=[b"\x01\x00\x00\x00a", b"\x01"])
    request.inputs.add(name="s", datatype="BYTES", shape=[1])
    request.inputs.add(name="b", datatype="BOOL", shape=[1])
    assert decode_raw_request(request, inputs=inputs, outputs=OUTPUTS) is None
