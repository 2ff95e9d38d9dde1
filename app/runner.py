"""Where one model version's forward passes run: the inference thread pool.

:class:`ModelRunner` is the single place a request's tensors meet the model.
``await runner.infer(inputs)`` runs ``servable.predict`` under
``mininn.no_grad()`` on a worker thread (NumPy releases the GIL inside BLAS),
so the event loop keeps answering health checks during a long forward. A
request that waited past its deadline is refused before it starts, and a
model with ``MININN_MAX_QUEUE`` requests already waiting refuses new ones.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import Any

import numpy as np

import mininn
from app.activations import predict_capturing
from app.errors import ServiceUnavailableError, UnprocessableError
from app.metrics import Metrics
from app.statistics import InferenceStatistics
from mininn.nn import ActivationCapture
from models.errors import InputError

__all__ = ["ModelRunner"]

logger = logging.getLogger("app.runner")


class ModelRunner:
    """Runs ``servable.predict`` for one model version on ``executor``.

    Args:
        name: the model's name (for messages, logs and metrics).
        version: the model version.
        servable: the loaded, eval-mode servable (``models.Servable``).
        executor: the shared inference thread pool.
        statistics: where executions are counted.
        max_queue: most requests that may wait for this runner at once.
        metrics: the service's metrics, if any.
    """

    def __init__(
        self,
        name: str,
        version: int,
        servable: Any,
        executor: Executor,
        statistics: InferenceStatistics,
        *,
        max_queue: int,
        metrics: Metrics | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.servable = servable
        self._executor = executor
        self._statistics = statistics
        self._max_queue = max_queue
        self._pending = 0
        self._latency = metrics.inference.labels(name, str(version)) if metrics is not None else None

    @property
    def pending(self) -> int:
        """Requests submitted and not yet finished."""
        return self._pending

    async def infer(
        self,
        inputs: Mapping[str, np.ndarray],
        *,
        parameters: Mapping[str, Any] | None = None,
        deadline: float | None = None,
        batch_size: int = 1,
        capture: ActivationCapture | None = None,
    ) -> dict[str, Any]:
        """The model's outputs for one request's ``inputs``.

        Args:
            inputs: input name -> array, already checked against the model's inputs.
            parameters: the request's ``parameters`` (unused yet; batching and
                activation capture read them).
            deadline: ``time.monotonic()`` after which the request must not start.
            batch_size: the request's batch size, for statistics.
            capture: an activation capture to enter around this request's own
                forward (never batched with others); its captures follow the
                outputs in the result (:func:`app.activations.predict_capturing`).

        Raises:
            ServiceUnavailableError: the queue is full or the deadline passed (503, Retry-After).
            UnprocessableError: the model rejected the inputs.
        """
        if self._pending >= self._max_queue:
            raise ServiceUnavailableError(
                f"model '{self.name}' already has {self._pending} requests waiting "
                "(MININN_MAX_QUEUE); retry later"
            )
        self._pending += 1
        try:
            loop = asyncio.get_running_loop()
            context = contextvars.copy_context()
            submitted = time.perf_counter_ns()
            return await loop.run_in_executor(
                self._executor, context.run, self._run, inputs, submitted, deadline, batch_size, capture
            )
        finally:
            self._pending -= 1

    def _run(
        self,
        inputs: Mapping[str, np.ndarray],
        submitted: int,
        deadline: float | None,
        batch_size: int,
        capture: ActivationCapture | None = None,
    ) -> dict[str, Any]:
        started = time.perf_counter_ns()
        if deadline is not None and time.monotonic() > deadline:
            waited = (started - submitted) / 1e6
            raise ServiceUnavailableError(
                f"request for model '{self.name}' waited {waited:.0f} ms for an inference thread, "
                "past its timeout; retry later or raise the timeout"
            )
        if capture is None:
            outputs = self.predict(inputs)
        else:
            outputs = predict_capturing(self.predict, inputs, capture, model=self.name)
        finished = time.perf_counter_ns()
        self._statistics.record_execution(batch_size, started - submitted, finished - started)
        if self._latency is not None:
            self._latency.observe((finished - started) / 1e9)
        return outputs

    def predict(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``servable.predict(inputs)`` under ``no_grad``, on the calling thread.

        Raises:
            UnprocessableError: the servable rejected the inputs (``models.InputError``).
        """
        with mininn.no_grad():
            try:
                return self.servable.predict(inputs)
            except InputError as exc:
                raise UnprocessableError(f"model '{self.name}' rejected the inputs: {exc}") from None

    def warm_up(self) -> None:
        """One forward pass on the servable's example inputs (batch size 1)."""
        self.predict(self.servable.example_inputs(1))
