"""``/v1/completions`` and ``/v1/chat/completions``: OpenAI's request in, generations, OpenAI's answer out.

Each function here only translates: the request body becomes prompt token ids
(:meth:`DataPlane.encode_prompt <app.runtime.dataplane.DataPlane.encode_prompt>`,
:meth:`~app.runtime.dataplane.DataPlane.encode_chat`) and
:class:`~app.runtime.sampling.SamplingParams`; the engine's token events
become a JSON body or server-sent chunks. A completions request with a list
of prompts gets one choice per prompt, in order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from app.errors import BadRequestError, UnprocessableError
from app.http.sse import sse_frame
from app.openai.responses import (
    Choice,
    ChoiceLogprobs,
    Reply,
    TokenText,
    chat_logprobs,
    chunk_extension,
    completion_logprobs,
    mininn_extension,
    usage,
)
from app.openai.schemas import ChatCompletionRequest, CompletionRequest
from app.openai.streams import merge_streams
from app.runtime.dataplane import DataPlane
from app.runtime.generation import GenerationRequest, GenerationResult, GenerationStream, SamplingParams
from app.runtime.manager import ModelVersion

__all__ = [
    "DONE",
    "Prepared",
    "chat_body",
    "chat_frames",
    "collect",
    "completion_body",
    "completion_frames",
    "prepare_chat",
    "prepare_completion",
]

DONE = b"data: [DONE]\n\n"
"""The last frame of every OpenAI stream."""


@dataclass
class Prepared:
    """An OpenAI request made ready for the engine: its generations and the choices they fill."""

    requests: list[GenerationRequest]
    choices: list[Choice]
    reply: Reply
    token_text: TokenText


def _refuse(param: str, message: str) -> BadRequestError:
    return BadRequestError(message, details={"param": param})


def _check_stream_options(body: CompletionRequest | ChatCompletionRequest) -> None:
    if body.stream_options is not None and not body.stream:
        raise _refuse("stream_options", "stream_options is only allowed when stream is true")
    if body.logit_bias:
        raise _refuse("logit_bias", "logit_bias is not supported by this server; leave it out")


def _tokenizer(plane: DataPlane, model: ModelVersion) -> Any:
    """The model's tokenizer, or None for a model that takes token ids only."""
    try:
        return plane.tokenizer(model)
    except UnprocessableError:
        return None


def _token_text(plane: DataPlane, model: ModelVersion) -> TokenText:
    tokenizer = _tokenizer(plane, model)
    if tokenizer is None:
        return lambda token: ""
    cache: dict[int, str] = {}

    def text(token: int) -> str:
        if token not in cache:
            cache[token] = str(tokenizer.decode([token], skip_special_tokens=False))
        return cache[token]

    return text


def prepare_completion(
    plane: DataPlane, model: ModelVersion, body: CompletionRequest, request_id: str
) -> Prepared:
    """The generations of a completions request: one per prompt.

    Raises:
        BadRequestError: a field this server does not serve (``suffix``, ``best_of``, ``logit_bias``,
            ``echo`` with ``logprobs``), or bad sampling values.
        UnprocessableError: text prompts for a model without a tokenizer.
    """
    _check_stream_options(body)
    if body.suffix is not None:
        raise _refuse("suffix", "suffix (insertion) is not supported by this server; leave it out")
    if body.best_of not in (None, 1):
        raise _refuse("best_of", f"best_of must be 1 here (one choice per prompt), got {body.best_of}")
    if body.echo and body.logprobs is not None:
        raise _refuse("echo", "echo with logprobs needs prompt logprobs, which this server does not give")
    sampling = SamplingParams(**body.sampling_fields(body.max_tokens), logprobs=body.logprobs)
    prompts = _prompts(body.prompt)
    ids = [plane.encode_prompt(model, p) if isinstance(p, str) else tuple(p) for p in prompts]
    extra = body.generation_fields()
    requests = [GenerationRequest(i, sampling, request_id=request_id, **extra) for i in ids]
    echoes = [_echo(plane, model, p) if body.echo else "" for p in prompts]
    choices = [
        Choice(index, prefix=echo, logprobs=ChoiceLogprobs() if body.logprobs is not None else None)
        for index, echo in enumerate(echoes)
    ]
    return Prepared(requests, choices, Reply("cmpl", model.name), _token_text(plane, model))


def _prompts(prompt: str | list[str] | list[int] | list[list[int]]) -> list[str | list[int]]:
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt[0], int):
        return [prompt]  # type: ignore[list-item]
    return list(prompt)  # type: ignore[arg-type]


def _echo(plane: DataPlane, model: ModelVersion, prompt: str | list[int]) -> str:
    if isinstance(prompt, str):
        return prompt
    tokenizer = _tokenizer(plane, model)
    return "" if tokenizer is None else str(tokenizer.decode(prompt, skip_special_tokens=False))


