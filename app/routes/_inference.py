"""Inference over HTTP: the REST adapter around :meth:`app.runtime.dataplane.DataPlane.infer`.

Read the body raw (``tritonclient`` sends no ``Content-Type`` and a binary
tail after the JSON), decompress it per ``Content-Encoding``, decode it
against the model's inputs; then encode the outputs (and captures) as JSON
or binary tensors and compress per ``Accept-Encoding``. ``/infer`` and
``/activations`` differ only in the capture they read from the request.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from fastapi import Request, Response

from app.http.body import read_body
from app.runtime.batching import cancel_on_disconnect
from app.runtime.dataplane import DataPlane
from app.runtime.manager import ModelVersion
from app.v2 import InferenceRequest, choose_encoding, compress, decompress, parse_inference_request
from app.v2.captures import INFER_PARAMETERS, encode_results
from app.v2.compression import MIN_COMPRESS_BYTES
from mininn.nn import ActivationCapture

CaptureReader = Callable[..., ActivationCapture | None]

__all__ = ["inference_openapi", "inference_responses", "serve_rest_inference"]


async def serve_rest_inference(
    request: Request,
    plane: DataPlane,
    model: ModelVersion,
    read_capture: CaptureReader,
    accepts: Collection[str] = INFER_PARAMETERS,
) -> Response:
    """Answer one HTTP inference request on ``model`` through the data plane.

    ``read_capture(parsed, module, max_elements=...)`` is the capture the request asks for (None: none);
    ``accepts`` the request parameters it reads (:meth:`DataPlane.infer`).
    """
    limit = plane.settings.max_request_bytes
    max_elements = plane.settings.max_activation_elements

    async def decode() -> InferenceRequest:
        body = await read_body(request, limit)
        body = decompress(body, request.headers.get("content-encoding"), limit)
        return parse_inference_request(
            body,
            request.headers.get("inference-header-content-length"),
            model=model.name,
            inputs=model.inputs,
            outputs=model.outputs,
            max_batch_size=model.max_batch_size,
        )

    def encode(parsed: InferenceRequest, results: dict[str, Any]) -> Response:
        encoded = encode_results(
            model_name=model.name,
            model_version=str(model.version),
            request=parsed,
            results=results,
            datatypes=model.output_datatypes,
        )
        return _response(encoded.body, encoded.header_length, request.headers.get("accept-encoding"))

    return await plane.infer(
        model,
        decode,
        encode,
        capture_for=lambda parsed: read_capture(parsed, model.module, max_elements=max_elements),
        wait=lambda work: cancel_on_disconnect(request.receive, work),
        accepts=accepts,
    )


def _response(body: bytes, header_length: int | None, accept_encoding: str | None) -> Response:
    headers = {"Vary": "Accept-Encoding"}
    if header_length is not None:
        headers["Inference-Header-Content-Length"] = str(header_length)
    encoding = choose_encoding(accept_encoding)
    if encoding is not None and len(body) >= MIN_COMPRESS_BYTES:
        body = compress(body, encoding)
        headers["Content-Encoding"] = encoding
    media_type = "application/json" if header_length is None else "application/octet-stream"
    return Response(body, headers=headers, media_type=media_type)


def inference_openapi(description: str, example: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI request body of an inference endpoint: JSON, or JSON followed by binary tensors."""
    content = {
        "application/json": {"example": example},
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
    }
    return {"requestBody": {"description": description, "content": content}}


def inference_responses(example: dict[str, Any], **described: str) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI responses of an inference endpoint; ``described`` adds or rewords codes (``e413=``)."""
    responses: dict[int | str, dict[str, Any]] = {
        200: {"content": {"application/json": {"example": example}}},
        400: {"description": "malformed body, header or binary framing"},
        404: {"description": "unknown model or version"},
        413: {"description": "body over MININN_MAX_REQUEST_BYTES"},
        422: {"description": "inputs or outputs do not fit the model (names, datatypes, shapes)"},
        503: {"description": "model not ready, or its queue is full (Retry-After)"},
    }
    responses.update({int(code.lstrip("e")): {"description": text} for code, text in described.items()})
    return responses
