"""OpenAI's response bodies and stream chunks, built from the engine's token events and results.

Completions (``object: "text_completion"``) carry ``text``; chat completions
(``"chat.completion"``, chunks ``"chat.completion.chunk"``) carry a
``message`` or a ``delta``. Log-probabilities come in each API's own shape:

- completions, ``logprobs: k``: ``{"tokens", "token_logprobs", "top_logprobs", "text_offset"}``,
  where ``top_logprobs[i]`` maps the k most likely tokens' strings (and the chosen one's) to
  their logprobs, and ``text_offset[i]`` is where token i's text starts in the choice's text;
- chat, ``logprobs: true`` and ``top_logprobs: k``: ``{"content": [{"token", "logprob", "bytes",
  "top_logprobs": [{"token", "logprob", "bytes"}]}], "refusal": null}``.

A logprob of minus infinity (a token that cannot be chosen) is sent as -9999.0, as vLLM
does: JSON has no infinities.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.runtime.generation import GenerationResult, TokenEvent
from app.runtime.token_edits import captures_json

__all__ = [
    "Choice",
    "ChoiceLogprobs",
    "Reply",
    "chat_logprobs",
    "completion_logprobs",
    "usage",
]

_FLOOR = -9999.0

TokenText = Callable[[int], str]
"""A token's own text (its id decoded alone, special tokens kept)."""


def _finite(logprob: float | None) -> float | None:
    if logprob is None or math.isfinite(logprob):
        return logprob
    return _FLOOR if logprob < 0 else -_FLOOR


@dataclass
class ChoiceLogprobs:
    """The log-probabilities of one choice's tokens, collected as they come."""

    tokens: list[str] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)
    alternatives: list[list[tuple[str, float]]] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)

    def add(self, event: TokenEvent, token_text: TokenText, offset: int) -> None:
        """Record ``event``'s token, its logprob and its alternatives; its text starts at ``offset``."""
        self.tokens.append(_own_text(event, token_text))
        self.offsets.append(offset)
        self.logprobs.append(_finite(event.logprob))
        self.alternatives.append([(text, _finite(lp) or 0.0) for _, text, lp in event.top_logprobs])

    def __len__(self) -> int:
        return len(self.tokens)


def _own_text(event: TokenEvent, token_text: TokenText) -> str:
    for token, text, _ in event.top_logprobs:
        if token == event.token_id:
            return text
    return token_text(event.token_id)


def completion_logprobs(recorded: ChoiceLogprobs, start: int = 0) -> dict[str, Any]:
    """The completions API's ``logprobs`` of tokens ``start:`` of ``recorded``."""
    tokens = recorded.tokens[start:]
    top = []
    for token, logprob, alternatives in zip(tokens, recorded.logprobs[start:], recorded.alternatives[start:]):
        entry = dict(alternatives)
        entry.setdefault(token, logprob if logprob is not None else _FLOOR)
        top.append(entry)
    return {
        "tokens": tokens,
        "token_logprobs": recorded.logprobs[start:],
        "top_logprobs": top,
        "text_offset": recorded.offsets[start:],
    }


def chat_logprobs(recorded: ChoiceLogprobs, start: int = 0) -> dict[str, Any]:
    """The chat API's ``logprobs`` of tokens ``start:`` of ``recorded``."""
    content = [
        {
            "token": token,
            "logprob": logprob,
            "bytes": list(token.encode()),
            "top_logprobs": [
                {"token": text, "logprob": lp, "bytes": list(text.encode())} for text, lp in alternatives
            ],
        }
        for token, logprob, alternatives in zip(
            recorded.tokens[start:], recorded.logprobs[start:], recorded.alternatives[start:]
        )
    ]
    return {"content": content, "refusal": None}


def mininn_extension(choices: Sequence[Choice]) -> dict[str, Any]:
    """The ``mininn`` field of a whole response: ``{"captures": {module: [a record per step]}}``
    for one choice, ``{"choices": [{"index", "captures"}]}`` for several; {} without captures."""
    if not any(choice.captures for choice in choices):
        return {}
    if len(choices) == 1:
        return {"mininn": {"captures": choices[0].captures}}
    return {"mininn": {"choices": [{"index": c.index, "captures": c.captures} for c in choices]}}


def chunk_extension(event: TokenEvent) -> dict[str, Any]:
    """The ``mininn`` field of a token's chunk: ``{"captures": {module: [its step's record]}}``."""
    captures = captures_json(event.captures)
    return {"mininn": {"captures": captures}} if captures else {}


def usage(results: Sequence[GenerationResult], prompt_tokens: int | None = None) -> dict[str, int]:
    """OpenAI's ``usage`` over every choice; ``prompt_tokens`` defaults to the sum of the results'."""
    prompt = sum(r.prompt_tokens for r in results) if prompt_tokens is None else prompt_tokens
    completion = sum(r.completion_tokens for r in results)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass
class Choice:
    """One choice as it is generated: its text so far, logprobs, and its result once done."""

    index: int
    prefix: str = ""  # the echoed prompt (completions with echo)
    logprobs: ChoiceLogprobs | None = None
    parts: list[str] = field(default_factory=list)
    released: int = 0  # characters of text released so far
    result: GenerationResult | None = None
    captures: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # module -> a record per step

    def add(self, event: TokenEvent, token_text: TokenText) -> None:
        """Record one token (and what the request's ``capture`` recorded at its step)."""
        for name, records in captures_json(event.captures).items():
            self.captures.setdefault(name, []).extend(records)
        if self.logprobs is not None:
            self.logprobs.add(event, token_text, len(self.prefix) + self.released)
        self.parts.append(event.text)
        self.released += len(event.text)

    @property
    def text(self) -> str:
        """The whole generated text (the result's, which leaves a stop string out)."""
        return self.result.text if self.result is not None else "".join(self.parts)


@dataclass
class Reply:
    """What every response and chunk of one request shares: id, creation time, model."""

    kind: str  # "cmpl" or "chatcmpl"
    model: str
    id: str = ""
    created: int = 0

    def __post_init__(self) -> None:
        self.id = self.id or f"{self.kind}-{uuid.uuid4().hex}"
        self.created = self.created or int(time.time())

    def head(self, object_name: str) -> dict[str, Any]:
        """The fields every body and chunk starts with."""
        return {"id": self.id, "object": object_name, "created": self.created, "model": self.model}
