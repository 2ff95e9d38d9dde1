"""Continuous batching: one engine thread per loaded text-generation version.

::

    submit ──► full (running + waiting)? ── yes ──► 503 + Retry-After, at once
                  │ no
                  ▼
              waiting (FIFO) ── cancelled / deadline ──► dropped (never prefilled)
                  │  a place among MININN_MAX_SEQUENCES running frees up
                  ▼
              prefill (its own call) ──► first token
                  ▼
              running ──► one decode call per step for every running sequence ──► a token each
                  │       between steps: finished, cancelled and timed-out sequences leave,
                  │       waiting ones are prefilled and join
                  ▼
              finished: GenerationResult; its cache is released

The engine thread owns the running batch; the event loop only appends to the
waiting queue and flags cancellations (under the engine's lock). Items reach
each stream's :class:`asyncio.Queue` through ``call_soon_threadsafe``, so the
event loop never waits for the model.

A model that raises in a batched ``decode`` has left the caches of that call
in an unknown state; every sequence of the call is rebuilt by prefilling its
prompt and generated tokens in a fresh cache, alone: the one whose prefill
raises too ends with :class:`~app.runtime.generation.GenerationError`, the
others continue (their next logits come from the prefill, equal to the decode's
up to float rounding).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import mininn
from app.errors import ServiceError, ServiceUnavailableError
from app.runtime.detokenize import IncrementalDetokenizer, StopStrings
from app.runtime.generation import (
    GenerationError,
    GenerationRequest,
    GenerationResult,
    GenerationStream,
    TextGenerator,
    TokenEvent,
    check_request,
    deadline_error,
)
from app.runtime.metrics import Metrics
from app.runtime.sampling import Sampler, raw_logprobs
from app.runtime.statistics import InferenceStatistics
from app.runtime.token_edits import SequencePlan
from app.runtime.token_hooks import plan_sequence, step_hooks
from app.v2.tensors import host_array

__all__ = ["GenerationEngine", "SequenceState"]

logger = logging.getLogger("app.runtime.generation")


@dataclass(eq=False)
class SequenceState:
    """One sequence in the engine: its request, cache, sampler, text state and stream."""

    request: GenerationRequest
    prompt: list[int]
    limit: int  # most tokens to generate
    sampler: Sampler
    detokenizer: IncrementalDetokenizer
    stops: StopStrings
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[Any]
    deadline: float
    timeout_s: float
    submitted: float = field(default_factory=time.perf_counter)
    cache: Any = None
    plan: SequencePlan | None = None  # per-token edits and captures
    generated: list[int] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    last_emit: float = 0.0
    started: bool = False  # admitted to the batch (counted as running)
    cancelled: bool = False
    finished: bool = False


class GenerationEngine:
    """Generates the sequences of one text-generation model version, batching their decode steps.

    Args:
        name: the model's name.
        version: its version.
        generator: the version's text generator.
        max_running: most sequences in the decode batch (``MININN_MAX_SEQUENCES``).
        max_waiting: most sequences waiting for a place (``MININN_MAX_WAITING_SEQUENCES``).
        timeout_s: default seconds from submission to the last token.
        metrics: the service's metrics, if any.
        statistics: the version's inference statistics, if any.
    """

    def __init__(
        self,
        name: str,
        version: int,
        generator: TextGenerator,
        *,
        max_running: int = 8,
        max_waiting: int = 64,
        timeout_s: float = 600.0,
        metrics: Metrics | None = None,
        statistics: InferenceStatistics | None = None,
    ) -> None:
        self.name, self.version, self.generator = name, version, generator
        self.max_running, self.max_waiting, self.timeout_s = max_running, max_waiting, timeout_s
        self._metrics = _EngineMetrics(metrics, name)
        self._statistics = statistics
        tokenizer = generator.tokenizer
        eos = getattr(tokenizer, "eos_token_ids", None) if tokenizer is not None else None
        self.eos_token_ids = frozenset(eos or getattr(generator, "eos_token_ids", ()) or ())
        self._token_texts: dict[int, str] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._waiting: deque[SequenceState] = deque()
        self._running: list[SequenceState] = []
        self._closed = False
        self._outbox: list[tuple[SequenceState, Any]] = []  # (stream, item) of this step, engine thread
        self._thread = threading.Thread(target=self._run, name=f"generate-{name}-v{version}", daemon=True)
        self._thread.start()

    # ---- the event loop's side -------------------------------------------------------------------
    def submit(self, request: GenerationRequest) -> GenerationStream:
        """Queue ``request``; its stream (call on the event loop).

        Raises:
            UnprocessableError: the request does not fit the model (:func:`check_request`).
            ServiceUnavailableError: the engine is full or closed (503).
        """
        limit = check_request(request, self.generator, self.name)
        loop = asyncio.get_running_loop()
        timeout = request.timeout_s if request.timeout_s is not None else self.timeout_s
        state = SequenceState(
            request=request,
            prompt=[int(t) for t in request.prompt_ids],
            limit=limit,
            sampler=Sampler(request.sampling, request.prompt_ids, int(self.generator.vocab_size)),
            detokenizer=IncrementalDetokenizer(self.generator.tokenizer, request.prompt_ids),
            stops=StopStrings(request.sampling.stop),
            loop=loop,
            queue=asyncio.Queue(),
            deadline=time.monotonic() + timeout,
            timeout_s=timeout,
            plan=plan_sequence(
                request.edits, request.capture, self.generator, prompt_length=len(request.prompt_ids),
                steps=limit,
            ),
        )
        with self._lock:
            self._admit(state)
        return GenerationStream(self, state, state.queue)

    def _admit(self, state: SequenceState) -> None:
        if self._closed:
            raise ServiceUnavailableError(
                f"model '{self.name}' version {self.version} was unloaded; retry to reach the version "
                "served now"
            )
        if len(self._running) + len(self._waiting) >= self.max_running + self.max_waiting:
            self._metrics.rejected()
            raise ServiceUnavailableError(
                f"model '{self.name}' is generating {len(self._running)} sequences with "
                f"{len(self._waiting)} waiting, its limit (MININN_MAX_SEQUENCES={self.max_running}, "
                f"MININN_MAX_WAITING_SEQUENCES={self.max_waiting}); retry later",
                retry_after=1,
            )
        self._waiting.append(state)
        self._metrics.waiting(+1)
        self._wake.notify()

    def cancel(self, state: SequenceState) -> None:
        """Cancel ``state``: a waiting sequence is dropped now, a running one at the next step."""
        with self._lock:
            state.cancelled = True
            if state in self._waiting:
                self._waiting.remove(state)
                self._metrics.waiting(-1)
                self._metrics.finished("cancelled")
            self._wake.notify()

    def close(self, *, wait: float | None = None) -> None:
        """Refuse new sequences; the engine thread ends once the running and waiting ones finish.

        Args:
            wait: seconds to wait for the thread to end (None: do not wait).
        """
        with self._lock:
            self._closed = True
            self._wake.notify()
        if wait is not None:
            self._thread.join(wait)

    @property
    def running(self) -> int:
        """Sequences in the decode batch."""
        return len(self._running)

    @property
    def waiting(self) -> int:
        """Sequences waiting for a place."""
        return len(self._waiting)

    @property
    def alive(self) -> bool:
        """Whether the engine thread is running."""
        return self._thread.is_alive()

    # ---- the engine thread -----------------------------------------------------------------------
    def _run(self) -> None:
        logger.debug("generation engine of model %s version %d started", self.name, self.version)
        try:
            while self._step():
                pass
        except BaseException as exc:  # a bug here must not leave streams waiting forever
            logger.error("generation engine of model %s stopped: %s", self.name, exc, exc_info=exc)
            self._fail_all(GenerationError(f"the generation engine of model '{self.name}' failed: {exc}"))
            raise
        logger.debug("generation engine of model %s version %d stopped", self.name, self.version)

    def _step(self) -> bool:
        """One turn: reap, admit and prefill, one decode step. False once closed and idle."""
        with self._lock:
            while not self._running and not self._waiting and not self._closed:
                self._wake.wait()
            if self._closed and not self._running and not self._waiting:
                return False
            leaving = [s for s in self._running if s.cancelled or s.finished or self._expired(s)]
            self._running = [s for s in self._running if s not in leaving]
            admitted = self._take_waiting()
        try:
            for state in leaving:
                self._leave(state)
            for state in admitted:
                self._start(state)
                self._flush()  # a first token goes out as soon as it exists
            if self._running:
                self._decode_step()
        finally:
            self._flush()
        return True

    def _take_waiting(self) -> list[SequenceState]:
        """Drop the waiting sequences that were cancelled or timed out; admit the oldest into free places."""
        for state in [s for s in self._waiting if s.cancelled or self._expired(s)]:
            self._waiting.remove(state)
            self._metrics.waiting(-1)
            if state.cancelled:
                self._metrics.finished("cancelled")
            else:
                self._metrics.finished("timeout")
                self._deliver(state, deadline_error(self.name, state.timeout_s, 0))
        admitted: list[SequenceState] = []
        while self._waiting and len(self._running) + len(admitted) < self.max_running:
            admitted.append(self._waiting.popleft())
            self._metrics.waiting(-1)
        self._running.extend(admitted)  # counted as running from now on (backpressure), prefilled next
        return admitted

    def _expired(self, state: SequenceState) -> bool:
        return time.monotonic() > state.deadline

    def _leave(self, state: SequenceState) -> None:
        """A running sequence leaves the batch: cancelled, or its deadline passed."""
        if not state.finished:
            self._end(state, ok=False)
            if state.cancelled:
                self._metrics.finished("cancelled")
            else:
                self._metrics.finished("timeout")
                self._deliver(state, deadline_error(self.name, state.timeout_s, len(state.generated)))

    def _start(self, state: SequenceState) -> None:
        """Prefill one admitted sequence and choose its first token."""
        self._metrics.running(+1)
        state.started = True
        started = time.perf_counter_ns()
        try:
            with mininn.no_grad(), self._hooks([state]):
                state.cache = self.generator.new_sequence()
                logits = self.generator.prefill(state.cache, list(state.prompt))
        except Exception as exc:
            self._fail(state, exc)
            return
        self._record_execution(1, started)
        self._metrics.prompt_tokens(len(state.prompt))
        self._accept(state, _row(logits))

    def _decode_step(self) -> None:
        batch = [s for s in self._running if s.generated and not s.finished and not s.cancelled]
        if not batch:
            return
        started = time.perf_counter_ns()
        try:
            with mininn.no_grad(), self._hooks(batch):
                logits = self.generator.decode([s.cache for s in batch], [s.generated[-1] for s in batch])
            array = _host(logits).reshape(len(batch), -1)
            rows = list(zip(batch, array, strict=True))
        except Exception as exc:
            rows = self._recover(batch, exc)
        self._record_execution(len(batch), started)
        for state, row in rows:
            self._accept(state, row)

    def _hooks(self, batch: list[SequenceState]) -> Any:
        """The per-token edit and capture hooks of one generator call over ``batch`` (in order)."""
        if all(s.plan is None for s in batch):
            return contextlib.nullcontext()
        rows = [
            None if s.plan is None else (s.plan, len(s.prompt) + len(s.generated), len(s.generated))
            for s in batch
        ]
        return step_hooks(self.generator.module, rows)

    def _recover(self, batch: list[SequenceState], exc: Exception) -> list[tuple[SequenceState, np.ndarray]]:
        """After a failed decode: rebuild each sequence's cache alone; the ones that fail again end."""
        if len(batch) == 1:
            self._fail(batch[0], exc)
            return []
        logger.warning(
            "model %s: a decode step of %d sequences failed (%s); rebuilding each sequence alone",
            self.name,
            len(batch),
            exc,
        )
        rows = []
        for state in batch:
            try:
                with mininn.no_grad(), self._hooks([state]):
                    self.generator.release(state.cache)
                    state.cache = self.generator.new_sequence()
                    logits = self.generator.prefill(state.cache, state.prompt + state.generated)
                rows.append((state, _row(logits)))
            except Exception as again:
                self._fail(state, again)
        return rows

    def _accept(self, state: SequenceState, logits: np.ndarray) -> None:
        """Choose the next token from ``logits``, send its event, and finish the sequence if it stops.

        Anything that goes wrong here (bad logits, a tokenizer that raises) ends this sequence only.
        """
        if state.cancelled or state.finished:
            return
        try:
            self._next_token(state, logits)
        except Exception as exc:
            self._fail(state, exc)

    def _next_token(self, state: SequenceState, logits: np.ndarray) -> None:
        vocab = int(self.generator.vocab_size)
        if logits.shape != (vocab,):
            raise ValueError(
                f"the model returned {logits.size} logits for a token; its vocab_size is {vocab}"
            )
        token = state.sampler.choose(logits)
        logprob, top = self._logprobs(logits, token, state.request.sampling.logprobs)
        state.generated.append(token)
        reason = self._stop_reason(state, token)
        text = state.detokenizer.add(token)
        if reason is not None:
            text += state.detokenizer.flush()
        released = state.stops.feed(text)
        if state.stops.stopped:
            reason = "stop"
        elif reason is not None:
            released += state.stops.flush()
        state.text.append(released)
        self._metrics.token(state)
        captures = state.plan.take_captures() if state.plan is not None else None
        self._deliver(state, TokenEvent(token, released, logprob, top, captures))
        if reason is not None:
            self._finish(state, reason)

    def _stop_reason(self, state: SequenceState, token: int) -> str | None:
        sampling = state.request.sampling
        if token in self.eos_token_ids and not sampling.ignore_eos or token in sampling.stop_token_ids:
            return "stop"
        if len(state.generated) >= state.limit:
            return "length"
        return None

    def _logprobs(
        self, logits: np.ndarray, token: int, k: int | None
    ) -> tuple[float | None, tuple[tuple[int, str, float], ...]]:
        if k is None:
            return None, ()
        logprobs = raw_logprobs(logits)
        if k == 0:
            return float(logprobs[token]), ()
        best = np.argpartition(-logprobs, k - 1)[:k] if k < logprobs.size else np.arange(logprobs.size)
        best = best[np.lexsort((best, -logprobs[best]))]  # most likely first; ties by id
        top = tuple((int(i), self._token_text(int(i)), float(logprobs[i])) for i in best)
        return float(logprobs[token]), top

    def _token_text(self, token: int) -> str:
        text = self._token_texts.get(token)
        if text is None:
            tokenizer = self.generator.tokenizer
            text = "" if tokenizer is None else str(tokenizer.decode([token], skip_special_tokens=False))
            self._token_texts[token] = text
        return text

    def _finish(self, state: SequenceState, reason: str) -> None:
        result = GenerationResult(
            finish_reason=reason,
            prompt_tokens=len(state.prompt),
            completion_tokens=len(state.generated),
            text="".join(state.text),
            token_ids=tuple(state.generated),
        )
        self._end(state, ok=True)  # released before the reader hears of it
        self._metrics.finished(reason)
        self._deliver(state, result)

    def _fail(self, state: SequenceState, exc: BaseException) -> None:
        logger.error(
            "request %s: model %s failed while generating (after %d tokens): %s",
            state.request.request_id or "-",
            self.name,
            len(state.generated),
            exc,
            exc_info=exc if not isinstance(exc, FloatingPointError) else None,
        )
        error = (
            exc
            if isinstance(exc, ServiceError)
            else GenerationError(
                f"model '{self.name}' failed while generating (after {len(state.generated)} tokens): "
                f"{type(exc).__name__}: {exc}"
            )
        )
        self._end(state, ok=False)
        self._metrics.finished("error")
        self._deliver(state, error)

    def _end(self, state: SequenceState, *, ok: bool) -> None:
        """Release the sequence's cache and leave the batch (engine thread)."""
        if state.finished:
            return
        state.finished = True
        if state.cache is not None:
            try:
                self.generator.release(state.cache)
            except Exception as exc:
                logger.warning("model %s: releasing a sequence failed: %s", self.name, exc)
            state.cache = None
        if state.started:
            self._metrics.running(-1)
        with self._lock:
            if state in self._running:
                self._running.remove(state)
        if self._statistics is not None:
            total = int((time.perf_counter() - state.submitted) * 1e9)
            self._statistics.record_request(ok=ok, total_ns=total)

    def _deliver(self, state: SequenceState, item: Any) -> None:
        """Queue ``item`` for ``state``'s stream; :meth:`_flush` hands a step's items over at once."""
        self._outbox.append((state, item))

    def _flush(self) -> None:
        """One ``call_soon_threadsafe`` per event loop for everything this step produced."""
        outbox, self._outbox = self._outbox, []
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[SequenceState, Any]]] = {}
        for state, item in outbox:
            by_loop.setdefault(state.loop, []).append((state, item))
        for loop, items in by_loop.items():
            try:
                loop.call_soon_threadsafe(_put_all, items)
            except RuntimeError:  # the loop is closed: nobody reads these streams any more
                for state, _ in items:
                    state.cancelled = True

    def _record_execution(self, rows: int, started_ns: int) -> None:
        if self._statistics is not None:
            self._statistics.record_execution(rows, 0, time.perf_counter_ns() - started_ns)

    def _fail_all(self, error: ServiceError) -> None:
        with self._lock:
            states = [*self._running, *self._waiting]
            self._running, self._closed = [], True
            self._waiting.clear()
        for state in states:
            if not state.finished:
                self._deliver(state, error)
        self._flush()


