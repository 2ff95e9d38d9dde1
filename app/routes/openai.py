"""OpenAI's API for the text-generation models: ``/v1/models``, ``/v1/completions``, ``/v1/chat/completions``.

Each route is also under ``/openai/v1``, where KServe mounts the same API.
The routes read the body (with the server's size limit and JSON depth
limit), validate it against :mod:`app.openai.schemas`, and call the data
plane's generation (:mod:`app.openai.completions` translates both ways).
Every error on these paths is OpenAI's body (:mod:`app.openai.errors`),
rendered by the app's one error handler; an error after a stream has started
is an error event (:mod:`app.http.sse`). A client that disconnects cancels
its generations, streaming or not.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError

from app.errors import BadRequestError, NotFoundError, ServiceError, UnprocessableError
from app.http.auth import require_read
from app.http.body import read_body
from app.http.dependencies import PlaneDep
from app.http.json_limits import load_json
from app.http.sse import EventStreamResponse, event_stream
from app.log import request_id_var
from app.openai.completions import (
    Prepared,
    chat_body,
    chat_frames,
    collect,
    completion_body,
    completion_frames,
    prepare_chat,
    prepare_completion,
)
from app.openai.errors import OpenAIErrorBody, openai_error_frame
from app.openai.schemas import ChatCompletionRequest, CompletionRequest, describe_validation_error
from app.openai.streams import close_streams, open_streams
from app.runtime.batching import cancel_on_disconnect
from app.runtime.dataplane import DataPlane
from app.runtime.manager import ModelVersion

__all__ = ["PREFIXES", "router", "text_models"]

logger = logging.getLogger("app.errors")

PREFIXES = ("/v1", "/openai/v1")
"""Where the API is mounted: OpenAI's own paths, and KServe's."""

router = APIRouter(tags=["openai"], dependencies=[Depends(require_read)])

Body = TypeVar("Body", bound=BaseModel)


def text_models(plane: DataPlane) -> list[ModelVersion]:
    """The ready versions (highest of each model) that generate text, by name."""
    found = []
    for name in plane.manager.names():
        try:
            model = plane.manager.version(name)  # loads nothing
        except ServiceError:
            continue
        if model.engine is not None:
            found.append(model)
    return found


async def _generation_model(plane: DataPlane, name: str) -> ModelVersion:
    """``name``'s version that generates; 404 naming the models that do, if it is not one."""
    try:
        return await plane.generation_model(name)
    except (NotFoundError, UnprocessableError) as exc:
        listed = ", ".join(m.name for m in text_models(plane)) or "none"
        what = (
            f"The model '{name}' does not exist"
            if isinstance(exc, NotFoundError)
            else f"The model '{name}' does not generate text (it serves /v2/models/{name}/infer)"
        )
        raise NotFoundError(
            f"{what}; the models that generate text here are: {listed} (GET /v1/models lists them)",
            details={"param": "model"},
        ) from None


async def _read(request: Request, plane: DataPlane, schema: type[Body]) -> Body:
    body = await read_body(request, plane.settings.max_request_bytes)
    document = load_json(body, "request body")
    if not isinstance(document, dict):
        raise BadRequestError("the request body must be a JSON object")
    try:
        return schema.model_validate(document)
    except ValidationError as exc:
        message, param = describe_validation_error(exc, schema)
        raise BadRequestError(message, details={"param": param}) from None


def _model_card(model: ModelVersion) -> dict[str, Any]:
    created = model.source.mtime_ns // 1_000_000_000 if model.source is not None else 0
    generator = model.generator
    card = {"id": model.name, "object": "model", "created": created, "owned_by": "mininn-serve"}
    if generator is not None:
        card["max_model_len"] = int(generator.context_length)  # vLLM's extra field
    return card


Endpoint = Callable[..., Awaitable[Response]]


def _answering_errors(endpoint: Endpoint) -> Endpoint:
    """Turn an unexpected exception into a 500 in OpenAI's shape (the log has the traceback)."""

    async def guarded(*args: Any, **kwargs: Any) -> Response:
        try:
            return await endpoint(*args, **kwargs)
        except ServiceError:
            raise
        except Exception as exc:
            request_id = request_id_var.get()
            logger.error("request %s: %s failed unexpectedly", request_id, endpoint.__name__, exc_info=exc)
            raise ServiceError(
                f"internal server error (request id {request_id}); the server log has the details"
            ) from None

    guarded.__name__, guarded.__doc__ = endpoint.__name__, endpoint.__doc__
    guarded.__signature__ = inspect.signature(endpoint)  # type: ignore[attr-defined]
    return guarded


async def list_models(plane: PlaneDep) -> JSONResponse:
    """The models that generate text (OpenAI's model list; other models serve the V2 API only)."""
    return JSONResponse({"object": "list", "data": [_model_card(m) for m in text_models(plane)]})


async def get_model(model_name: str, plane: PlaneDep) -> JSONResponse:
    """One text-generation model."""
    return JSONResponse(_model_card(await _generation_model(plane, model_name)))


@dataclass(frozen=True)
class _Api:
    """What differs between the completions and the chat API: the body, its preparation, the
    streamed frames and the whole answer."""

    schema: type[BaseModel]
    prepare: Callable[..., Prepared]
    frames: Callable[..., Any]
    body: Callable[..., Any]


_COMPLETIONS = _Api(CompletionRequest, prepare_completion, completion_frames, completion_body)
_CHAT = _Api(ChatCompletionRequest, prepare_chat, chat_frames, chat_body)


