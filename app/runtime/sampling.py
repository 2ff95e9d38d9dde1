"""Per-request sampling: the parameters, their validation, and choosing the next token.

:class:`SamplingParams` holds what a request asks for; :class:`Sampler` turns
one row of a model's logits into the next token for one sequence. Every step
works on that sequence's own row with its own :class:`numpy.random.Generator`,
so what a request gets never depends on what else shares the decode batch.

The order of the steps, as transformers' ``generate`` applies its logits
processors (and vLLM its penalties)::

    raw logits [V]
      -> repetition_penalty   over prompt + generated ids: positive logits / p, negative * p
      -> frequency_penalty, presence_penalty   over generated ids (OpenAI): - f * count - p * (count > 0)
      -> temperature == 0: argmax (greedy; the first of equal maxima), no random draw
      -> / temperature -> top_k -> top_p -> min_p  (each masks to -inf; at least one token kept)
      -> softmax -> one uniform draw from the request's generator, inverse CDF

``logprobs`` are the log-softmax of the *raw* logits, before any penalty,
temperature or filter (vLLM's default ``raw_logprobs``).

Bad values raise before anything runs: a value of the wrong type is a
:class:`~app.errors.BadRequestError` (400), a value out of range an
:class:`~app.errors.UnprocessableError` (422); each message names the field,
the value and the accepted range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from app.errors import BadRequestError, UnprocessableError

__all__ = ["MAX_LOGPROBS", "Sampler", "SamplingParams", "candidates", "filter_logits", "raw_logprobs"]

MAX_LOGPROBS = 20
"""Most alternatives ``logprobs`` may ask for (OpenAI's and vLLM's default limit)."""

_SEED_MODULUS = 2**64


@dataclass(frozen=True)
class SamplingParams:
    """How one request chooses its tokens and when it stops.

    Attributes:
        max_tokens: most tokens to generate; None: up to the context length.
        temperature: divides the logits; 0 picks the most likely token (greedy).
        top_k: keep the ``top_k`` most likely tokens; 0 (or -1, as vLLM): off.
        top_p: keep the most likely tokens whose probabilities add up to ``top_p``; 1: off.
        min_p: drop tokens less likely than ``min_p`` times the most likely one; 0: off.
        seed: seeds the request's own random generator; None: a fresh one. Taken modulo 2**64.
        repetition_penalty: transformers' and vLLM's: over prompt and generated tokens; 1: off.
        presence_penalty: OpenAI's, over generated tokens, in [-2, 2].
        frequency_penalty: OpenAI's, over generated tokens, in [-2, 2].
        stop: strings that end the generation; the text stops before the first one.
        stop_token_ids: token ids that end the generation (beside the end-of-sequence ids).
        ignore_eos: keep generating past end-of-sequence tokens.
        logprobs: None: none; k >= 0: each token's logprob and the k most likely alternatives.
        n: completions per request; only 1 is served.
    """

    max_tokens: int | None = None
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    seed: int | None = None
    repetition_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    logprobs: int | None = None
    n: int = 1

    def __post_init__(self) -> None:
        _check_types(self)
        _check_ranges(self)

    @property
    def greedy(self) -> bool:
        """Whether the next token is the argmax (temperature 0): no random draw."""
        return self.temperature == 0

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Every parameter's name (for transports that map request keys onto them)."""
        return tuple(f.name for f in fields(cls))


