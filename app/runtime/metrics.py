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

import contextlib

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

__all__ = ["CONTENT_TYPE_LATEST", "Metrics"]

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


class Metrics:
    """The service's collectors, registered in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
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
