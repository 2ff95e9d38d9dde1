"""Parsing an inference request: JSON header, binary tail, checks against the model.

The body is ``JSON header + binary tensors``; ``Inference-Header-Content-Length``
says where the JSON ends (no header: the whole body is JSON). Each input is
checked against the model's :class:`TensorSpec` before any array is built.

Status codes: 400 when the body cannot be parsed (JSON syntax, the header
length, binary sizes and framing), 422 when it parses but does not fit the
model (keys, names, datatypes, shapes, element counts, values).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from app.errors import BadRequestError, UnprocessableError
from app.http.json_limits import parse_json
from app.v2.datatypes import DATATYPES
from app.v2.tensors import decode_binary, decode_json

__all__ = [
    "InferenceRequest",
    "RequestedOutput",
    "TensorSpecLike",
    "decode_inference_document",
    "parse_inference_request",
]


class TensorSpecLike(Protocol):
    """What the parser needs of a model's input or output description."""

    name: str
    datatype: str
    shape: Sequence[int]


@dataclass(frozen=True)
class RequestedOutput:
    """An output the response must carry, and how.

    Attributes:
        name: the output's name.
        binary: send it as binary data rather than JSON ``data``.
        parameters: the output's ``parameters`` as sent.
        classification: send its top ``classification`` classes instead of the
            tensor (:mod:`app.v2.classification`); 0: the tensor itself.
    """

    name: str
    binary: bool
    parameters: dict[str, Any] = field(default_factory=dict)
    classification: int = 0


@dataclass
class InferenceRequest:
    """A parsed, checked inference request.

    Attributes:
        id: the request's ``id``, echoed in the response (None when absent).
        parameters: the request-level ``parameters``, passed to the model runner.
        inputs: input name -> array with the declared datatype and shape.
        outputs: the outputs to return, in order (all the model's when the
            request names none).
        timeout_us: the ``timeout`` parameter in microseconds, if given.
        batch_size: the size of the batch dimension (1 for unbatched models).
        document: the request's JSON header as parsed (routes read their own extra keys there).
    """

    id: str | None
    parameters: dict[str, Any]
    inputs: dict[str, np.ndarray]
    outputs: list[RequestedOutput]
    timeout_us: int | None = None
    batch_size: int = 1
    document: dict[str, Any] = field(default_factory=dict)


def parse_inference_request(
    body: bytes,
    header_length: str | None,
    *,
    model: str,
    inputs: Sequence[TensorSpecLike],
    outputs: Sequence[TensorSpecLike],
    max_batch_size: int = 0,
    extra_outputs: bool = False,
) -> InferenceRequest:
    """Parse ``body`` and check it against the model's inputs and outputs.

    Args:
        body: the (decompressed) request body.
        header_length: the ``Inference-Header-Content-Length`` header, if sent.
        model: the model's name, for messages.
        inputs: the model's inputs.
        outputs: the model's outputs.
        max_batch_size: the largest batch the model accepts (0: no limit checked).
        extra_outputs: accept requested output names the model does not list
            (the runner then decides whether it can produce them).

    Raises:
        BadRequestError: the body cannot be parsed.
        UnprocessableError: the request does not fit the model.
    """
    header, tail_start = _split(body, header_length)
    document = _parse_json(header, binary=header_length is not None)
    return decode_inference_document(
        document,
        body,
        tail_start,
        model=model,
        inputs=inputs,
        outputs=outputs,
        max_batch_size=max_batch_size,
        extra_outputs=extra_outputs,
    )


def decode_inference_document(
    document: dict[str, Any],
    tail: bytes,
    tail_start: int = 0,
    *,
    model: str,
    inputs: Sequence[TensorSpecLike],
    outputs: Sequence[TensorSpecLike],
    max_batch_size: int = 0,
    extra_outputs: bool = False,
) -> InferenceRequest:
    """Check a request already in the JSON form against the model, and build its arrays.

    Every transport ends here: the REST parser with the JSON it read, the gRPC
    servicer (:mod:`app.grpc`) with its protobuf message in the same form. An
    input with a ``binary_data_size`` parameter takes that many bytes of
    ``tail``, from ``tail_start`` on and in input order; the others carry ``data``.

    Raises:
        BadRequestError: binary sizes or framing do not add up.
        UnprocessableError: the request does not fit the model.
    """
    request_id = _request_id(document)
    parameters = _mapping(document.get("parameters"), "request 'parameters'")
    specs = {spec.name: spec for spec in inputs}
    arrays = _decode_inputs(document, tail, tail_start, specs, model)
    batch_size = _batch_size(arrays, specs, model, max_batch_size)
    requested = _requested_outputs(document, parameters, outputs, model, extra_outputs)
    return InferenceRequest(
        id=request_id,
        parameters=parameters,
        inputs=arrays,
        outputs=requested,
        timeout_us=_timeout(parameters),
        batch_size=batch_size,
        document=document,
    )