def prepare_chat(
    plane: DataPlane, model: ModelVersion, body: ChatCompletionRequest, request_id: str
) -> Prepared:
    """The generation of a chat request: the conversation rendered with the model's chat template.

    Raises:
        BadRequestError: ``top_logprobs`` without ``logprobs``, a field this server does not serve,
            or bad sampling values.
        UnprocessableError: no tokenizer or chat template, or a message the template refuses.
    """
    _check_stream_options(body)
    if body.top_logprobs is not None and not body.logprobs:
        raise _refuse("top_logprobs", "top_logprobs needs logprobs: true")
    logprobs = (body.top_logprobs or 0) if body.logprobs else None
    sampling = SamplingParams(**body.sampling_fields(body.token_limit()), logprobs=logprobs)
    messages = [message.template_message() for message in body.messages]
    prompt = plane.encode_chat(model, messages, add_generation_prompt=bool(body.add_generation_prompt))
    request = GenerationRequest(prompt, sampling, request_id=request_id, **body.generation_fields())
    choice = Choice(0, logprobs=ChoiceLogprobs() if logprobs is not None else None)
    return Prepared([request], [choice], Reply("chatcmpl", model.name), _token_text(plane, model))


async def collect(prepared: Prepared, streams: Sequence[GenerationStream]) -> list[GenerationResult]:
    """Read every stream to its end into ``prepared``'s choices; their results."""
    async for index, item in merge_streams(streams):
        choice = prepared.choices[index]
        if isinstance(item, GenerationResult):
            choice.result = item
        else:
            choice.add(item, prepared.token_text)
    return [choice.result for choice in prepared.choices if choice.result is not None]


def completion_body(prepared: Prepared, results: Sequence[GenerationResult]) -> dict[str, Any]:
    """The completions API's response."""
    choices = [
        {
            "index": choice.index,
            "text": choice.prefix + choice.text,
            "logprobs": completion_logprobs(choice.logprobs) if choice.logprobs is not None else None,
            "finish_reason": choice.result.finish_reason if choice.result is not None else None,
        }
        for choice in prepared.choices
    ]
    head = prepared.reply.head("text_completion")
    return {**head, "choices": choices, "usage": usage(results), **mininn_extension(prepared.choices)}


def chat_body(prepared: Prepared, results: Sequence[GenerationResult]) -> dict[str, Any]:
    """The chat API's response."""
    choices = [
        {
            "index": choice.index,
            "message": {"role": "assistant", "content": choice.text, "refusal": None},
            "logprobs": chat_logprobs(choice.logprobs) if choice.logprobs is not None else None,
            "finish_reason": choice.result.finish_reason if choice.result is not None else None,
        }
        for choice in prepared.choices
    ]
    head = prepared.reply.head("chat.completion")
    return {**head, "choices": choices, "usage": usage(results), **mininn_extension(prepared.choices)}


async def completion_frames(
    prepared: Prepared, streams: Sequence[GenerationStream], *, include_usage: bool
) -> AsyncIterator[bytes]:
    """The completions API's stream: a chunk per token with text (or logprobs), a last chunk per
    choice with its ``finish_reason``, the usage chunk if asked for, then ``[DONE]``."""
    head = prepared.reply.head("text_completion")
    extra = {"usage": None} if include_usage else {}

    def chunk(
        index: int, text: str, logprobs: Any = None, finish_reason: str | None = None, event: Any = None
    ) -> bytes:
        choice = {"index": index, "text": text, "logprobs": logprobs, "finish_reason": finish_reason}
        mininn = chunk_extension(event) if event is not None else {}
        return sse_frame({**head, "choices": [choice], **extra, **mininn})

    for choice in prepared.choices:
        if choice.prefix:
            yield chunk(choice.index, choice.prefix)
    results = []
    async for index, item in merge_streams(streams):
        choice = prepared.choices[index]
        if isinstance(item, GenerationResult):
            choice.result = item
            results.append(item)
            yield chunk(index, "", finish_reason=item.finish_reason)
            continue
        choice.add(item, prepared.token_text)
        if choice.logprobs is not None:
            logprobs = completion_logprobs(choice.logprobs, len(choice.logprobs) - 1)
            yield chunk(index, item.text, logprobs, event=item)
        elif item.text or item.captures:
            yield chunk(index, item.text, event=item)
    if include_usage:
        yield sse_frame({**head, "choices": [], "usage": usage(results)})
    yield DONE


async def chat_frames(
    prepared: Prepared, streams: Sequence[GenerationStream], *, include_usage: bool
) -> AsyncIterator[bytes]:
    """The chat API's stream: a first chunk with ``delta.role``, a chunk per token with text (or
    logprobs), a last chunk with ``finish_reason``, the usage chunk if asked for, then ``[DONE]``."""
    head = prepared.reply.head("chat.completion.chunk")
    extra = {"usage": None} if include_usage else {}

    def chunk(
        index: int, delta: dict[str, Any], logprobs: Any = None, finish_reason: str | None = None,
        event: Any = None,
    ) -> bytes:
        choice = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}
        mininn = chunk_extension(event) if event is not None else {}
        return sse_frame({**head, "choices": [choice], **extra, **mininn})

    for choice in prepared.choices:
        yield chunk(choice.index, {"role": "assistant", "content": ""})
    results = []
    async for index, item in merge_streams(streams):
        choice = prepared.choices[index]
        if isinstance(item, GenerationResult):
            choice.result = item
            results.append(item)
            yield chunk(index, {}, finish_reason=item.finish_reason)
            continue
        choice.add(item, prepared.token_text)
        if choice.logprobs is not None:
            logprobs = chat_logprobs(choice.logprobs, len(choice.logprobs) - 1)
            yield chunk(index, {"content": item.text}, logprobs, event=item)
        elif item.text or item.captures:
            yield chunk(index, {"content": item.text}, event=item)
    if include_usage:
        yield sse_frame({**head, "choices": [], "usage": usage(results)})
    yield DONE
