"""Metrics counted in plain numbers, folded into Prometheus when read, equal prometheus_client's calls."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Histogram

from app.runtime.metrics import _LATENCY_BUCKETS, Metrics, observe_many

ENDPOINT = "/v2/models/{model_name}/infer"
# on the bounds, between them, under the first and past the last
SECONDS = [0.0, 0.0005, 0.0007, 0.001, 0.003, 0.0101, 0.1, 2.5, 29.0, 30.0, 31.0, 1e9]


Key = tuple[str, tuple[tuple[str, str], ...]]


def _samples(registry: CollectorRegistry, prefix: str) -> dict[Key, float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in registry.collect()
        for s in family.samples
        if s.name.startswith(prefix) and not s.name.endswith("_created")
    }


def test_requests_ended_read_as_the_counters_and_histogram_prometheus_would_hold() -> None:
    metrics = Metrics()
    expected = Metrics()
    for i, seconds in enumerate(SECONDS):
        status = 200 if i % 3 else 422
        metrics.request_started()
        metrics.request_ended("mlp", ENDPOINT, "POST", status, seconds)
        expected.requests.labels("mlp", ENDPOINT, "POST", str(status)).inc()
        expected.latency.labels("mlp", ENDPOINT).observe(seconds)
        if status >= 400:
            expected.failures.labels("mlp", ENDPOINT, str(status)).inc()
    got = _samples(metrics.registry, "mininn_request")
    want = _samples(expected.registry, "mininn_request")
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-12), key
    assert got[("mininn_request_duration_seconds_count", (("endpoint", ENDPOINT), ("model", "mlp")))] == len(
        SECONDS
    )


def test_a_request_counts_in_flight_until_it_ends_and_folding_twice_adds_nothing() -> None:
    metrics = Metrics()
    sample = metrics.registry.get_sample_value
    metrics.request_started()
    metrics.request_started()
    assert sample("mininn_requests_in_flight") == 2
    metrics.request_ended("", "unmatched", "GET", 404, 0.001)
    assert sample("mininn_requests_in_flight") == 1
    assert sample("mininn_requests_in_flight") == 1  # a second read folds nothing new
    labels = {"model": "", "endpoint": "unmatched", "method": "GET", "status": "404"}
    assert sample("mininn_requests_total", labels) == 1
    failures = {"model": "", "endpoint": "unmatched", "status": "404"}
    assert sample("mininn_request_failures_total", failures) == 1
    metrics.in_flight.inc()  # gRPC counts on the gauge itself: both add up
    assert sample("mininn_requests_in_flight") == 2


def test_observe_many_equals_observing_one_by_one() -> None:
    registry = CollectorRegistry()
    many = Histogram("many", "h", buckets=_LATENCY_BUCKETS, registry=registry)
    single = Histogram("single", "h", buckets=_LATENCY_BUCKETS, registry=registry)
    observe_many(many, SECONDS)
    observe_many(many, [])
    for seconds in SECONDS:
        single.observe(seconds)
    for bound in [*_LATENCY_BUCKETS, "+Inf"]:
        le = {"le": str(float(bound)) if bound != "+Inf" else bound}
        got = registry.get_sample_value("many_bucket", le)
        assert got is not None and got == registry.get_sample_value("single_bucket", le), le
    assert registry.get_sample_value("many_sum") == pytest.approx(registry.get_sample_value("single_sum"))
    assert registry.get_sample_value("many_count") == len(SECONDS)