def _split(body: bytes, header_length: str | None) -> tuple[bytes, int]:
    if header_length is None:
        return body, len(body)
    text = header_length.strip()
    if not (text.isascii() and text.isdigit()):  # str.isdigit() alone accepts '²' and other digits
        raise BadRequestError(
            f"Inference-Header-Content-Length must be a non-negative integer, got {header_length!r}"
        )
    length = int(text)
    if length > len(body):
        raise BadRequestError(
            f"Inference-Header-Content-Length is {length} but the request body has only {len(body)} bytes"
        )
    return body[:length], length


def _parse_json(header: bytes, *, binary: bool) -> dict[str, Any]:
    if not header.strip():
        raise BadRequestError('request body is empty; send a JSON object such as {"inputs": [...]}')
    try:
        document = parse_json(header, "the request's JSON", exact_integers=False)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        hint = "" if binary else " (binary tensor data needs the Inference-Header-Content-Length header)"
        raise BadRequestError(f"request body is not valid JSON: {exc}{hint}") from None
    if not isinstance(document, dict):
        raise UnprocessableError(f"the inference request must be a JSON object, got {_json_type(document)}")
    return document


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UnprocessableError(f"{what} must be a JSON object, got {_json_type(value)}")
    return value


def _request_id(document: dict[str, Any]) -> str | None:
    request_id = document.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise UnprocessableError(f"request 'id' must be a string, got {_json_type(request_id)}")
    return request_id


def _timeout(parameters: dict[str, Any]) -> int | None:
    timeout = parameters.get("timeout")
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0:
        raise UnprocessableError(
            f"parameter 'timeout' must be a non-negative integer of microseconds, got {timeout!r}"
        )
    return timeout


def _decode_inputs(
    document: dict[str, Any], body: bytes, offset: int, specs: dict[str, TensorSpecLike], model: str
) -> dict[str, np.ndarray]:
    entries = document.get("inputs")
    if not isinstance(entries, list) or not entries:
        raise UnprocessableError(
            f"the request needs a non-empty 'inputs' list; model '{model}' takes {_names(specs)}"
        )
    arrays: dict[str, np.ndarray] = {}
    for index, entry in enumerate(entries):
        name, array, offset = _decode_input(entry, index, body, offset, specs, model)
        if name in arrays:
            raise UnprocessableError(f"input '{name}' appears more than once in the request")
        arrays[name] = array
    if offset != len(body):
        raise BadRequestError(
            f"the request body has {len(body) - offset} bytes after the binary tensor data "
            "that no input claims"
        )
    missing = [name for name in specs if name not in arrays]
    if missing:
        raise UnprocessableError(
            f"missing input {_names(missing)} for model '{model}' (it takes {_names(specs)})"
        )
    return arrays


def _decode_input(
    entry: Any, index: int, body: bytes, offset: int, specs: dict[str, TensorSpecLike], model: str
) -> tuple[str, np.ndarray, int]:
    if not isinstance(entry, dict):
        raise UnprocessableError(f"inputs[{index}] must be a JSON object, got {_json_type(entry)}")
    name = entry.get("name")
    if not isinstance(name, str):
        raise UnprocessableError(f"inputs[{index}] needs a string 'name'")
    spec = specs.get(name)
    if spec is None:
        raise UnprocessableError(f"model '{model}' has no input '{name}'; its inputs are {_names(specs)}")
    what = f"input '{name}'"
    datatype, shape = _check_signature(entry, spec, what, model)
    parameters = _mapping(entry.get("parameters"), f"{what} 'parameters'")
    size = parameters.get("binary_data_size")
    if size is None:
        if "data" not in entry:
            raise UnprocessableError(f"{what} has neither 'data' nor a 'binary_data_size' parameter")
        return name, _as_declared(decode_json(entry["data"], datatype, shape, what), spec), offset
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise BadRequestError(f"{what}: binary_data_size must be a non-negative integer, got {size!r}")
    if offset + size > len(body):
        raise BadRequestError(
            f"{what}: binary_data_size is {size} but only {len(body) - offset} bytes of binary data remain"
        )
    array = decode_binary(body, offset, size, datatype, shape, what)
    return name, _as_declared(array, spec), offset + size


def _as_declared(array: np.ndarray, spec: TensorSpecLike) -> np.ndarray:
    """``array`` with the declared rank (a string column ``[N, 1]`` becomes ``[N]``)."""
    return array.reshape(-1) if array.ndim != len(spec.shape) else array


