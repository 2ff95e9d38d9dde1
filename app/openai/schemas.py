"""OpenAI's request bodies as typed models, with OpenAI's defaults and vLLM's extra sampling fields.

Every model refuses fields it does not know (``extra="forbid"``) and values of
the wrong JSON type (``strict``: ``"1"`` is not a number, ``true`` is not an
integer), so a typo is a 400 naming the field rather than a silently ignored
setting. Ranges (``temperature`` >= 0, ``top_p`` in (0, 1], ...) are checked
once, by :class:`~app.runtime.sampling.SamplingParams`.

Extending: fields that steer or observe a generation beyond sampling go on
:class:`app.generation_fields.GenerationExtensions`, which both request bodies
inherit (and Triton's generate routes read too).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.generation_fields import GenerationExtensions

__all__ = [
    "ChatCompletionRequest",
    "ChatMessage",
    "CompletionRequest",
    "OpenAIModel",
    "StreamOptions",
    "TextPart",
    "describe_validation_error",
]


class OpenAIModel(BaseModel):
    """A part of an OpenAI request: unknown fields and wrongly typed values are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


class StreamOptions(OpenAIModel):
    """``stream_options``: with ``include_usage``, a last chunk before ``[DONE]`` carries ``usage``."""

    include_usage: bool = False


class _SamplingRequest(GenerationExtensions):
    """What completions and chat completions share: the model, sampling, stops, streaming."""

    model: str = Field(description="the repository's model name (GET /v1/models lists them)")
    temperature: float | None = Field(None, description="0: greedy; default 1")
    top_p: float | None = None
    n: int | None = Field(None, description="choices per prompt; only 1 is served")
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    stop: str | list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    seed: int | None = None
    user: str | None = Field(None, description="accepted and ignored")
    # vLLM's extras
    top_k: int | None = Field(None, description="vLLM: keep the k most likely tokens; 0 or -1: off")
    min_p: float | None = None
    repetition_penalty: float | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool | None = False

    @field_validator("stop")
    @classmethod
    def _at_least_one_character(cls, stop: str | list[str] | None) -> str | list[str] | None:
        for text in [stop] if isinstance(stop, str) else stop or []:
            if not text:
                raise ValueError("stop strings must not be empty")
        return stop

    def sampling_fields(self, max_tokens: int | None) -> dict[str, Any]:
        """Keyword arguments of :class:`~app.runtime.sampling.SamplingParams`; defaults where unset."""
        chosen: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "n": self.n,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
            "seed": self.seed,
            "top_k": self.top_k,
            "min_p": self.min_p,
            "repetition_penalty": self.repetition_penalty,
            "ignore_eos": self.ignore_eos,
            "stop": tuple([self.stop] if isinstance(self.stop, str) else self.stop or ()),
            "stop_token_ids": tuple(self.stop_token_ids or ()),
        }
        chosen = {key: value for key, value in chosen.items() if value is not None or key == "max_tokens"}
        return chosen

    @property
    def include_usage(self) -> bool:
        """Whether a stream ends with a usage chunk."""
        return self.stream_options is not None and self.stream_options.include_usage


class CompletionRequest(_SamplingRequest):
    """``POST /v1/completions``: text (or token ids) in, the text that follows out."""

    prompt: str | list[str] | list[int] | list[list[int]] = Field(
        description="a string, a list of strings (one choice each), token ids, or lists of token ids"
    )
    max_tokens: int | None = Field(16, description="OpenAI's default 16; null: up to the context length")
    echo: bool | None = False
    logprobs: int | None = Field(None, description="the chosen token's logprob and this many alternatives")
    suffix: str | None = None
    best_of: int | None = None

    @field_validator("prompt", mode="before")
    @classmethod
    def _one_prompt_form(cls, prompt: Any) -> Any:
        if isinstance(prompt, str):
            return prompt
        if isinstance(prompt, list) and prompt:
            kinds = {_prompt_kind(item) for item in prompt}
            if len(kinds) == 1 and None not in kinds:
                return prompt
        raise ValueError(
            "prompt must be a string, a non-empty list of strings, a non-empty list of token ids "
            "(integers), or a non-empty list of such lists"
        )


