"""Per-model-version inference statistics in the shape of Triton's statistics extension.

``GET /v2/models/{m}/stats`` returns::

    {"model_stats": [{"name": "digits", "version": "1", "last_inference": <ms since epoch>,
                      "inference_count": 12, "execution_count": 10,
                      "inference_stats": {"success": {"count": 10, "ns": 1234567}, "fail": {...},
                                          "queue": {...}, "compute_input": {...},
                                          "compute_infer": {...}, "compute_output": {...},
                                          "cache_hit": {...}, "cache_miss": {...}},
                      "batch_stats": [{"batch_size": 1, "compute_input": {...}, ...}],
                      "memory_usage": []}]}

``success`` and ``fail`` time whole requests; ``queue`` the wait for an
inference thread; ``compute_input`` parsing, ``compute_infer`` the forward
pass, ``compute_output`` encoding the response.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Duration", "InferenceStatistics"]

_MAX_UNADDED = 1024  # requests recorded before they are added up even without a forward pass
_PHASES = ("queue", "compute_input", "compute_infer", "compute_output")


@dataclass
class Duration:
    """A count of events and their total time in nanoseconds."""

    count: int = 0
    ns: int = 0

    def add(self, ns: int) -> None:
        """Record one event that took ``ns`` nanoseconds."""
        self.count += 1
        self.ns += ns

    def as_dict(self) -> dict[str, int]:
        """``{"count": ..., "ns": ...}``."""
        return {"count": self.count, "ns": self.ns}


@dataclass
class _BatchStats:
    compute_input: Duration = field(default_factory=Duration)
    compute_infer: Duration = field(default_factory=Duration)
    compute_output: Duration = field(default_factory=Duration)


class InferenceStatistics:
    """Thread-safe counters for one model version.

    A request's numbers are appended to a queue (a ``deque.append``, no lock, on
    the event loop) and added up under the lock once per forward pass and
    whenever the statistics are read, so every reader sees every request.

    Args:
        name: the model's name.
        version: the version these numbers belong to.
    """

    def __init__(self, name: str, version: int) -> None:
        self.name = name
        self.version = version
        self._lock = threading.Lock()
        self._phases = {phase: Duration() for phase in ("success", "fail", *_PHASES)}
        self._batches: dict[int, _BatchStats] = {}
        self._inference_count = 0
        self._execution_count = 0
        self._last_inference_ms = 0
        self._requests: deque[tuple[bool, int, int, int, int]] = deque()  # not added up yet

    def record_execution(self, batch_size: int, queue_ns: int, infer_ns: int) -> None:
        """One forward pass over ``batch_size`` samples, after ``queue_ns`` of waiting."""
        with self._lock:
            self._add_requests()
            self._phases["queue"].add(queue_ns)
            self._phases["compute_infer"].add(infer_ns)
            self._batch(batch_size).compute_infer.add(infer_ns)
            self._inference_count += batch_size
            self._execution_count += 1
            self._last_inference_ms = int(time.time() * 1000)

    def record_request(
        self, *, ok: bool, total_ns: int, batch_size: int = 1, input_ns: int = 0, output_ns: int = 0
    ) -> None:
        """One request that ended (``ok``: with a 200) after ``total_ns``."""
        self._requests.append((ok, total_ns, batch_size, input_ns, output_ns))
        if len(self._requests) >= _MAX_UNADDED:  # requests that never reach a forward (refused ones)
            with self._lock:
                self._add_requests()

    def _add_requests(self) -> None:
        """Add up the requests recorded since the last call (the caller holds the lock)."""
        requests, phases = self._requests, self._phases
        while requests:
            ok, total_ns, batch_size, input_ns, output_ns = requests.popleft()
            phases["success" if ok else "fail"].add(total_ns)
            if ok:
                phases["compute_input"].add(input_ns)
                phases["compute_output"].add(output_ns)
                batch = self._batch(batch_size)
                batch.compute_input.add(input_ns)
                batch.compute_output.add(output_ns)

    def _batch(self, batch_size: int) -> _BatchStats:
        return self._batches.setdefault(batch_size, _BatchStats())

    def as_dict(self) -> dict[str, Any]:
        """This version's entry of ``model_stats``."""
        with self._lock:
            self._add_requests()
            inference_stats = {name: duration.as_dict() for name, duration in self._phases.items()}
            inference_stats["cache_hit"] = Duration().as_dict()
            inference_stats["cache_miss"] = Duration().as_dict()
            return {
                "name": self.name,
                "version": str(self.version),
                "last_inference": self._last_inference_ms,
                "inference_count": self._inference_count,
                "execution_count": self._execution_count,
                "inference_stats": inference_stats,
                "batch_stats": [
                    {
                        "batch_size": size,
                        "compute_input": stats.compute_input.as_dict(),
                        "compute_infer": stats.compute_infer.as_dict(),
                        "compute_output": stats.compute_output.as_dict(),
                    }
                    for size, stats in sorted(self._batches.items())
                ],
                "memory_usage": [],
            }
