"""``ModelInfer`` messages to and from the V2 request and response the data plane works with.

A request becomes the V2 JSON form (:func:`request_document`) and goes through
the same checks as a REST request (:func:`app.v2.request.decode_inference_document`):
``raw_input_contents`` travel as binary inputs (one entry per input, in input
order), typed ``contents`` as JSON ``data``, except ``bytes_contents``, which are
framed like a binary ``BYTES`` tensor. Outputs always go back as
``raw_output_contents``, as Triton sends them; ``tritonclient.grpc`` and
KServe's client read those. (A request that sends only raw contents and no
parameters skips the JSON form: :mod:`app.grpc.raw_request`.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from app.errors import BadRequestError, UnprocessableError
from app.grpc import inference_pb2 as pb
from app.v2 import InferenceRequest, v2_datatype
from app.v2.captures import with_capture_outputs
from app.v2.response import output_arrays
from app.v2.tensors import encode_binary

__all__ = ["CONTENTS_FIELDS", "infer_response", "parameters_from_proto", "request_document"]

CONTENTS_FIELDS: dict[str, str] = {
    "BOOL": "bool_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}
"""The ``InferTensorContents`` field of each datatype's elements (FP16 and BF16 travel raw only)."""


def parameters_from_proto(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A protobuf parameter map (``InferParameter`` or ``ModelRepositoryParameter`` values) as a dict."""
    values: dict[str, Any] = {}
    for key, value in parameters.items():
        which = value.WhichOneof("parameter_choice")
        values[key] = None if which is None else getattr(value, which)
    return values


def request_document(message: pb.ModelInferRequest) -> tuple[dict[str, Any], bytes]:
    """The V2 JSON form of ``message`` and the bytes its binary inputs take, in input order.

    Raises:
        BadRequestError: ``raw_input_contents`` do not match the inputs one to one.
        UnprocessableError: typed contents in the wrong field for the datatype.
    """
    raw = message.raw_input_contents
    if raw and len(raw) != len(message.inputs):
        raise BadRequestError(
            f"the request has {len(message.inputs)} inputs but {len(raw)} raw_input_contents; "
            "send one raw_input_contents entry per input, in input order"
        )
    inputs: list[dict[str, Any]] = []
    tail: list[bytes] = []
    for index, tensor in enumerate(message.inputs):
        entry: dict[str, Any] = {
            "name": tensor.name,
            "datatype": tensor.datatype,
            "shape": list(tensor.shape),
        }
        parameters = parameters_from_proto(tensor.parameters)
        parameters.pop("binary_data_size", None)  # KServe's client sends it beside raw contents
        if raw:
            if tensor.HasField("contents"):
                raise BadRequestError(
                    f"input '{tensor.name}' has contents while the request sends raw_input_contents; "
                    "use one or the other for every input"
                )
            parameters["binary_data_size"] = len(raw[index])
            tail.append(raw[index])
        elif tensor.datatype == "BYTES":
            framed = _framed(_contents(tensor, "bytes_contents"))
            parameters["binary_data_size"] = len(framed)
            tail.append(framed)
        else:
            entry["data"] = _typed_data(tensor)
        entry["parameters"] = parameters
        inputs.append(entry)
    document: dict[str, Any] = {"inputs": inputs, "parameters": parameters_from_proto(message.parameters)}
    if message.id:
        document["id"] = message.id
    if message.outputs:
        document["outputs"] = [
            {"name": output.name, "parameters": parameters_from_proto(output.parameters)}
            for output in message.outputs
        ]
    return document, b"".join(tail)


def _typed_data(tensor: pb.ModelInferRequest.InferInputTensor) -> list[Any]:
    field = CONTENTS_FIELDS.get(tensor.datatype)
    if field is None and tensor.datatype in ("FP16", "BF16"):
        raise UnprocessableError(
            f"input '{tensor.name}': {tensor.datatype} has no typed contents field; send it in "
            "raw_input_contents"
        )
    if field is None:
        return []  # an unknown datatype: the checks name it and list the known ones
    return list(_contents(tensor, field))


def _contents(tensor: pb.ModelInferRequest.InferInputTensor, field: str) -> Any:
    sent = [descriptor.name for descriptor, _ in tensor.contents.ListFields()]
    if any(name != field for name in sent):
        raise UnprocessableError(
            f"input '{tensor.name}' has datatype {tensor.datatype}, whose elements go in contents.{field}; "
            f"the request sent {', '.join(f'contents.{name}' for name in sent)}"
        )
    return getattr(tensor.contents, field)


def _framed(items: Any) -> bytes:
    """``items`` framed as a binary BYTES tensor (:func:`app.v2.tensors.encode_binary`)."""
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return encode_binary(array)


def infer_response(
    *,
    model_name: str,
    model_version: str,
    request: InferenceRequest,
    results: Mapping[str, Any],
    datatypes: Mapping[str, str],
) -> pb.ModelInferResponse:
    """The ``ModelInferResponse``: the requested outputs, then every captured tensor, all raw.

    Raises:
        UnprocessableError: a requested output was not produced.
    """
    tensors, contents = [], []
    for output, array in output_arrays(results, with_capture_outputs(request, results, datatypes), datatypes):
        tensors.append(_OutputTensor(name=output.name, datatype=v2_datatype(array.dtype), shape=array.shape))
        contents.append(encode_binary(array))  # the array's bytes, copied once (protobuf keeps them)
    return pb.ModelInferResponse(
        model_name=model_name,
        model_version=model_version,
        id=request.id or "",
        outputs=tensors,
        raw_output_contents=contents,
    )


_OutputTensor = pb.ModelInferResponse.InferOutputTensor
