"""Dynamic batching and backpressure: the request queue of one loaded model version.

Every inference request of a model version passes through its
:class:`BatchQueue` (one per :class:`~app.runtime.runner.ModelRunner`, so a batch never
mixes versions, and a request keeps the version it started with across a hot
swap)::

    submit ──► admitted? ── no ──► 503 + Retry-After, at once    (MININN_MAX_QUEUE waiting or running)
                  │ yes
                  ▼
              waiting (FIFO) ── deadline passes ──► 504, dropped  (never computed)
                  │          ── caller cancelled ──► dropped      (client disconnected)
                  ▼
              one forward on the inference pool ──► outputs split back per request
                                                └─► failure: every request of that forward fails

Batching rules (requests that may be batched: no activation capture, and the
model's :class:`BatchingPolicy` is enabled):

- A request that finds the model idle runs at once (on the next turn of the
  event loop, so requests that arrived together run together); requests that
  arrive while a forward runs form the next batch when it ends.
- A batch takes the oldest waiting request and, in arrival order, the later
  ones of its *group* (the same input names, datatypes and non-batch
  dimensions) while their rows fit in ``max_batch_size``; a request that does
  not fit waits for the next batch, and requests of other groups keep their
  places. One batched forward runs at a time per model version.
- ``delay_ms`` > 0: an idle model waits until the oldest request is that old
  (or its group fills ``max_batch_size``) before it starts, trading latency for
  larger batches. The default 0 never waits.

Requests that may not be batched run alone, straight on the inference pool, as
many at a time as it has threads; they obey the same bound and deadline.

Outputs of a batched request equal those of the same request run alone up to
the float rounding of the BLAS: OpenBLAS computes a row of ``x @ W.T``
differently for one row (GEMV) than for several, and its small-matrix kernels
round differently for different row counts (see
``tests/app/test_batching.py``). Splitting itself is exact: each request gets
its own rows of the batch's outputs.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import functools
import logging
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from app.errors import (
    ClientDisconnectedError,
    GatewayTimeoutError,
    ServiceError,
    ServiceUnavailableError,
    UnprocessableError,
)
from app.runtime.metrics import Metrics, observe_many
from app.settings import Settings
from app.store.repository import ModelSpec

__all__ = ["DISCONNECT_GRACE_S", "BatchQueue", "BatchingPolicy", "cancel_on_disconnect"]

logger = logging.getLogger("app.runtime.batching")

T = TypeVar("T")
E = TypeVar("E", bound=ServiceError)
Arrays = Mapping[str, Any]
Forward = Callable[[Arrays], Mapping[str, Any]]
ExecutionHook = Callable[[int, int, int], None]  # (rows, mean queue ns, forward ns)

_MAX_DELAY_MS = 10_000.0
_WARN_EVERY_S = 10.0
_REASONS = {
    "queue_full": "refused with 503 (queue full)",
    "timeout": "answered 504 (deadline passed)",
    "cancelled": "dropped (client disconnected)",
}


# ---- the policy ------------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchingPolicy:
    """How a model's requests are batched.

    Attributes:
        max_batch_size: most rows per batched forward; 0 or 1: requests run alone.
        delay_ms: how long an idle model waits for a batch to fill (0: never).
    """

    max_batch_size: int = 0
    delay_ms: float = 0.0

    @property
    def enabled(self) -> bool:
        """Whether requests may share a forward pass."""
        return self.max_batch_size > 1

    @classmethod
    def for_model(cls, spec: ModelSpec, max_batch_size: int, settings: Settings) -> BatchingPolicy:
        """The policy of a model version.

        Args:
            spec: its ``model.json``: ``"dynamic_batching": false`` switches batching
                off; ``"batch_delay_ms": 2`` (or Triton's ``"dynamic_batching":
                {"max_queue_delay_microseconds": 2000}``) overrides ``MININN_BATCH_DELAY_MS``.
            max_batch_size: its ``max_batch_size`` (0 for servables that are not batchable).
            settings: the service settings.

        Raises:
            UnprocessableError: ``dynamic_batching`` or ``batch_delay_ms`` has a bad value.
        """
        extra = spec.model_extra or {}
        section = extra.get("dynamic_batching", True)
        if not isinstance(section, (bool, dict)):
            raise UnprocessableError(
                "model.json key 'dynamic_batching' must be true, false or an object such as "
                f'{{"max_queue_delay_microseconds": 500}}, got {section!r}'
            )
        if isinstance(section, dict) and "max_queue_delay_microseconds" in section:
            key = "dynamic_batching.max_queue_delay_microseconds"
            delay = _delay_ms(section["max_queue_delay_microseconds"], key, per_ms=1000)
        else:
            value = extra.get("batch_delay_ms", settings.batch_delay_ms)
            delay = _delay_ms(value, "batch_delay_ms", per_ms=1)
        return cls(0 if section is False else max_batch_size, delay)

    def triton_config(self, *, max_queue: int, timeout_ms: float) -> dict[str, Any]:
        """The ``dynamic_batching`` section of Triton's model configuration."""
        return {
            "preferred_batch_size": [],
            "max_queue_delay_microseconds": round(self.delay_ms * 1000),
            "default_queue_policy": {
                "timeout_action": "REJECT",
                "default_timeout_microseconds": round(timeout_ms * 1000),
                "allow_timeout_override": True,
                "max_queue_size": max_queue,
            },
        }