def _check_signature(
    entry: dict[str, Any], spec: TensorSpecLike, what: str, model: str
) -> tuple[str, list[int]]:
    datatype = entry.get("datatype")
    if datatype is None:
        raise UnprocessableError(
            f"{what} has no 'datatype'; add \"datatype\": \"{spec.datatype}\" (model '{model}' expects it)"
        )
    if datatype not in DATATYPES:
        raise UnprocessableError(
            f"{what}: unknown datatype {datatype!r}; expected one of {', '.join(DATATYPES)}"
        )
    if datatype != spec.datatype:
        raise UnprocessableError(
            f"{what} has datatype {datatype} but model '{model}' expects {spec.datatype}"
        )
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(_is_dim(d) for d in shape):
        raise UnprocessableError(f"{what}: 'shape' must be a list of non-negative integers, got {shape!r}")
    expected = list(spec.shape)
    if _is_string_column(datatype, shape, expected):
        return datatype, shape
    if len(shape) != len(expected) or any(e >= 0 and d != e for d, e in zip(shape, expected)):
        raise UnprocessableError(
            f"{what} has shape {shape} but model '{model}' expects {expected} (-1: any size)"
        )
    return datatype, shape


def _is_string_column(datatype: str, shape: list[int], expected: list[int]) -> bool:
    """A BYTES ``[N, 1]`` for a ``[-1]`` input: what MLServer's string codec sends, read as ``[N]``."""
    return datatype == "BYTES" and expected == [-1] and len(shape) == 2 and shape[1] == 1


def _is_dim(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _batch_size(
    arrays: dict[str, np.ndarray], specs: dict[str, TensorSpecLike], model: str, max_batch_size: int
) -> int:
    sizes = {
        name: arrays[name].shape[0] for name, spec in specs.items() if spec.shape and spec.shape[0] == -1
    }
    if not sizes:
        return 1
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"'{name}' has {size}" for name, size in sizes.items())
        raise UnprocessableError(f"inputs disagree on the batch size: {listed}")
    batch = next(iter(sizes.values()))
    if max_batch_size > 0 and batch > max_batch_size:
        raise UnprocessableError(
            f"batch size {batch} is over model '{model}' max_batch_size {max_batch_size}; send at most "
            f"{max_batch_size} rows per request, or raise the limit with \"max_batch_size\" in its "
            f"model.json (PUT /v2/repository/models/{model}) or MININN_MAX_BATCH_SIZE"
        )
    return batch


def _requested_outputs(
    document: dict[str, Any],
    parameters: dict[str, Any],
    outputs: Sequence[TensorSpecLike],
    model: str,
    extra_outputs: bool,
) -> list[RequestedOutput]:
    binary_default = parameters.get("binary_data_output", False)
    if not isinstance(binary_default, bool):
        raise UnprocessableError(
            f"parameter 'binary_data_output' must be true or false, got {binary_default!r}"
        )
    entries = document.get("outputs")
    if entries is None:
        return [RequestedOutput(spec.name, binary_default) for spec in outputs]
    if not isinstance(entries, list):
        raise UnprocessableError(f"request 'outputs' must be a list, got {_json_type(entries)}")
    known = {spec.name for spec in outputs}
    requested: list[RequestedOutput] = []
    for index, entry in enumerate(entries):
        output = _requested_output(entry, index, binary_default)
        if output.name not in known and not extra_outputs:
            raise UnprocessableError(
                f"model '{model}' has no output '{output.name}'; its outputs are {_names(known)}"
            )
        if any(r.name == output.name for r in requested):
            raise UnprocessableError(f"output '{output.name}' is requested more than once")
        requested.append(output)
    return requested


def _requested_output(entry: Any, index: int, binary_default: bool) -> RequestedOutput:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise UnprocessableError(f"outputs[{index}] must be a JSON object with a string 'name'")
    parameters = _mapping(entry.get("parameters"), f"output '{entry['name']}' 'parameters'")
    binary = parameters.get("binary_data", binary_default)
    if not isinstance(binary, bool):
        raise UnprocessableError(
            f"output '{entry['name']}': binary_data must be true or false, got {binary!r}"
        )
    classification = parameters.get("classification", 0)
    if isinstance(classification, bool) or not isinstance(classification, int) or classification < 0:
        raise UnprocessableError(
            f"output '{entry['name']}': classification must be a positive integer (how many classes), "
            f"got {classification!r}"
        )
    return RequestedOutput(entry["name"], binary, parameters, classification)


def _names(names: Any) -> str:
    return ", ".join(f"'{name}'" for name in sorted(names)) or "(none)"