def _put_all(items: list[tuple[SequenceState, Any]]) -> None:
    """On the event loop: each item into its stream's queue."""
    for state, item in items:
        state.queue.put_nowait(item)


def _host(logits: Any) -> np.ndarray:
    """Logits as a host NumPy array (from a mininn tensor, or an array on any device)."""
    return host_array(logits)


def _row(logits: Any) -> np.ndarray:
    """One row of logits as a 1-D host array."""
    return _host(logits).reshape(-1)


class _EngineMetrics:
    """The generation metrics of one model (no-ops without a registry)."""

    def __init__(self, metrics: Metrics | None, model: str) -> None:
        self._m = metrics
        self._model = model

    def waiting(self, delta: int) -> None:
        if self._m is not None:
            self._m.generation_waiting.labels(self._model).inc(delta)

    def running(self, delta: int) -> None:
        if self._m is not None:
            self._m.generation_running.labels(self._model).inc(delta)

    def prompt_tokens(self, count: int) -> None:
        if self._m is not None:
            self._m.prompt_tokens.labels(self._model).inc(count)

    def token(self, state: SequenceState) -> None:
        now = time.perf_counter()
        if self._m is not None:
            self._m.generation_tokens.labels(self._model).inc()
            if len(state.generated) == 1:
                self._m.time_to_first_token.labels(self._model).observe(now - state.submitted)
            else:
                self._m.inter_token_latency.labels(self._model).observe(now - state.last_emit)
        state.last_emit = now

    def finished(self, reason: str) -> None:
        if self._m is not None:
            self._m.generation_requests.labels(self._model, reason).inc()

    def rejected(self) -> None:
        self.finished("rejected")
