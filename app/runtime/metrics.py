"""Prometheus metrics of one service instance, served at ``GET /metrics``.

Each app gets its own registry (so tests can build many apps in one process);
with ``MININN_WORKERS`` > 1 each worker process reports its own numbers.
The ``model`` label is a model that the repository holds, never an arbitrary
name from a URL, so a client cannot blow up the number of series. gRPC calls
count in the request families with the method path as ``endpoint``
(``/inference.GRPCInferenceService/ModelInfer``), ``GRPC`` as ``method`` and the
status code's name (``OK``, ``NOT_FOUND``) as ``status``.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
from collections.abc import Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.metrics_core import Metric

__all__ = ["CONTENT_TYPE_LATEST", "Metrics", "observe_many"]

_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)

_TOKEN_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    10.0,
    20.0,
    40.0,
    80.0,
)

_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class _RequestTally:
    """HTTP requests of one series since the last fold: a count, latency bucket counts, their sum."""

    __slots__ = ("buckets", "count", "seconds")

    def __init__(self) -> None:
        self.count = 0
        self.buckets = [0] * (len(_LATENCY_BUCKETS) + 1)  # the last: +Inf
        self.seconds = 0.0


class _Fold:
    """A collector that yields nothing: collecting the registry first folds the pending request counts.

    Registered before every other collector, so whoever reads the registry
    (``/metrics``, ``registry.get_sample_value``) sees every request counted.
    """

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        self._metrics.fold()
        return iter(())


class Metrics:
    """The service's collectors, registered in a registry of their own.

    HTTP requests are counted with :meth:`request_started` and
    :meth:`request_ended`: plain integers under one lock, folded into the
    request families (``mininn_requests_total``, ``mininn_request_failures_total``,
    ``mininn_request_duration_seconds``, ``mininn_requests_in_flight``) whenever
    the registry is collected. prometheus_client's own calls cost a lock and a
    few microseconds of Python each, four to six of them per request, on the
    event loop's thread; the numbers read are the same.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._lock = threading.Lock()
        self._tallies: dict[tuple[str, str, str, int], _RequestTally] = {}
        self._in_flight = 0  # HTTP requests started minus ended since the last fold
        self.registry.register(_Fold(self))
        self.requests = Counter(
            "mininn_requests_total",
            "HTTP and gRPC requests by model, endpoint (route template or gRPC method), method and status.",
            ["model", "endpoint", "method", "status"],
            registry=self.registry,
        )
        self.failures = Counter(
            "mininn_request_failures_total",
            "HTTP requests answered with a 4xx or 5xx status, gRPC calls with a status other than OK.",
            ["model", "endpoint", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "mininn_request_duration_seconds",
            "Time from receiving a request to sending its response.",
            ["model", "endpoint"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "mininn_requests_in_flight",
            "HTTP requests and gRPC calls being handled right now.",
            registry=self.registry,
        )
        self.inference = Histogram(
            "mininn_inference_duration_seconds",
            "Time of one forward pass (model.predict) per model and version.",
            ["model", "version"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.model_load_seconds = Gauge(
            "mininn_model_load_duration_seconds",
            "Time the last successful load of a model version took (build, weights, move, warm-up).",
            ["model", "version"],
            registry=self.registry,
        )
        self.model_load_failures = Counter(
            "mininn_model_load_failures_total", "Model loads that failed.", ["model"], registry=self.registry
        )
        self.model_ready = Gauge(
            "mininn_model_ready",
            "1 while a model is ready to serve, else 0.",
            ["model"],
            registry=self.registry,
        )
        self._add_queue_metrics()
        self._add_generation_metrics()

    def _add_queue_metrics(self) -> None:
        """Dynamic batching and backpressure (:mod:`app.runtime.batching`)."""
        self.batch_size = Histogram(
            "mininn_batch_size",
            "Rows per forward pass: a dynamic batch, or a request that ran alone.",
            ["model", "version"],
            buckets=_BATCH_BUCKETS,
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "mininn_queue_depth",
            "Requests waiting for their forward pass to start.",
            ["model", "version"],
            registry=self.registry,
        )
        self.queue_wait = Histogram(
            "mininn_queue_wait_seconds",
            "Time from a request's arrival in its model's queue to the start of its forward pass.",
            ["model", "version"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.queue_rejections = Counter(
            "mininn_queue_rejections_total",
            "Requests refused by a full queue (reason queue_full, 503) or dropped before their forward "
            "pass started: timeout (504), cancelled (the client disconnected).",
            ["model", "reason"],
            registry=self.registry,
        )

    def _add_generation_metrics(self) -> None:
        """Text generation (:mod:`app.runtime.generation_engine`), named like vLLM's under our prefix."""
        self.time_to_first_token = Histogram(
            "mininn_time_to_first_token_seconds",
            "Time from a generation request's submission to its first token (waiting and prefill).",
            ["model"],
            buckets=_TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.inter_token_latency = Histogram(
            "mininn_inter_token_latency_seconds",
            "Time between two consecutive tokens of one sequence.",
            ["model"],
            buckets=_TOKEN_BUCKETS,
            registry=self.registry,
        )
        self.prompt_tokens = Counter(
            "mininn_prompt_tokens", "Prompt tokens prefilled.", ["model"], registry=self.registry
        )
        self.generation_tokens = Counter(
            "mininn_generation_tokens", "Tokens generated.", ["model"], registry=self.registry
        )
        self.generation_running = Gauge(
            "mininn_num_requests_running",
            "Sequences in a generation engine's decode batch.",
            ["model"],
            registry=self.registry,
        )
        self.generation_waiting = Gauge(
            "mininn_num_requests_waiting",
            "Sequences waiting for a place in a generation engine's decode batch.",
            ["model"],
            registry=self.registry,
        )
        self.generation_requests = Counter(
            "mininn_generation_requests",
            "Generation requests that ended, by reason: stop, length, cancelled (the client left), "
            "timeout (504), error (the model failed), rejected (503, the engine was full).",
            ["model", "finish_reason"],
            registry=self.registry,
        )

    def request_started(self) -> None:
        """An HTTP request began (``mininn_requests_in_flight`` counts it until :meth:`request_ended`)."""
        with self._lock:
            self._in_flight += 1

    def request_ended(self, model: str, endpoint: str, method: str, status: int, seconds: float) -> None:
        """An HTTP request that :meth:`request_started` counted ended with ``status`` after ``seconds``.

        Args:
            model: the ``model`` label ("" for none, ``_unknown`` for a name the repository lacks).
            endpoint: the route template, or ``unmatched``.
            method: the HTTP method.
            status: the response's status code.
            seconds: time from receiving the request to sending its response.
        """
        key = (model, endpoint, method, status)
        bucket = bisect.bisect_left(_LATENCY_BUCKETS, seconds)  # as Histogram.observe: the first bound >= it
        with self._lock:
            self._in_flight -= 1
            tally = self._tallies.get(key)
            if tally is None:
                tally = self._tallies[key] = _RequestTally()
            tally.count += 1
            tally.buckets[bucket] += 1
            tally.seconds += seconds

    def fold(self) -> None:
        """Add the requests counted since the last fold to the Prometheus families (collecting does this)."""
        with self._lock:
            tallies, self._tallies = self._tallies, {}
            in_flight, self._in_flight = self._in_flight, 0
        if in_flight:
            self.in_flight.inc(in_flight)
        for (model, endpoint, method, status), tally in tallies.items():
            self.requests.labels(model, endpoint, method, str(status)).inc(tally.count)
            if status >= 400:
                self.failures.labels(model, endpoint, str(status)).inc(tally.count)
            _add_observations(self.latency.labels(model, endpoint), tally.buckets, tally.seconds)

    def forget_version(self, model: str, version: int) -> None:
        """Drop every series of an unloaded model version, so uploads do not pile series up."""
        for collector in (
            self.inference,
            self.model_load_seconds,
            self.batch_size,
            self.queue_depth,
            self.queue_wait,
        ):
            with contextlib.suppress(KeyError):
                collector.remove(model, str(version))

    def render(self) -> bytes:
        """The registry in Prometheus' text exposition format."""
        return generate_latest(self.registry)


def _add_observations(histogram: Histogram, buckets: list[int], seconds: float) -> None:
    """Add observations counted per bucket (``buckets[i]``: values in bucket ``i``) to a histogram child.

    What ``observe`` does once per value, done once per bucket. prometheus_client
    has no public call for it; ``tests/app/runtime/test_metrics.py`` pins that
    the result equals observing the values one by one.
    """
    for value, count in zip(histogram._buckets, buckets):  # noqa: SLF001
        if count:
            value.inc(count)
    histogram._sum.inc(seconds)  # noqa: SLF001


def observe_many(histogram: Histogram, values: list[float]) -> None:
    """``histogram.observe(v)`` for every value, with one update per bucket rather than per value."""
    bounds = histogram._upper_bounds  # noqa: SLF001
    counts = [0] * len(bounds)
    for value in values:
        counts[bisect.bisect_left(bounds, value)] += 1
    _add_observations(histogram, counts, sum(values))
