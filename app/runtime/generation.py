"""Text generation as the transports see it: typed requests, token events, results and checks.

A transport builds a :class:`GenerationRequest` (prompt token ids and
:class:`~app.runtime.sampling.SamplingParams`), awaits
:meth:`DataPlane.generate <app.runtime.dataplane.DataPlane.generate>` and
iterates the :class:`GenerationStream` it returns::

    stream = await plane.generate(model, GenerationRequest(prompt_ids, SamplingParams(max_tokens=16)))
    async for item in stream:          # TokenEvent per generated token, then one GenerationResult
        ...

Errors, in order of appearance:

- before the stream exists (``await plane.generate`` raises): bad sampling
  values (400/422, from :class:`SamplingParams`), a prompt over the context
  length or ``max_tokens`` over what remains (422, :func:`check_request`), a
  full engine (503 with ``Retry-After``), an unloaded version (503);
- from the iterator: the deadline passed (:class:`~app.errors.GatewayTimeoutError`,
  504) or the model failed while generating (:class:`GenerationError`, 500);
  every other stream keeps going.

Closing the stream (``aclose``, ``async with``, or cancelling the task that
waits on it) cancels the sequence: it leaves the batch at the engine's next
step and its place goes to a waiting request.

The context length is enforced as vLLM does: a prompt that leaves no room for
one token is refused, and so is ``prompt + max_tokens`` over the context
length (never clamped); ``max_tokens=None`` generates up to the context length.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from app.errors import GatewayTimeoutError, ServiceError, UnprocessableError
from app.runtime.sampling import SamplingParams
from app.runtime.token_edits import StepCapture, TokenCapture, TokenEdit

if TYPE_CHECKING:
    from app.runtime.generation_engine import GenerationEngine, SequenceState

__all__ = [
    "GenerationError",
    "GenerationRequest",
    "GenerationResult",
    "GenerationStream",
    "SamplingParams",
    "TextGenerator",
    "TokenEvent",
    "check_request",
]


class TextGenerator(Protocol):
    """What the engine drives (``models``' text generators; seam 1 of issue 28).

    ``decode``'s rows must not depend on which other sequences share the call.
    """

    tokenizer: Any
    context_length: int
    vocab_size: int

    def new_sequence(self) -> Any: ...

    def prefill(self, seq: Any, token_ids: list[int]) -> Any: ...

    def decode(self, seqs: list[Any], token_ids: list[int]) -> Any: ...

    def release(self, seq: Any) -> None: ...


class GenerationError(ServiceError):
    """The model failed while generating this sequence (its stream ends; others go on)."""

    status_code = 500


@dataclass(frozen=True)
class GenerationRequest:
    """One sequence to generate.

    Attributes:
        prompt_ids: the prompt's token ids (:meth:`DataPlane.encode_prompt
            <app.runtime.dataplane.DataPlane.encode_prompt>` makes them from text).
        sampling: how tokens are chosen and when the generation stops.
        request_id: for logs.
        timeout_s: seconds from submission to the last token (504 after); None:
            ``MININN_GENERATION_TIMEOUT_S``.
        edits: interventions and steering vectors applied while generating, to this sequence
            only (:mod:`app.runtime.token_edits`; :func:`app.v2.generation_fields.token_fields`
            reads them from a request).
        capture: module outputs recorded at every step, delivered with each :class:`TokenEvent`.
        token_fields: ``interventions``, ``steering`` and ``capture`` as a protocol received them;
            :meth:`DataPlane.generate <app.runtime.dataplane.DataPlane.generate>` turns them into
            ``edits`` and ``capture`` (a request gives one form or the other).
    """

    prompt_ids: tuple[int, ...]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    request_id: str = ""
    timeout_s: float | None = None
    edits: tuple[TokenEdit, ...] = ()
    capture: TokenCapture | None = None
    token_fields: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class TokenEvent:
    """One generated token, as it is produced.

    Attributes:
        token_id: the token.
        text: the text it releases: "" while a character is incomplete or the text
            could still be the start of a stop string (it comes with a later token).
        logprob: its log-probability under the raw logits (None unless ``logprobs`` was asked).
        top_logprobs: the ``logprobs`` most likely tokens as ``(id, text, logprob)``, best first.
        captures: module name -> what the request's ``capture`` recorded at the step that chose
            this token (None without a capture).
    """

    token_id: int
    text: str
    logprob: float | None = None
    top_logprobs: tuple[tuple[int, str, float], ...] = ()
    captures: dict[str, StepCapture] | None = None


@dataclass(frozen=True)
class GenerationResult:
    """The last item of a stream.

    Attributes:
        finish_reason: ``"stop"`` (end-of-sequence, stop token or stop string) or
            ``"length"`` (``max_tokens`` or the context length).
        prompt_tokens: tokens in the prompt.
        completion_tokens: tokens generated (the end-of-sequence or stop token counts).
        text: the whole generated text, the stop string excluded.
        token_ids: the generated tokens.
    """

    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    text: str
    token_ids: tuple[int, ...]


def check_request(request: GenerationRequest, generator: TextGenerator, model: str) -> int:
    """Check ``request`` against the model; the most tokens it may generate.

    Raises:
        UnprocessableError: an empty prompt, a token id that is not an integer or is outside the vocabulary, a
            prompt that leaves no room in the context, ``max_tokens`` over what
            remains, or stop strings for a model without a tokenizer.
    """
    prompt = request.prompt_ids
    vocab, context = int(generator.vocab_size), int(generator.context_length)
    if len(prompt) == 0:
        raise UnprocessableError(f"the prompt for model '{model}' is empty: send at least one token")
    _check_ids(prompt, vocab, model, "prompt")
    _check_ids(request.sampling.stop_token_ids, vocab, model, "stop_token_ids")
    if len(prompt) >= context:
        raise UnprocessableError(
            f"the prompt has {len(prompt)} tokens, and model '{model}' has a context length of "
            f"{context} tokens (prompt and completion together): shorten the prompt to at most "
            f"{context - 1} tokens"
        )
    room = context - len(prompt)
    wanted = request.sampling.max_tokens
    if wanted is not None and wanted > room:
        raise UnprocessableError(
            f"model '{model}' has a context length of {context} tokens, and this request asks for "
            f"{len(prompt) + wanted} ({len(prompt)} in the prompt, max_tokens {wanted} to generate): "
            f"lower max_tokens to at most {room}, or shorten the prompt"
        )
    if request.sampling.stop and generator.tokenizer is None:
        raise UnprocessableError(
            f"model '{model}' has no tokenizer (no tokenizer.json), so it cannot match stop strings: "
            "use stop_token_ids"
        )
    if request.timeout_s is not None and not request.timeout_s > 0:
        raise UnprocessableError(f"the timeout must be positive, got {request.timeout_s!r} s")
    return room if wanted is None else wanted


def _check_ids(ids: Sequence[Any], vocab: int, model: str, what: str) -> None:
    for position, token in enumerate(ids):
        if isinstance(token, bool) or not isinstance(token, int) and not hasattr(token, "__index__"):
            raise UnprocessableError(f"{what}[{position}] is {token!r}, not a token id (an integer)")
        if not 0 <= int(token) < vocab:
            raise UnprocessableError(
                f"{what}[{position}] is token id {int(token)}, outside the vocabulary of model "
                f"'{model}' (0 to {vocab - 1})"
            )


Item = TokenEvent | GenerationResult


class GenerationStream:
    """The tokens of one sequence as they come: :class:`TokenEvent` items, then a :class:`GenerationResult`.

    An async iterator; closing it (``aclose``, leaving ``async with``, or the
    waiting task being cancelled) cancels the sequence.
    """

    def __init__(self, engine: GenerationEngine, state: SequenceState, queue: asyncio.Queue[Any]) -> None:
        self._engine = engine
        self._state = state
        self._queue = queue
        self._done = False

    @property
    def prompt_tokens(self) -> int:
        """Tokens in the prompt."""
        return len(self._state.prompt)

    def __aiter__(self) -> GenerationStream:
        return self

    async def __anext__(self) -> Item:
        if self._done:
            raise StopAsyncIteration
        try:
            item = await self._queue.get()
        except asyncio.CancelledError:
            self.cancel()
            raise
        if isinstance(item, BaseException):
            self._done = True
            raise item
        if isinstance(item, GenerationResult):
            self._done = True
        return item

    async def aclose(self) -> None:
        """Stop the generation (nothing more is read)."""
        self.cancel()

    def cancel(self) -> None:
        """Cancel the sequence unless it has ended; it leaves the batch at the next step."""
        if not self._done:
            self._done = True
            self._engine.cancel(self._state)

    async def __aenter__(self) -> GenerationStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.cancel()

    def __del__(self) -> None:
        if not self._done:  # dropped unread: the engine notices the flag at its next step
            self._state.cancelled = True


def deadline_error(model: str, timeout_s: float, generated: int) -> GatewayTimeoutError:
    """504 for a sequence whose deadline passed after ``generated`` tokens."""
    return GatewayTimeoutError(
        f"generation on model '{model}' passed its deadline of {timeout_s:g} s after {generated} "
        "tokens; send a longer timeout (or raise MININN_GENERATION_TIMEOUT_S), or lower max_tokens"
    )
