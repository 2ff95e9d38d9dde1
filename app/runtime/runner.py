"""Where one model version's forward passes run: its batch queue and the inference thread pool.

:class:`ModelRunner` is the single place a request's tensors meet the model.
``await runner.infer(inputs, batching=policy)`` hands the request to the
version's :class:`~app.runtime.batching.BatchQueue`, which stacks concurrent requests
of the same shapes into one ``servable.predict`` (or runs the request alone),
under ``mininn.no_grad()`` on a worker thread (NumPy releases the GIL inside
BLAS), so the event loop keeps answering health checks during a long forward.
The queue is bounded (``MININN_MAX_QUEUE``: 503 with ``Retry-After`` when
full), and a request whose deadline passes gets 504; if it had not started,
it is never computed. Requests with an activation capture always run alone.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import Any

import numpy as np

import mininn
from app.errors import PayloadTooLargeError, UnprocessableError
from app.runtime.batching import BatchingPolicy, BatchQueue
from app.runtime.metrics import Metrics
from app.runtime.statistics import InferenceStatistics
from app.v2.tensors import host_array
from mininn.nn import ActivationCapture, ActivationStats, CaptureError, CaptureLimitError
from models.errors import InputError

__all__ = ["ModelRunner", "predict_capturing"]

logger = logging.getLogger("app.runtime.runner")


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
        self._latency = metrics.inference.labels(name, str(version)) if metrics is not None else None
        self.queue = BatchQueue(
            name,
            version,
            self.predict,
            executor,
            max_queue=max_queue,
            metrics=metrics,
            on_execution=self._record_execution,
        )

    @property
    def pending(self) -> int:
        """Requests submitted and not yet answered (waiting or running)."""
        return self.queue.pending

    async def infer(
        self,
        inputs: Mapping[str, np.ndarray],
        *,
        parameters: Mapping[str, Any] | None = None,
        deadline: float | None = None,
        batch_size: int = 1,
        capture: ActivationCapture | None = None,
        batching: BatchingPolicy | None = None,
    ) -> dict[str, Any]:
        """The model's outputs for one request's ``inputs``.

        Args:
            inputs: input name -> array, already checked against the model's inputs.
            parameters: the request's ``parameters`` (read by the route: ``timeout``,
                activation capture).
            deadline: ``time.monotonic()`` by which the request must be answered (504 after).
            batch_size: the request's batch size (rows of the batch dimension).
            capture: an activation capture to enter around this request's own
                forward (never batched with others); its captures follow the
                outputs in the result (:func:`predict_capturing`).
            batching: the model's batching policy; None or disabled: run alone.

        Raises:
            ServiceUnavailableError: the queue is full (503, Retry-After).
            GatewayTimeoutError: the deadline passed (504).
            UnprocessableError: the model rejected the inputs.
        """
        forward = None
        if capture is not None:
            forward = functools.partial(predict_capturing, self.predict, capture=capture, model=self.name)
        return await self.queue.submit(
            inputs, rows=batch_size, deadline=deadline, policy=batching, forward=forward
        )

    def _record_execution(self, rows: int, queue_ns: int, infer_ns: int) -> None:
        self._statistics.record_execution(rows, queue_ns, infer_ns)
        if self._latency is not None:
            self._latency.observe(infer_ns / 1e9)

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


def predict_capturing(
    predict: Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]],
    inputs: Mapping[str, np.ndarray],
    capture: ActivationCapture,
    *,
    model: str,
) -> dict[str, Any]:
    """``predict(inputs)`` with ``capture`` active, on the calling (inference) thread.

    Returns:
        The model's outputs, then each capture (a host array, or
        :class:`~mininn.nn.ActivationStats`) under its name, in order.

    Raises:
        PayloadTooLargeError: the captures are over ``capture.max_elements``.
        UnprocessableError: an intervention does not fit the output it edits.
    """
    try:
        with capture:
            outputs = predict(inputs)
    except CaptureLimitError as exc:
        raise PayloadTooLargeError(
            f"the captures of model '{model}' would return {exc.total} elements, over the limit of "
            f"{exc.limit} (MININN_MAX_ACTIVATION_ELEMENTS); capture fewer modules, send a smaller "
            "batch, or use \"reduce\": \"stats\""
        ) from None
    except CaptureError as exc:
        raise UnprocessableError(f"model '{model}': {exc}") from None
    results = {
        name: value if isinstance(value, ActivationStats) else host_array(value)
        for name, value in capture.results.items()
    }
    return {**outputs, **results}
