"""Serving overhead: a batch-1 request through HTTP vs the same forward in-process,
and JSON vs binary tensors for a 1M-element tensor.

Usage::

    python benchmarks/serve_latency.py [--requests 500] [--large-repeats 5] [--workers 1]

Starts ``python -m app`` on a free port of 127.0.0.1 with a temporary repository
holding two ``mlp`` models from the zoo:

- ``small``: 784 -> 128 -> 64 -> 10, queried with one sample. The HTTP figure is
  the round trip of a binary-tensor request on a kept-alive connection
  (``http.client``); the in-process figure is ``servable.predict`` under
  ``mininn.no_grad()`` on the same weights. Their difference at p50 is the
  serving overhead (target: under 2 ms).
- ``wide``: 100 -> 100, queried with a [10000, 100] FP32 tensor (1M elements) that
  comes back as 1M elements. Each round trip includes the client's encoding and
  decoding: ``json.dumps(x.tolist())`` / ``np.asarray(json.loads(...))`` for JSON,
  ``tobytes`` / ``np.frombuffer`` for binary (target: binary at least 5x faster).

Requests and in-process calls are interleaved in rounds so a busy, shared machine
slows both alike; the CPU load average is recorded. Results go to
``benchmarks/results/serve_latency.json``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "serve_latency.json"
sys.path.insert(0, str(ROOT))  # run from a checkout: import mininn and models from it
sys.path.insert(0, str(ROOT / "benchmarks"))
from _support import Body, binary_body, free_port, mlp_weights  # noqa: E402

SMALL = {"in_features": 784, "hidden_sizes": [128, 64], "out_features": 10}
WIDE = {"in_features": 100, "hidden_sizes": [], "out_features": 100}
LARGE_SHAPE = (10_000, 100)


def write_repository(root: Path) -> None:
    for name, config, max_batch in (("small", SMALL, 32), ("wide", WIDE, LARGE_SHAPE[0])):
        folder = root / name / "1"
        folder.mkdir(parents=True)
        spec = {"architecture": "mlp", "config": config, "max_batch_size": max_batch}
        (root / name / "model.json").write_text(json.dumps(spec))
        save_file(mlp_weights(config, seed=len(name)), str(folder / "weights.safetensors"))


def start_server(repository: Path, port: int, workers: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MININN_")}
    env.update(
        MININN_PORT=str(port),
        MININN_MODEL_REPOSITORY=str(repository),
        MININN_SEED_REPOSITORY="false",
        MININN_LOG_LEVEL="warning",
        MININN_WORKERS=str(workers),
    )
    process = subprocess.Popen([sys.executable, "-m", "app"], cwd=ROOT, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            connection.request("GET", "/v2/health/ready")
            if connection.getresponse().status == 200:
                return process
        except OSError:
            pass
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not become ready within 60 s")


def json_body(name: str, x: np.ndarray) -> Body:
    """JSON with nested ``data`` (``x.tolist()``), as a client that does not flatten sends it."""
    document = {"inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32", "data": x.tolist()}]}
    return Body(json.dumps(document).encode(), {"Content-Type": "application/json"})


def decode(response: http.client.HTTPResponse) -> np.ndarray:
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {body[:300]!r}")
    length = response.getheader("Inference-Header-Content-Length")
    if length is None:
        output = json.loads(body)["outputs"][0]
        return np.asarray(output["data"], dtype=np.float32).reshape(output["shape"])
    header = json.loads(body[: int(length)])
    output = header["outputs"][0]
    return np.frombuffer(body, dtype="<f4", offset=int(length)).reshape(output["shape"])


def round_trip(connection: http.client.HTTPConnection, model: str, encode: Any) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    body = encode()
    connection.request("POST", f"/v2/models/{model}/infer", body.content, body.headers)
    result = decode(connection.getresponse())
    return time.perf_counter() - started, result


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3

    return {
        "p50_ms": at(0.5),
        "p90_ms": at(0.9),
        "p99_ms": at(0.99),
        "mean_ms": statistics.fmean(ordered) * 1e3,
        "n": len(ordered),
    }


def in_process_servable(repository: Path, name: str, config: dict[str, Any]) -> Any:
    import mininn
    import models
    from mininn.serialization import load

    servable = models.servable("mlp", config)
    servable.module.load_state_dict(load(repository / name / "1" / "weights.safetensors"))
    servable.module.to("cpu", mininn.float32).eval()
    return servable


def bench_small(connection: http.client.HTTPConnection, repository: Path, requests: int) -> dict[str, Any]:
    import mininn

    servable = in_process_servable(repository, "small", SMALL)
    x = np.random.default_rng(0).standard_normal((1, 784)).astype(np.float32)
    http_times, local_times = [], []
    with mininn.no_grad():
        expected = servable.predict({"input": x})["output"]
        for i in range(requests + 50):
            elapsed, result = round_trip(connection, "small", lambda: binary_body("input", x))
            started = time.perf_counter()
            servable.predict({"input": x})
            local = time.perf_counter() - started
            if i >= 50:  # the first 50 warm up both paths
                http_times.append(elapsed)
                local_times.append(local)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)
    http_stats, local_stats = percentiles(http_times), percentiles(local_times)
    overhead = http_stats["p50_ms"] - local_stats["p50_ms"]
    return {
        "http_binary": http_stats,
        "in_process": local_stats,
        "overhead_p50_ms": overhead,
        "target_overhead_p50_ms": 2.0,
        "meets_target": overhead < 2.0,
    }


def bench_large(connection: http.client.HTTPConnection, repeats: int) -> dict[str, Any]:
    x = np.random.default_rng(1).standard_normal(LARGE_SHAPE).astype(np.float32)
    times: dict[str, list[float]] = {"json": [], "binary": []}
    outputs: dict[str, np.ndarray] = {}
    for i in range(repeats + 1):
        for kind, encode in (
            ("binary", lambda: binary_body("input", x)),
            ("json", lambda: json_body("input", x)),
        ):
            elapsed, outputs[kind] = round_trip(connection, "wide", encode)
            if i > 0:  # the first round warms up
                times[kind].append(elapsed)
    np.testing.assert_allclose(outputs["json"], outputs["binary"], rtol=1e-6, atol=1e-6)
    json_p50, binary_p50 = (statistics.median(times[k]) * 1e3 for k in ("json", "binary"))
    return {
        "elements": int(x.size),
        "shape": list(LARGE_SHAPE),
        "json_round_trip_ms": json_p50,
        "binary_round_trip_ms": binary_p50,
        "speedup": json_p50 / binary_p50,
        "json_request_bytes": len(json_body("input", x).content),
        "binary_request_bytes": len(binary_body("input", x).content),
        "target_speedup": 5.0,
        "meets_target": json_p50 / binary_p50 >= 5.0,
        "samples": {k: [round(t * 1e3, 2) for t in v] for k, v in times.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500, help="batch-1 requests after 50 warm-up ones")
    parser.add_argument("--large-repeats", type=int, default=5, help="round trips per format for 1M elements")
    parser.add_argument("--workers", type=int, default=1, help="MININN_WORKERS of the server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        repository = Path(folder) / "model_repository"
        write_repository(repository)
        port = free_port()
        load_before = os.getloadavg()
        server = start_server(repository, port, args.workers)
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            small = bench_small(connection, repository, args.requests)
            large = bench_large(connection, args.large_repeats)
            connection.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    results = {
        "benchmark": "serve_latency",
        "command": "python benchmarks/serve_latency.py " + " ".join(sys.argv[1:]),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "batch1_small_mlp": small,
        "large_tensor_1M": large,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    http_p50, local_p50 = small["http_binary"]["p50_ms"], small["in_process"]["p50_ms"]
    sys.stdout.write(
        f"batch-1 p50: HTTP {http_p50:.3f} ms, in-process {local_p50:.3f} ms,"
        f" overhead {small['overhead_p50_ms']:.3f} ms (target < 2 ms)\n"
        f"1M elements: JSON {large['json_round_trip_ms']:.0f} ms,"
        f" binary {large['binary_round_trip_ms']:.1f} ms,"
        f" binary {large['speedup']:.1f}x faster (target >= 5x)\n"
        f"wrote {RESULTS.relative_to(ROOT)}\n"
    )


if __name__ == "__main__":
    main()
