"""Encoding an inference response: JSON ``data`` or a binary tail per output.

JSON ``data`` is strict JSON: a NaN or infinite float is written as the string
``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (as protobuf's JSON mapping writes
them; ``tritonclient``'s NumPy conversion reads them back as floats). Binary
outputs carry ``"parameters": {"binary_data_size": N}`` and no
``data``; their bytes follow the JSON header in output order, and the
``Inference-Header-Content-Length`` header says where the JSON ends. The body
is built with a single ``bytes.join``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from app.errors import UnprocessableError
from app.v2.datatypes import numpy_dtype, v2_datatype
from app.v2.request import RequestedOutput
from app.v2.tensors import encode_binary, encode_json, host_array

__all__ = ["EncodedResponse", "encode_inference_response", "output_arrays"]


class EncodedResponse:
    """A response body and, when it has a binary tail, the JSON header's length."""

    __slots__ = ("body", "header_length")

    def __init__(self, body: bytes, header_length: int | None) -> None:
        self.body = body
        self.header_length = header_length


def encode_inference_response(
    *,
    model_name: str,
    model_version: str,
    request_id: str | None,
    outputs: Mapping[str, Any],
    requested: Sequence[RequestedOutput],
    datatypes: Mapping[str, str] | None = None,
) -> EncodedResponse:
    """The response body for ``outputs``, restricted to and ordered by ``requested``.

    Args:
        model_name: echoed as ``model_name``.
        model_version: echoed as ``model_version``.
        request_id: echoed as ``id`` when not None.
        outputs: output name -> array the model produced.
        requested: which outputs to send, and how.
        datatypes: output name -> declared V2 datatype; arrays of another
            numeric dtype are cast to it, so responses match the metadata.

    Raises:
        UnprocessableError: a requested output was not produced, or holds bytes
            that JSON cannot carry.
    """
    document: dict[str, Any] = {"model_name": model_name, "model_version": model_version}
    if request_id is not None:
        document["id"] = request_id
    tails: list[bytes] = []
    entries = []
    for output, array in output_arrays(outputs, requested, datatypes):
        entry: dict[str, Any] = {
            "name": output.name,
            "datatype": v2_datatype(array.dtype),
            "shape": list(array.shape),
        }
        if output.binary:
            raw = encode_binary(array)
            entry["parameters"] = {"binary_data_size": len(raw)}
            tails.append(raw)
        else:
            entry["data"] = encode_json(array, f"output '{output.name}'")
        entries.append(entry)
    document["outputs"] = entries
    header = orjson.dumps(document)
    if not tails:
        return EncodedResponse(header, None)
    return EncodedResponse(b"".join([header, *tails]), len(header))


def output_arrays(
    outputs: Mapping[str, Any],
    requested: Sequence[RequestedOutput],
    datatypes: Mapping[str, str] | None = None,
) -> list[tuple[RequestedOutput, np.ndarray]]:
    """The arrays a response carries, in ``requested`` order, as host arrays of the declared datatypes.

    Every transport's encoder starts here (the REST one above, :mod:`app.grpc`'s).

    Raises:
        UnprocessableError: a requested output was not produced.
    """
    declared = datatypes or {}
    # a classified output is BYTES now (app.v2.classification), whatever the model declares
    return [
        (
            output,
            _output_array(outputs, output.name, None if output.classification else declared.get(output.name)),
        )
        for output in requested
    ]


def _output_array(outputs: Mapping[str, Any], name: str, datatype: str | None) -> np.ndarray:
    if name not in outputs:
        raise UnprocessableError(
            f"the model produced no output '{name}'; it produced {', '.join(sorted(outputs))}"
        )
    array = host_array(outputs[name])
    if datatype is None or datatype == "BYTES" or v2_datatype(array.dtype) == datatype:
        return array
    return array.astype(numpy_dtype(datatype))
