"""Helpers the benchmarks share: a free port, zoo ``mlp`` weights, V2 request bodies, metrics,
interleaved timing, profiles, and the JSON report."""

from __future__ import annotations

import cProfile
import json
import pstats
import socket
import statistics
import sys
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np

# PyPI's torchvision (a test dependency) cannot load its C++ operators beside the CPU torch wheel,
# and transformers imports it when installed: skip its meta registrations as tests/conftest.py does.
_META = "torchvision._meta_registrations"
if "torchvision" not in sys.modules:
    sys.modules.setdefault(_META, types.ModuleType(_META))

__all__ = [
    "Body",
    "binary_body",
    "free_port",
    "histogram_totals",
    "json_body",
    "mlp_weights",
    "profile_calls",
    "time_interleaved",
    "write_report",
]


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def mlp_weights(config: dict[str, Any], seed: int) -> dict[str, np.ndarray]:
    """A float32 state dict of the zoo's ``mlp`` for ``config`` (Linear layers at 0, 3, 6, ...)."""
    rng = np.random.default_rng(seed)
    widths = [config["in_features"], *config["hidden_sizes"], config["out_features"]]
    weights = {}
    for layer, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
        scale = np.float32(1 / np.sqrt(fan_in))
        weights[f"{3 * layer}.weight"] = rng.standard_normal((fan_out, fan_in), dtype=np.float32) * scale
        weights[f"{3 * layer}.bias"] = rng.standard_normal(fan_out, dtype=np.float32) * scale
    return weights


@dataclass(frozen=True)
class Body:
    """An encoded inference request: its bytes and the headers that go with them."""

    content: bytes
    headers: dict[str, str]


def json_body(name: str, x: np.ndarray) -> Body:
    """One FP32 input as JSON, its ``data`` flat (as tritonclient sends it)."""
    document = {
        "inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]
    }
    return Body(json.dumps(document).encode(), {"Content-Type": "application/json"})


def binary_body(name: str, x: np.ndarray, binary_output: bool = True) -> Body:
    """One FP32 input as a binary tensor after the JSON header; outputs binary too unless told."""
    header = {
        "inputs": [
            {
                "name": name,
                "shape": list(x.shape),
                "datatype": "FP32",
                "parameters": {"binary_data_size": x.nbytes},
            }
        ],
        "parameters": {"binary_data_output": binary_output},
    }
    raw = json.dumps(header).encode()
    return Body(raw + x.tobytes(), {"Inference-Header-Content-Length": str(len(raw))})


def histogram_totals(base: str, model: str, *names: str) -> dict[str, tuple[float, float]]:
    """Each histogram's (sum, count) over ``model``'s series (every version) on the server's ``/metrics``."""
    text = httpx.get(f"{base}/metrics").text
    totals = {name: [0.0, 0.0] for name in names}
    labels = f'{{model="{model}",'
    for line in text.splitlines():
        for name, total in totals.items():
            for index, kind in enumerate(("_sum", "_count")):
                if line.startswith(f"{name}{kind}{labels}"):
                    total[index] += float(line.rsplit(" ", 1)[1])
    return {name: (total[0], total[1]) for name, total in totals.items()}


def time_interleaved(
    run_torch: Callable[[], Any], run_mininn: Callable[[], Any], repeats: int, warmup: int, budget_s: float
) -> dict[str, Any]:
    """Medians and minima of torch and mininn timed run by run, interleaved, so a shared machine's
    load slows both alike: ``warmup`` untimed pairs, then up to ``repeats`` timed pairs, stopping
    after ``budget_s`` seconds once 3 pairs are in."""
    for _ in range(warmup):
        run_torch()
        run_mininn()
    t_times: list[float] = []
    m_times: list[float] = []
    start = time.perf_counter()
    while len(t_times) < repeats:
        for fn, times in ((run_torch, t_times), (run_mininn, m_times)):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        if len(t_times) >= 3 and time.perf_counter() - start > budget_s:
            break
    t_med, m_med = statistics.median(t_times), statistics.median(m_times)
    return {
        "torch_ms": round(t_med * 1e3, 3),
        "mininn_ms": round(m_med * 1e3, 3),
        "ratio": round(m_med / t_med, 3),
        "runs": len(t_times),
        "torch_min_ms": round(min(t_times) * 1e3, 3),
        "mininn_min_ms": round(min(m_times) * 1e3, 3),
    }


def profile_calls(fn: Callable[[], Any], runs: int = 3, *, cumulative: bool = False) -> None:
    """Print cProfile's top functions over ``runs`` calls of ``fn`` (after one untimed call)."""
    fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        fn()
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(15)
    if cumulative:
        stats.sort_stats("cumulative").print_stats(25)


def write_report(path: Path, report: dict[str, Any], indent: int = 2) -> None:
    """Write ``report`` as JSON to ``path`` (its folder made if need be) and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=indent) + "\n")
    print(f"\nwrote {path}")
