"""The direct decode of a plain ``ModelInferRequest``: raw contents straight into arrays.

Most ``ModelInfer`` calls (``tritonclient.grpc``'s, KServe's, the benchmark's)
send every input in ``raw_input_contents`` and nothing else that needs reading:
no request parameters, no per-output parameters. :func:`decode_raw_request`
checks such a message once against the model's signature and builds its
arrays with one ``np.frombuffer`` each over the bytes protobuf gives (no JSON
form, no joined tail, no copy unless the bytes are misaligned for the dtype).

It accepts only what the general path (:func:`app.grpc.codec.request_document`
then :func:`app.v2.request.decode_inference_document`) accepts, and gives the
same :class:`~app.v2.InferenceRequest`; anything else (typed ``contents``,
``BYTES``/``BOOL`` inputs, request or output parameters, any mismatch with
the signature) returns None, and the caller takes the general path, whose
checks name what is wrong. So errors are those of the general path by
construction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from app.grpc import inference_pb2 as pb
from app.v2 import InferenceRequest, RequestedOutput, TensorSpecLike, numpy_dtype

__all__ = ["decode_raw_request"]

_GENERAL_ONLY = frozenset({"BYTES", "BOOL"})  # framed elements; a cast to bool: the general path's


def decode_raw_request(
    message: pb.ModelInferRequest,
    *,
    inputs: Sequence[TensorSpecLike],
    outputs: Sequence[TensorSpecLike],
    max_batch_size: int = 0,
) -> InferenceRequest | None:
    """``message`` as a checked request, or None when it needs the general path.

    Args:
        message: the request.
        inputs: the model's inputs.
        outputs: the model's outputs.
        max_batch_size: the largest batch the model accepts (0: no limit checked).
    """
    raw = message.raw_input_contents
    tensors = message.inputs
    if not raw or len(raw) != len(tensors) or len(tensors) != len(inputs) or message.parameters:
        return None
    specs = {spec.name: spec for spec in inputs}
    arrays: dict[str, np.ndarray] = {}
    for tensor, data in zip(tensors, raw):
        spec = specs.get(tensor.name)
        if spec is None or tensor.name in arrays or tensor.datatype != spec.datatype:
            return None
        array = _array(tensor, data, spec)
        if array is None:
            return None
        arrays[tensor.name] = array
    batch_size = _batch_size(arrays, specs, max_batch_size)
    requested = _requested(message, outputs)
    if batch_size is None or requested is None:
        return None
    return InferenceRequest(
        id=message.id or None,
        parameters={},
        inputs=arrays,
        outputs=requested,
        batch_size=batch_size,
    )


def _array(
    tensor: pb.ModelInferRequest.InferInputTensor, data: bytes, spec: TensorSpecLike
) -> np.ndarray | None:
    """The input's array over ``data`` (little-endian, row-major), or None if it does not fit ``spec``."""
    if tensor.datatype in _GENERAL_ONLY or tensor.HasField("contents"):
        return None
    shape = tuple(tensor.shape)
    expected = spec.shape
    if len(shape) != len(expected) or any(d < 0 or (e >= 0 and d != e) for d, e in zip(shape, expected)):
        return None
    dtype = numpy_dtype(tensor.datatype).newbyteorder("<")
    if len(data) != math.prod(shape) * dtype.itemsize:
        return None
    array = np.frombuffer(data, dtype=dtype)
    if not array.flags.aligned or not array.dtype.isnative:
        array = array.astype(dtype.newbyteorder("="))  # BLAS needs aligned, native-order memory
    return array.reshape(shape)


def _batch_size(
    arrays: dict[str, np.ndarray], specs: dict[str, TensorSpecLike], max_batch_size: int
) -> int | None:
    """The batch size (1 for unbatched models), or None when inputs disagree or it is over the limit."""
    sizes = {arrays[name].shape[0] for name, spec in specs.items() if spec.shape and spec.shape[0] == -1}
    if not sizes:
        return 1
    if len(sizes) > 1:
        return None
    batch = sizes.pop()
    return None if max_batch_size > 0 and batch > max_batch_size else batch


def _requested(
    message: pb.ModelInferRequest, outputs: Sequence[TensorSpecLike]
) -> list[RequestedOutput] | None:
    """The outputs to return (all the model's when none are named), or None for the general path."""
    if not message.outputs:
        return [RequestedOutput(spec.name, False) for spec in outputs]
    known = {spec.name for spec in outputs}
    requested: list[RequestedOutput] = []
    for output in message.outputs:
        if output.parameters or output.name not in known or any(r.name == output.name for r in requested):
            return None
        requested.append(RequestedOutput(output.name, False))
    return requested