def _delay_ms(value: Any, key: str, *, per_ms: int) -> float:
    """``value`` (in units of 1/``per_ms`` ms) in milliseconds, checked."""
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    if not number or not 0 <= value / per_ms <= _MAX_DELAY_MS:
        raise UnprocessableError(
            f"model.json key '{key}' must be a number from 0 to {_MAX_DELAY_MS * per_ms:.0f}, got {value!r}"
        )
    return float(value / per_ms)


# ---- one request in the queue ----------------------------------------------------------------
@dataclass(eq=False)
class _Request:
    inputs: Arrays
    rows: int
    deadline: float | None  # time.monotonic()
    context: contextvars.Context
    max_rows: int = 0  # the batch limit of its policy (0: runs alone)
    delay_s: float = 0.0
    key: Hashable = None  # the group: inputs that agree on names, datatypes and non-batch dims
    future: asyncio.Future[Any] | None = None
    queued_at: float = field(default_factory=time.monotonic)
    queued_ns: int = field(default_factory=time.perf_counter_ns)
    started: bool = False  # its forward began (set under BatchQueue._lock for lone requests)
    expired: bool = False  # its deadline passed while it waited for its answer
    abandoned: bool = False  # a lone request whose caller gave up (or that expired): never run it

    @property
    def batched(self) -> bool:
        """Whether it waits in the batch queue (else it runs alone on the pool)."""
        return self.max_rows > 0


def _group_key(inputs: Arrays) -> Hashable:
    return tuple((name, array.dtype, array.shape[1:]) for name, array in sorted(inputs.items()))