def _prompt_kind(item: Any) -> str | None:
    if isinstance(item, str):
        return "text"
    if isinstance(item, int) and not isinstance(item, bool):
        return "id"
    if isinstance(item, list) and item and all(_prompt_kind(i) == "id" for i in item):
        return "ids"
    return None


class TextPart(OpenAIModel):
    """One text part of a message's content list."""

    type: Literal["text"]
    text: str


class ChatMessage(OpenAIModel):
    """One message of a conversation.

    The fields an assistant message of a response carries (``refusal``,
    ``annotations``, empty ``tool_calls``) are accepted, so a client may send
    the conversation back as it got it.
    """

    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = None
    refusal: str | None = None
    annotations: list[Any] | None = None
    tool_calls: list[Any] | None = None
    function_call: None = None
    audio: None = None

    @field_validator("tool_calls")
    @classmethod
    def _no_tool_calls(cls, calls: list[Any] | None) -> list[Any] | None:
        if calls:
            raise ValueError("tool calls are not supported: this server has no tools")
        return calls

    def text(self) -> str:
        """The content as one string (text parts joined by newlines, as vLLM does)."""
        if isinstance(self.content, list):
            return "\n".join(part.text for part in self.content)
        return self.content or ""

    def template_message(self) -> dict[str, str]:
        """The message as a chat template reads it (``developer`` is ``system``, as OpenAI maps it)."""
        role = "system" if self.role == "developer" else self.role
        message = {"role": role, "content": self.text()}
        if self.name is not None:
            message["name"] = self.name
        return message


class ChatCompletionRequest(_SamplingRequest):
    """``POST /v1/chat/completions``: a conversation in, the assistant's next message out."""

    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: int | None = Field(None, description="null: up to the context length")
    max_completion_tokens: int | None = Field(None, description="OpenAI's newer name for max_tokens")
    logprobs: bool | None = False
    top_logprobs: int | None = None
    response_format: dict[str, Any] | None = None
    tools: list[Any] | None = None
    tool_choice: Literal["none", "auto"] | None = None
    parallel_tool_calls: bool | None = None
    add_generation_prompt: bool | None = Field(
        True, description="vLLM: end the prompt with the template's assistant header"
    )

    @field_validator("tools")
    @classmethod
    def _no_tools(cls, tools: list[Any] | None) -> list[Any] | None:
        if tools:
            raise ValueError("tools are not supported by this server")
        return tools

    @field_validator("response_format")
    @classmethod
    def _text_only(cls, response_format: dict[str, Any] | None) -> dict[str, Any] | None:
        if response_format is not None and response_format != {"type": "text"}:
            raise ValueError('only {"type": "text"} is supported: this server does not constrain output')
        return response_format

    def token_limit(self) -> int | None:
        """``max_completion_tokens`` or ``max_tokens`` (None: up to the context length)."""
        return self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens


_TYPE_TAG = re.compile(r"^(str|int|float|bool|none|function-.*|[A-Za-z-]+\[.*\])$", re.I)  # union tags


def _path(loc: tuple[Any, ...]) -> str:
    """``('messages', 1, 'role')`` as ``messages[1].role``, without pydantic's union tags."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not _TYPE_TAG.match(str(part)) and part != "TextPart":
            path += f".{part}" if path else str(part)
    return path


def describe_validation_error(error: ValidationError, schema: type[BaseModel]) -> tuple[str, str | None]:
    """One message naming the field at fault and what it needs, and the field (OpenAI's ``param``)."""
    errors = error.errors(include_url=False)
    first = max(errors, key=lambda e: len(e.get("loc", ())))  # of a union's tries, the one that got furthest
    param = _path(tuple(first.get("loc", ())))
    if first["type"] == "extra_forbidden":
        nested = "." in param or "[" in param
        extensions = list(GenerationExtensions.model_fields)  # listed after the protocol's own fields
        accepted = [name for name in schema.model_fields if name not in extensions] + extensions
        top = "" if nested else f"; the fields accepted are {', '.join(accepted)}"
        return f"unknown field '{param}' in the request body{top}", param or None
    if first["type"] == "missing":
        return f"the request body needs the field '{param}'", param or None
    messages = [e["msg"] for e in errors if _path(tuple(e.get("loc", ()))) == param]
    unique = list(dict.fromkeys(m.removeprefix("Value error, ") for m in messages))
    where = f"{param}: " if param else ""
    return f"{where}{' or '.join(unique)}", param or None