def _check_types(params: SamplingParams) -> None:
    _int_or_none(params.max_tokens, "max_tokens")
    numbers = ("temperature", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty")
    for name in numbers:
        value = getattr(params, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise BadRequestError(f"sampling parameter '{name}' must be a number, got {value!r}")
        if not math.isfinite(value):
            raise UnprocessableError(f"sampling parameter '{name}' must be finite, got {value!r}")
    _int(params.top_k, "top_k")
    _int(params.n, "n")
    _int_or_none(params.seed, "seed")
    _int_or_none(params.logprobs, "logprobs")
    if not isinstance(params.ignore_eos, bool):
        raise BadRequestError(
            f"sampling parameter 'ignore_eos' must be true or false, got {params.ignore_eos!r}"
        )
    if not isinstance(params.stop, tuple) or not all(isinstance(s, str) for s in params.stop):
        raise BadRequestError(f"sampling parameter 'stop' must be a tuple of strings, got {params.stop!r}")
    if not isinstance(params.stop_token_ids, tuple):
        raise BadRequestError(
            f"sampling parameter 'stop_token_ids' must be a tuple of token ids, got {params.stop_token_ids!r}"
        )
    for token in params.stop_token_ids:
        _int(token, "stop_token_ids")


def _int(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise BadRequestError(f"sampling parameter '{name}' must be an integer, got {value!r}")


def _int_or_none(value: Any, name: str) -> None:
    if value is not None:
        _int(value, name)


def _check_ranges(p: SamplingParams) -> None:
    checks = [
        (p.max_tokens is None or p.max_tokens >= 1, "max_tokens", p.max_tokens, "must be at least 1"),
        (p.temperature >= 0, "temperature", p.temperature, "must be >= 0 (0 is greedy)"),
        (p.top_k >= -1, "top_k", p.top_k, "must be >= 1, or 0 or -1 to turn it off"),
        (0 < p.top_p <= 1, "top_p", p.top_p, "must be in (0, 1]"),
        (0 <= p.min_p <= 1, "min_p", p.min_p, "must be in [0, 1]"),
        (p.repetition_penalty > 0, "repetition_penalty", p.repetition_penalty, "must be > 0 (1 is off)"),
        (-2 <= p.presence_penalty <= 2, "presence_penalty", p.presence_penalty, "must be in [-2, 2]"),
        (-2 <= p.frequency_penalty <= 2, "frequency_penalty", p.frequency_penalty, "must be in [-2, 2]"),
        (
            p.logprobs is None or 0 <= p.logprobs <= MAX_LOGPROBS,
            "logprobs",
            p.logprobs,
            f"must be in [0, {MAX_LOGPROBS}]",
        ),
        (all(t >= 0 for t in p.stop_token_ids), "stop_token_ids", p.stop_token_ids, "must be non-negative"),
        (all(p.stop), "stop", p.stop, "must not contain an empty string"),
    ]
    for ok, name, value, rule in checks:
        if not ok:
            raise UnprocessableError(f"sampling parameter '{name}' {rule}, got {value!r}")
    if p.n != 1:
        raise UnprocessableError(
            f"sampling parameter 'n' must be 1, got {p.n}: this server returns one completion per "
            "request; send n requests instead (with different seeds for different completions)"
        )


def raw_logprobs(logits: np.ndarray) -> np.ndarray:
    """Log-softmax of one row of raw logits, in float64 (what ``logprobs`` reports)."""
    x = logits.astype(np.float64, copy=False)
    shifted = x - x.max()
    return shifted - math.log(np.exp(shifted).sum())


def filter_logits(scores: np.ndarray, params: SamplingParams) -> np.ndarray:
    """Temperature, then top_k, top_p and min_p on one row; dropped tokens become ``-inf``.

    ``scores`` (float64, penalties already applied) is not changed; the result is a new array.
    The semantics are transformers' ``TemperatureLogitsWarper``, ``TopKLogitsWarper``,
    ``TopPLogitsWarper`` and ``MinPLogitsWarper`` (``min_tokens_to_keep=1``), in that order.
    """
    ids, values = candidates(scores, params)
    out = np.full(scores.shape, -np.inf)
    out[ids] = values
    return out


def candidates(scores: np.ndarray, params: SamplingParams) -> tuple[np.ndarray, np.ndarray]:
    """The tokens :func:`filter_logits` keeps, in id order, and their scaled logits.

    Works on the survivors only after each filter, so a large vocabulary costs one pass
    (and one partial sort for ``top_p``), not a sort of the whole row.
    """
    x = scores / params.temperature if params.temperature not in (0, 1) else scores
    ids, values = np.arange(x.size), x
    if 0 < params.top_k < x.size:
        kth = np.partition(x, x.size - params.top_k)[x.size - params.top_k]
        ids = np.flatnonzero(x >= kth)  # ties with the k-th stay, as the warper keeps them
        values = x[ids]
    if params.top_p < 1:
        keep = _top_p_keep(values, params.top_p)
        ids, values = ids[keep], values[keep]
    if params.min_p > 0:
        probs = _softmax(values)
        keep = probs >= params.min_p * probs.max()  # the most likely token always passes
        ids, values = ids[keep], values[keep]
    return ids, values


def _top_p_keep(values: np.ndarray, top_p: float) -> np.ndarray:
    """Which of ``values`` the top-p warper keeps: drop the least likely while their mass <= 1 - top_p.

    The warper sorts the whole row ascending and sums probabilities from the bottom; when the
    ``m`` largest values are strictly above every other one and the others' mass is already
    at most ``1 - top_p``, only those ``m`` need sorting (``m`` grows until that holds).
    """
    n = values.size
    probs = _softmax(values)
    limit = 1 - top_p
    m = min(n, 64)
    while m < n:
        top = np.argpartition(values, n - m)[n - m :]
        rest = np.ones(n, dtype=bool)
        rest[top] = False
        below = float(probs[rest].sum())
        if values[rest].max() < values[top].min() and below <= limit - 1e-9:
            return _keep_from(top, probs, below, limit, n, values)
        m *= 4
    return _keep_from(np.arange(n), probs, 0.0, limit, n, values)


def _keep_from(
    top: np.ndarray, probs: np.ndarray, below: float, limit: float, n: int, values: np.ndarray
) -> np.ndarray:
    order = top[np.argsort(values[top], kind="stable")]  # ascending, as the warper sorts
    remove = below + np.cumsum(probs[order]) <= limit
    remove[-1] = False  # the most likely token always stays
    keep = np.zeros(n, dtype=bool)
    keep[order[~remove]] = True
    return keep


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


class Sampler:
    """Chooses one sequence's tokens: its penalties' history, its filters, its own generator.

    Args:
        params: the request's sampling parameters.
        prompt_ids: the prompt (the repetition penalty covers it).
        vocab_size: the model's vocabulary size.
    """

    def __init__(self, params: SamplingParams, prompt_ids: Sequence[int], vocab_size: int) -> None:
        self.params = params
        seed = None if params.seed is None else params.seed % _SEED_MODULUS
        self.rng = np.random.default_rng(seed)
        self._seen = np.zeros(vocab_size, dtype=bool)  # prompt + generated, for repetition_penalty
        self._seen[np.asarray(prompt_ids, dtype=np.int64)] = True
        self._counts = np.zeros(vocab_size, dtype=np.int64)  # generated only, for the OpenAI penalties

    def penalize(self, logits: np.ndarray) -> np.ndarray:
        """The row with the penalties applied, as a new float64 array."""
        p = self.params
        x = logits.astype(np.float64, copy=True)
        if p.repetition_penalty != 1:
            seen = x[self._seen]
            x[self._seen] = np.where(seen < 0, seen * p.repetition_penalty, seen / p.repetition_penalty)
        if p.frequency_penalty or p.presence_penalty:
            x -= p.frequency_penalty * self._counts + p.presence_penalty * (self._counts > 0)
        return x

    def choose(self, logits: np.ndarray) -> int:
        """The next token for this row of raw logits ``[V]``; records it in the history.

        Raises:
            FloatingPointError: the logits hold NaN, or every token is ruled out (all ``-inf``).
        """
        if np.isnan(logits).any() or not np.isfinite(logits).any():
            raise FloatingPointError("the model's logits hold NaN or no finite value")
        scores = self.penalize(logits)
        if self.params.greedy:
            token = int(np.argmax(scores))
        else:
            token = self._draw(*candidates(scores, self.params))
        self._seen[token] = True
        self._counts[token] += 1
        return token

    def _draw(self, ids: np.ndarray, values: np.ndarray) -> int:
        """One uniform draw, inverse CDF over the candidates in id order."""
        probs = _softmax(values)
        cdf = np.cumsum(probs)
        u = self.rng.random() * cdf[-1]
        j = min(int(np.searchsorted(cdf, u, side="right")), int(np.flatnonzero(probs)[-1]))
        return int(ids[j])  # (the min: u == cdf[-1] by rounding takes the last candidate with mass)