# ---- the queue -------------------------------------------------------------------------------
class BatchQueue:
    """The bounded, batching request queue of one model version.

    Args:
        name: the model's name (messages, logs, metric labels).
        version: the model version.
        forward: ``forward(inputs) -> outputs``, one forward pass on the calling
            thread (batch dimension first in and out).
        executor: the inference thread pool.
        max_queue: most requests admitted (waiting or running) at once; more get 503.
        metrics: the service's metrics, if any.
        on_execution: called on the inference thread after each forward with
            ``(rows, mean queue ns, forward ns)``.
    """

    def __init__(
        self,
        name: str,
        version: int,
        forward: Forward,
        executor: Executor,
        *,
        max_queue: int,
        metrics: Metrics | None = None,
        on_execution: ExecutionHook | None = None,
    ) -> None:
        self.name, self.version = name, version
        self._forward = forward
        self._executor = executor
        self._max_queue = max_queue
        self._on_execution = on_execution
        self._waiting: deque[_Request] = deque()  # batchable requests not started, oldest first
        self._rows: dict[Hashable, int] = {}  # rows waiting per group
        self._alone_waiting = 0  # lone requests submitted to the pool, not started
        self._lock = threading.Lock()  # guards _alone_waiting and lone requests' started/abandoned
        self._pending = 0
        self._rejected: dict[str, int] = {}  # refusals per reason since the last warning
        self._warned: dict[str, float] = {}  # when each reason was last warned about
        self._busy = False  # a batched forward is running
        self._wakeup: asyncio.Handle | None = None  # a scheduled _dispatch
        self._wakeup_at = 0.0
        labels = (name, str(version))
        if metrics is not None:  # read when collected: exact, and nothing to update per request
            metrics.queue_depth.labels(*labels).set_function(_depth_of(weakref.ref(self)))
        self._m_wait = metrics.queue_wait.labels(*labels) if metrics else None
        self._m_batch = metrics.batch_size.labels(*labels) if metrics else None
        self._m_rejected = metrics.queue_rejections if metrics else None

    @property
    def pending(self) -> int:
        """Requests admitted and not answered yet (waiting or running)."""
        return self._pending

    @property
    def depth(self) -> int:
        """Requests waiting for their forward pass to start."""
        return len(self._waiting) + self._alone_waiting

    async def submit(
        self,
        inputs: Arrays,
        *,
        rows: int = 1,
        deadline: float | None = None,
        policy: BatchingPolicy | None = None,
        forward: Forward | None = None,
    ) -> dict[str, Any]:
        """The outputs of ``inputs``, batched with other requests where ``policy`` allows.

        Args:
            inputs: input name -> array, batch dimension first (already checked).
            rows: the size of the batch dimension.
            deadline: ``time.monotonic()`` by which the request must have its answer.
            policy: the model's batching policy; None or disabled: run alone.
            forward: a forward of this request's own (e.g. with activation capture);
                it always runs alone.

        Raises:
            ServiceUnavailableError: the queue is full (503, ``Retry-After``).
            GatewayTimeoutError: the deadline passed (504); work not started is dropped.
            ServiceError: the forward failed (a batch's requests all fail, each told so).
        """
        self._admit()
        request = _Request(inputs, rows, deadline, contextvars.copy_context())
        if deadline is not None and deadline <= request.queued_at:
            self._reject("timeout")
            raise self._timed_out(request)
        self._pending += 1
        try:
            if forward is None and policy is not None and policy.enabled:
                self._enqueue(request, policy)
            else:
                self._start_alone(request, forward or self._forward)
            return await self._wait(request)
        except GatewayTimeoutError:
            self._reject("timeout")
            raise
        except asyncio.CancelledError:
            if not request.started:
                self._reject("cancelled")
            raise
        finally:
            self._pending -= 1
            self._forget(request)

    # -- admission and waiting --------------------------------------------------------------
    def _admit(self) -> None:
        if self._pending >= self._max_queue:
            self._reject("queue_full")
            raise _counted(
                ServiceUnavailableError(
                    f"model '{self.name}' already has {self._pending} requests waiting "
                    "(MININN_MAX_QUEUE); retry later"
                )
            )

    def _reject(self, reason: str) -> None:
        """Count a refused or dropped request; warn at most once per :data:`_WARN_EVERY_S` per reason.

        Under overload a log line per refusal would cost the event loop more than the refusal.
        """
        if self._m_rejected is not None:
            self._m_rejected.labels(self.name, reason).inc()
        self._rejected[reason] = self._rejected.get(reason, 0) + 1
        now = time.monotonic()
        if now - self._warned.get(reason, -_WARN_EVERY_S) >= _WARN_EVERY_S:
            logger.warning(
                "model %s version %d: %d requests %s since the last such warning (queue %d/%d; "
                "one warning per %.0f s at most, mininn_queue_rejections_total counts them all)",
                self.name,
                self.version,
                self._rejected[reason],
                _REASONS[reason],
                self._pending,
                self._max_queue,
                _WARN_EVERY_S,
            )
            self._warned[reason], self._rejected[reason] = now, 0

    async def _wait(self, request: _Request) -> dict[str, Any]:
        future = request.future
        assert future is not None
        if request.deadline is None:
            return await future
        # A timer that cancels the future at the deadline: what asyncio.wait_for does, without
        # its extra future and callbacks on every request.
        timer = future.get_loop().call_later(request.deadline - time.monotonic(), _expire, request)
        try:
            return await future
        except asyncio.CancelledError:
            task = asyncio.current_task()
            cancelling = task is not None and getattr(task, "cancelling", lambda: 0)() > 0
            if request.expired and not cancelling:  # our timer, not a cancelled caller
                raise self._timed_out(request) from None
            raise
        finally:
            timer.cancel()

    def _timed_out(self, request: _Request) -> GatewayTimeoutError:
        waited_ms = (time.monotonic() - request.queued_at) * 1e3
        if request.started:
            what = f"passed its deadline after {waited_ms:.0f} ms, while its forward pass was running"
        else:
            what = (
                f"waited {waited_ms:.0f} ms in the queue, passed its deadline, and was dropped before it ran"
            )
        return _counted(
            GatewayTimeoutError(
                f"request for model '{self.name}' {what}; retry later, or raise the request's 'timeout' "
                "parameter (microseconds) or MININN_REQUEST_TIMEOUT_MS"
            )
        )

    def _forget(self, request: _Request) -> None:
        """Drop a request that is over (answered, timed out or cancelled) from the bookkeeping."""
        if request.batched:
            if not request.started and request in self._waiting:
                self._waiting.remove(request)
                self._unqueue(request.key, request.rows)
        else:
            with self._lock:
                if not request.started and not request.abandoned:
                    request.abandoned = True
                    self._alone_waiting -= 1

    def _unqueue(self, key: Hashable, rows: int) -> None:
        left = self._rows[key] - rows
        if left:
            self._rows[key] = left
        else:
            del self._rows[key]

    # -- lone requests ----------------------------------------------------------------------
    def _start_alone(self, request: _Request, forward: Forward) -> None:
        with self._lock:
            self._alone_waiting += 1
        loop = asyncio.get_running_loop()
        try:
            request.future = loop.run_in_executor(
                self._executor, request.context.run, self._run_alone, request, forward
            )
        except RuntimeError:  # the pool was shut down
            request.future = loop.create_future()
            request.future.set_exception(_shutting_down(self.name))

    def _run_alone(self, request: _Request, forward: Forward) -> Mapping[str, Any] | None:
        with self._lock:
            if request.abandoned:
                return None  # its caller is gone: drop the work
            self._alone_waiting -= 1
            expired = request.deadline is not None and time.monotonic() > request.deadline
            request.abandoned, request.started = expired, not expired
        if expired:
            raise self._timed_out(request)
        started = time.perf_counter_ns()
        outputs = forward(request.inputs)
        self._executed([request], request.rows, started)
        return outputs

    # -- batched requests -------------------------------------------------------------------
    def _enqueue(self, request: _Request, policy: BatchingPolicy) -> None:
        loop = asyncio.get_running_loop()
        request.future = loop.create_future()
        request.max_rows, request.delay_s = policy.max_batch_size, policy.delay_ms / 1e3
        request.key = _group_key(request.inputs)
        self._waiting.append(request)
        self._rows[request.key] = self._rows.get(request.key, 0) + request.rows
        if not self._busy:
            self._wake(loop, 0.0)

    def _wake(self, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        """Run :meth:`_dispatch` after ``delay`` seconds (0: on the next turn of the loop)."""
        when = loop.time() + delay
        if self._wakeup is not None:
            if self._wakeup_at <= when:
                return
            self._wakeup.cancel()
        self._wakeup_at = when
        self._wakeup = loop.call_later(delay, self._dispatch) if delay > 0 else loop.call_soon(self._dispatch)

    def _dispatch(self) -> None:
        if self._wakeup is not None:  # called directly (by _finished), or this is that call
            self._wakeup.cancel()
            self._wakeup = None
        if self._busy:
            return
        self._drop_expired()
        if not self._waiting:
            return
        loop = asyncio.get_running_loop()
        head = self._waiting[0]
        wait = head.queued_at + head.delay_s - time.monotonic()
        if wait > 0 and self._rows[head.key] < head.max_rows:
            self._wake(loop, wait)
            return
        batch = self._take(head)
        self._busy = True
        try:
            future = loop.run_in_executor(self._executor, head.context.run, self._run_batch, batch)
        except RuntimeError:  # the pool was shut down
            self._busy = False
            self._fail(batch, _shutting_down(self.name))
            return
        future.add_done_callback(functools.partial(self._finished, batch))

    def _drop_expired(self) -> None:
        """Drop the waiting requests past their deadline (504), or whose caller already gave up."""
        now = time.monotonic()
        for request in [r for r in self._waiting if _expired(r, now)]:
            self._waiting.remove(request)
            self._unqueue(request.key, request.rows)
            assert request.future is not None
            if not request.future.done():
                request.future.set_exception(self._timed_out(request))

    def _take(self, head: _Request) -> list[_Request]:
        """The next batch: ``head``, then later requests of its group while their rows fit."""
        batch: list[_Request] = []
        rows, kept = 0, deque[_Request]()
        waiting = self._waiting
        while waiting:
            request = waiting.popleft()
            if request.key != head.key:
                kept.append(request)
                continue
            if batch and rows + request.rows > head.max_rows:
                kept.append(request)  # it, and the rest of its group, wait for the next batch
                break
            request.started = True
            batch.append(request)
            rows += request.rows
            if rows >= head.max_rows:
                break
        kept.extend(waiting)
        self._waiting = kept
        self._unqueue(head.key, rows)
        return batch

    def _run_batch(self, batch: list[_Request]) -> list[Mapping[str, Any]]:
        """One forward over the batch's stacked inputs (on an inference thread)."""
        started = time.perf_counter_ns()
        if len(batch) == 1:
            outputs = self._forward(batch[0].inputs)
            self._executed(batch, batch[0].rows, started)
            return [outputs]
        sizes = [request.rows for request in batch]
        names = batch[0].inputs.keys()
        inputs = {name: np.concatenate([r.inputs[name] for r in batch]) for name in names}
        outputs = self._forward(inputs)
        self._executed(batch, sum(sizes), started)
        return _split(outputs, sizes, self.name)

    def _finished(self, batch: list[_Request], future: asyncio.Future[list[Mapping[str, Any]]]) -> None:
        self._busy = False
        if self._waiting:
            # Start the next batch before answering this one: the answers' tasks then run on the
            # event loop while the inference thread computes (the other order kept them apart).
            self._dispatch()
        exc = future.exception()
        if exc is not None:
            self._fail(batch, exc)
        else:
            for request, outputs in zip(batch, future.result()):
                assert request.future is not None
                if not request.future.done():
                    request.future.set_result(outputs)

    def _fail(self, batch: list[_Request], exc: BaseException) -> None:
        rows = sum(request.rows for request in batch)
        if len(batch) > 1:
            unexpected = not isinstance(exc, ServiceError)
            logger.log(
                logging.ERROR if unexpected else logging.WARNING,
                "model %s version %d: a batched forward of %d requests (%d rows) failed: %s",
                self.name,
                self.version,
                len(batch),
                rows,
                exc,
                exc_info=exc if unexpected else None,
            )
        for request in batch:
            assert request.future is not None
            if not request.future.done():
                request.future.set_exception(_batch_error(exc, self.name, len(batch), rows))

    # -- accounting -------------------------------------------------------------------------
    def _executed(self, batch: list[_Request], rows: int, started_ns: int) -> None:
        finished = time.perf_counter_ns()
        waits = [started_ns - request.queued_ns for request in batch]
        if self._m_wait is not None and self._m_batch is not None:
            observe_many(self._m_wait, [wait / 1e9 for wait in waits])
            self._m_batch.observe(rows)
        if self._on_execution is not None:
            self._on_execution(rows, sum(waits) // len(waits), finished - started_ns)


def _depth_of(queue: weakref.ref[BatchQueue]) -> Callable[[], float]:
    """What ``mininn_queue_depth`` reads of a queue (0 once it is gone; a weak reference keeps no model)."""

    def depth() -> float:
        alive = queue()
        return 0.0 if alive is None else float(alive.depth)

    return depth


def _counted(error: E) -> E:
    """``error``, logged at DEBUG: the queue counts it and warns once per period (``_reject``)."""
    error.log_level = logging.DEBUG
    return error


def _expire(request: _Request) -> None:
    """At a request's deadline: stop waiting for its answer (:meth:`BatchQueue._wait` answers 504)."""
    assert request.future is not None
    if not request.future.done():
        request.expired = True
        request.future.cancel()  # a lone request not started is dropped; a queued one is forgotten


def _expired(request: _Request, now: float) -> bool:
    assert request.future is not None
    return request.future.done() or (request.deadline is not None and request.deadline <= now)


def _split(outputs: Mapping[str, Any], sizes: list[int], model: str) -> list[Mapping[str, Any]]:
    """Each request's rows of the batch's outputs (views, no copies)."""
    total = sum(sizes)
    for name, array in outputs.items():
        if np.ndim(array) == 0 or np.shape(array)[0] != total:
            raise ServiceError(
                f"model '{model}' returned output '{name}' of shape {list(np.shape(array))} for a batch "
                f"of {total} rows, so it cannot be split per request; set \"dynamic_batching\": false "
                "in its model.json"
            )
    bounds = np.cumsum([0, *sizes]).tolist()
    return [
        {name: array[start:stop] for name, array in outputs.items()}
        for start, stop in zip(bounds[:-1], bounds[1:])
    ]


def _batch_error(exc: BaseException, model: str, requests: int, rows: int) -> BaseException:
    """The error one request of a failed forward gets (a copy: each request raises its own)."""
    if requests == 1:
        return exc
    where = f" (this request ran batched with {requests - 1} others, {rows} rows in all)"
    if isinstance(exc, ServiceError):
        clone = copy.copy(exc)
        clone.message = exc.message + where
        clone.args = (clone.message,)
        return clone
    return ServiceError(
        f"the forward pass of model '{model}' failed ({type(exc).__name__}){where}; "
        "the server log has the details"
    )


def _shutting_down(model: str) -> ServiceUnavailableError:
    return ServiceUnavailableError(f"the server is shutting down; model '{model}' takes no more requests")


# ---- client disconnects ----------------------------------------------------------------------
DISCONNECT_GRACE_S = 0.05
"""How long a request runs before :func:`cancel_on_disconnect` starts watching its client.

Watching costs a task per request; most batched requests are answered well
within this time, and work that short is not worth dropping. A client that
hangs up while its request waits longer is noticed at most this late.
"""


async def cancel_on_disconnect(
    receive: Callable[[], Awaitable[Mapping[str, Any]]],
    work: Coroutine[Any, Any, T],
    *,
    grace_s: float = DISCONNECT_GRACE_S,
) -> T:
    """``await work``, cancelling it if the HTTP client disconnects first.

    Call it after the request body has been read: ``receive`` then only
    returns once the client has gone (``http.disconnect``). Cancelling a
    request that waits in a :class:`BatchQueue` removes it, so it is never
    computed. ``work`` runs in the calling task; if it is still running after
    ``grace_s`` seconds, one watcher task starts and cancels that task when the
    client goes.

    Raises:
        ClientDisconnectedError: the client disconnected before ``work`` finished.
    """
    task = asyncio.current_task()
    assert task is not None
    gone = False
    watcher: asyncio.Task[None] | None = None

    async def watch() -> None:
        nonlocal gone
        try:
            await _disconnected(receive)
        except Exception:  # receive() failed: nothing to watch, let the work finish
            return
        gone = True
        task.cancel()

    def start_watching() -> None:
        nonlocal watcher
        watcher = task.get_loop().create_task(watch())

    timer = task.get_loop().call_later(grace_s, start_watching)
    try:
        return await work
    except asyncio.CancelledError:
        if not gone:
            raise
        if sys.version_info >= (3, 11):
            task.uncancel()
        raise ClientDisconnectedError(
            "the client disconnected before its inference finished; it was dropped"
        ) from None
    finally:
        timer.cancel()
        if watcher is not None:
            watcher.cancel()


async def _disconnected(receive: Callable[[], Awaitable[Mapping[str, Any]]]) -> None:
    while (await receive()).get("type") != "http.disconnect":
        pass
