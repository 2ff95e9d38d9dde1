"""Triton's generate extension: ``POST /v2/models/{m}[/versions/{v}]/generate`` and ``.../generate_stream``.

``{"text_input": ..., "parameters": {...}}`` in (:mod:`app.v2.generate` has
every field), ``{"model_name", "model_version", "text_output"}`` out;
``text_output`` is the generated text only, as Triton's vLLM backend gives it
with ``exclude_input_in_output`` (send ``"exclude_input_in_output": false``
for the prompt in front). ``generate_stream`` answers server-sent events,
``data: <json>\\n\\n`` per token with text and a last one with the
``finish_reason``, and no ``[DONE]``; an error before the stream starts is an
ordinary V2 error (``{"error": "..."}`` with its status), one after it a last
``data: {"error": "..."}`` event. A client that disconnects cancels the
generation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from app.errors import ErrorBody, UnprocessableError
from app.http.auth import require_read
from app.http.body import read_body
from app.http.dependencies import PlaneDep
from app.http.json_limits import load_json
from app.http.sse import EventStreamResponse, event_stream, sse_frame
from app.log import request_id_var
from app.routes._params import ModelRef, on_both_forms
from app.runtime.batching import cancel_on_disconnect
from app.runtime.dataplane import DataPlane
from app.runtime.generation import GenerationRequest, GenerationResult, GenerationStream
from app.runtime.manager import ModelVersion
from app.runtime.token_edits import captures_json
from app.v2.generate import GenerateRequest, final_fields, parse_generate, token_fields

__all__ = ["router", "triton_error_frame"]

router = APIRouter(tags=["generate"], dependencies=[Depends(require_read)])


def triton_error_frame(status_code: int, message: str) -> bytes:
    """The event that ends a generate stream with an error: ``data: {"error": "..."}``."""
    return sse_frame({"error": message})


async def _read(request: Request, plane: DataPlane, model: ModelVersion) -> tuple[GenerateRequest, Any]:
    body = await read_body(request, plane.settings.max_request_bytes)
    document = load_json(body, "request body")
    if not isinstance(document, dict):
        raise UnprocessableError(
            'the generate request must be a JSON object: {"text_input": ..., "parameters": {...}}'
        )
    parameters = document.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise UnprocessableError("'parameters' must be a JSON object")
    request_id = document.get("id")
    fields = {k: v for k, v in document.items() if k not in ("parameters", "id")}
    return parse_generate(fields, parameters, model=model.name), request_id


def _generation_request(plane: DataPlane, model: ModelVersion, parsed: GenerateRequest) -> GenerationRequest:
    if parsed.input_ids is not None:
        prompt = parsed.input_ids
    else:
        assert parsed.text_input is not None
        prompt = plane.encode_prompt(model, parsed.text_input)
    return GenerationRequest(
        prompt,
        parsed.sampling,
        request_id=request_id_var.get(),
        timeout_s=parsed.timeout_s,
        **parsed.extensions,
    )


def _head(model: ModelVersion, request_id: Any) -> dict[str, Any]:
    head: dict[str, Any] = {"model_name": model.name, "model_version": str(model.version)}
    if isinstance(request_id, str):
        head["id"] = request_id
    return head


async def _start(
    request: Request, plane: DataPlane, ref: ModelRef
) -> tuple[ModelVersion, GenerateRequest, Any, GenerationStream]:
    model = await plane.generation_model(ref.name, ref.version)
    parsed, request_id = await _read(request, plane, model)
    stream = await plane.generate(model, _generation_request(plane, model, parsed))
    return model, parsed, request_id, stream


async def generate(model: ModelRef, request: Request, plane: PlaneDep) -> Response:
    """Generate text from ``text_input`` and answer it whole (the highest version, or the one in the path)."""
    version, parsed, request_id, stream = await _start(request, plane, model)
    captures: dict[str, list[Any]] = {}
    try:
        result = await cancel_on_disconnect(request.receive, _last(stream, captures))
    finally:
        await stream.aclose()
    prefix = "" if parsed.exclude_input else parsed.text_input or ""
    body = {**_head(version, request_id), "text_output": prefix + result.text, **final_fields(result)}
    if parsed.input_ids is not None:
        body["output_ids"] = list(result.token_ids)
    if captures:
        body["captures"] = captures
    return JSONResponse(body)


async def _last(stream: GenerationStream, captures: dict[str, list[Any]]) -> GenerationResult:
    """The stream's result; ``captures`` gathers each step's records (module -> a record per step)."""
    async for item in stream:
        if isinstance(item, GenerationResult):
            return item
        for name, records in captures_json(item.captures).items():
            captures.setdefault(name, []).extend(records)
    raise RuntimeError("the generation stream ended without a result")


async def generate_stream(model: ModelRef, request: Request, plane: PlaneDep) -> Response:
    """Generate text from ``text_input`` and stream it as server-sent events, a token at a time."""
    version, parsed, request_id, stream = await _start(request, plane, model)
    frames = _frames(version, parsed, request_id, stream)
    what = f"generation on {version.name}"
    guarded = event_stream(frames, triton_error_frame, close=stream.aclose, what=what)
    return EventStreamResponse(guarded, charset_in_type=True)


async def _frames(
    model: ModelVersion, parsed: GenerateRequest, request_id: Any, stream: GenerationStream
) -> AsyncIterator[bytes]:
    head = _head(model, request_id)
    ids = parsed.input_ids is not None
    if not parsed.exclude_input and parsed.text_input:
        yield sse_frame({**head, "text_output": parsed.text_input})
    async for item in stream:
        if isinstance(item, GenerationResult):
            yield sse_frame({**head, "text_output": "", **final_fields(item)})
        elif item.text or ids or item.captures:
            yield sse_frame({**head, **token_fields(item, with_ids=ids)})


_REQUEST = {
    "text_input": "The capital of France is",
    "parameters": {"max_tokens": 8, "temperature": 0},
}
_ANSWER = {
    "model_name": "smollm2",
    "model_version": "1",
    "text_output": " Paris.",
    "finish_reason": "stop",
    "num_input_tokens": 5,
    "num_output_tokens": 3,
}
_OPENAPI = {"requestBody": {"required": True, "content": {"application/json": {"example": _REQUEST}}}}


def _responses(streaming: bool) -> dict[int | str, dict[str, Any]]:
    content: dict[str, Any] = {"application/json": {"example": _ANSWER}}
    if streaming:
        content = {"text/event-stream": {"schema": {"type": "string"}}}
    errors = {
        400: "malformed body, an unknown field or parameter, bad sampling values",
        404: "unknown model or version",
        422: "not a text-generation model, a prompt or max_tokens over the context length",
        503: "the model is not ready, or its engine is full (Retry-After)",
    }
    described = {code: {"model": ErrorBody, "description": text} for code, text in errors.items()}
    return {200: {"content": content}, **described}


on_both_forms(
    router,
    "POST",
    "/generate",
    generate,
    summary="Triton generate: text in, generated text out",
    response_class=Response,
    openapi_extra=_OPENAPI,
    responses=_responses(False),
)
on_both_forms(
    router,
    "POST",
    "/generate_stream",
    generate_stream,
    summary="Triton generate_stream: text in, server-sent events of generated text out",
    response_class=Response,
    openapi_extra=_OPENAPI,
    responses=_responses(True),
)