async def _complete(request: Request, plane: DataPlane, api: _Api) -> Response:
    body: Any = await _read(request, plane, api.schema)
    model = await _generation_model(plane, body.model)
    prepared = api.prepare(plane, model, body, request_id_var.get())
    if body.stream:
        return await _stream(plane, model, prepared, api.frames, body.include_usage)
    return await _answer(request, plane, model, prepared, api.body)


async def create_completion(request: Request, plane: PlaneDep) -> Response:
    """Continue a prompt (a string, strings, or token ids): OpenAI's completions API."""
    return await _complete(request, plane, _COMPLETIONS)


async def create_chat_completion(request: Request, plane: PlaneDep) -> Response:
    """Answer a conversation with the model's chat template: OpenAI's chat completions API."""
    return await _complete(request, plane, _CHAT)


async def _answer(
    request: Request, plane: DataPlane, model: ModelVersion, prepared: Prepared, build: Callable[..., Any]
) -> Response:
    streams = await open_streams(plane, model, prepared.requests)
    try:
        results = await cancel_on_disconnect(request.receive, collect(prepared, streams))
    finally:
        await close_streams(streams)
    return JSONResponse(build(prepared, results))


async def _stream(
    plane: DataPlane, model: ModelVersion, prepared: Prepared, frames: Callable[..., Any], include_usage: bool
) -> Response:
    streams = await open_streams(plane, model, prepared.requests)  # refusals are ordinary errors
    produced = frames(prepared, streams, include_usage=include_usage)
    guarded = event_stream(
        produced, openai_error_frame, close=lambda: close_streams(streams), what=f"generation on {model.name}"
    )
    return EventStreamResponse(guarded)


_ERRORS = {
    400: "invalid request: a bad or unknown field, a prompt or max_tokens over the context length",
    401: "a read key is configured (MININN_READ_API_KEY) and none was sent",
    403: "the key sent is not accepted",
    404: "unknown model, or one that does not generate text",
    408: "the body did not arrive within MININN_BODY_TIMEOUT_S",
    413: "body over MININN_MAX_REQUEST_BYTES",
    503: "the model is not ready, or its engine is full (Retry-After)",
}
_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": OpenAIErrorBody, "description": text} for code, text in _ERRORS.items()
}


def _generation_responses(example: dict[str, Any]) -> dict[int | str, dict[str, Any]]:
    ok = {
        "description": "the answer, or with stream: true server-sent events ending with data: [DONE]",
        "content": {
            "application/json": {"example": example},
            "text/event-stream": {"schema": {"type": "string"}},
        },
    }
    return {200: ok, **_RESPONSES}


def _request_body(schema: type[BaseModel], example: dict[str, Any]) -> dict[str, Any]:
    content = {"application/json": {"schema": _inline(schema.model_json_schema()), "example": example}}
    return {"requestBody": {"required": True, "content": content}}


def _inline(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$defs`` references replaced by the definitions (for the OpenAPI document)."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("#/$defs/"):
                return resolve(definitions[reference.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return resolve(schema)


_COMPLETION_EXAMPLE = {"model": "smollm2", "prompt": "The capital of France is", "max_tokens": 8}
_COMPLETION_ANSWER = {
    "id": "cmpl-0f9c",
    "object": "text_completion",
    "created": 1764300000,
    "model": "smollm2",
    "choices": [{"index": 0, "text": " Paris.", "logprobs": None, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
}
_CHAT_EXAMPLE = {
    "model": "smollm2",
    "messages": [{"role": "user", "content": "What is the capital of France?"}],
}
_CHAT_ANSWER = {
    "id": "chatcmpl-5e1a",
    "object": "chat.completion",
    "created": 1764300000,
    "model": "smollm2",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "The capital of France is Paris.", "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 36, "completion_tokens": 8, "total_tokens": 44},
}

for _prefix in PREFIXES:
    _kserve = " (KServe's path)" if _prefix != "/v1" else ""
    router.add_api_route(
        f"{_prefix}/models",
        _answering_errors(list_models),
        methods=["GET"],
        summary=f"OpenAI: list the text-generation models{_kserve}",
        response_class=JSONResponse,
        responses={k: v for k, v in _RESPONSES.items() if k in (401, 403)},
    )
    router.add_api_route(
        f"{_prefix}/models/{{model_name}}",
        _answering_errors(get_model),
        methods=["GET"],
        summary=f"OpenAI: one text-generation model{_kserve}",
        response_class=JSONResponse,
        responses={k: v for k, v in _RESPONSES.items() if k in (400, 401, 403, 404, 503)},
    )
    router.add_api_route(
        f"{_prefix}/completions",
        _answering_errors(create_completion),
        methods=["POST"],
        summary=f"OpenAI: completions{_kserve}",
        response_class=Response,
        openapi_extra=_request_body(CompletionRequest, _COMPLETION_EXAMPLE),
        responses=_generation_responses(_COMPLETION_ANSWER),
    )
    router.add_api_route(
        f"{_prefix}/chat/completions",
        _answering_errors(create_chat_completion),
        methods=["POST"],
        summary=f"OpenAI: chat completions{_kserve}",
        response_class=Response,
        openapi_extra=_request_body(ChatCompletionRequest, _CHAT_EXAMPLE),
        responses=_generation_responses(_CHAT_ANSWER),
    )
