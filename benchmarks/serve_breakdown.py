"""Where a batch-1 inference request's time goes in mininn-serve, on a real server on 127.0.0.1.

Usage::

    python benchmarks/serve_breakdown.py            # about 2.5 minutes
    python benchmarks/serve_breakdown.py --seconds 10 --repeat 3

Writes ``benchmarks/results/serve_breakdown.json``. ``benchmarks/serve_load.py``
measures throughput and latency across loads and servers; this one explains a
point of it (the MLP of ``serve_load``, 32 closed-loop clients, its client and
repository). For each server variant it reports answered requests per second,
the server's CPU per request (all threads, from ``/proc``), each server
thread's share of a core (the event loop's thread first), the client's CPU per
request, and from ``/metrics`` the mean rows per forward, forward wall time and
queue wait. The variants:

- ``batching`` / ``no batching``: the server as shipped, JSON and binary tensors.
- ``router``: ``POST .../infer`` through FastAPI's router instead of
  ``app.routes.infer.InferenceFastPath`` (its path pattern replaced by one that
  never matches).
- ``switch 5 ms``: Python's default thread switch interval instead of
  ``app.main.SWITCH_INTERVAL_S``.
- ``forward off the GIL``: each MLP forward replaced by a sleep as long as
  that forward takes alone (timed here first, per batch size, one BLAS thread)
  and zeros for outputs, one forward at a time (``MININN_INFERENCE_THREADS=1``):
  it holds no GIL and no core. What the server could do, with and without
  batching, if forwards ran in a process of their own on the other core,
  before any cost of getting tensors there and back.
- ``floor``: a bare ASGI app on the same uvicorn (uvloop, httptools) that reads
  the body, parses it with orjson, converts the tensor with NumPy and answers
  ten numbers: what HTTP and the parse alone cost per request.

It also times the request body's parse in-process: ``json.loads``,
``orjson.loads`` and ``app.v2.parse_inference_request``. Variants run in
interleaved rounds so the machine's load hits them alike; the figures move with
that load, the comparisons much less.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import platform
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve_load as sl  # noqa: E402  (the sibling benchmark: repository, client, server helpers)
from _support import histogram_totals, write_report  # noqa: E402

CLIENTS = 32
SERVER = """
import re, sys
import app.main, app.routes.infer
app.main.SWITCH_INTERVAL_S = {switch}
if {router}:
    app.routes.infer._INFER_PATH = re.compile(r"(?!)")  # never matches: FastAPI's router serves /infer
if {stand_in}:
    import time, numpy as np, app.runtime.runner
    forward_s = {stand_in}  # batch rows -> seconds the forward takes alone
    real = app.runtime.runner.ModelRunner.predict
    def predict(self, inputs):
        if not self.name.startswith("mlp"):
            return real(self, inputs)
        rows = len(inputs["input"])
        time.sleep(forward_s[rows])
        return {{"output": np.zeros((rows, 10), np.float32)}}
    app.runtime.runner.ModelRunner.predict = predict
from app.__main__ import main
sys.exit(main([]))
"""


async def floor_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The ``floor`` variant: read, parse (orjson + NumPy), answer ten numbers; nothing else."""
    if scope["type"] == "lifespan":
        while (message := await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["method"] == "GET":
        body = b"{}"
    else:
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        document = orjson.loads(b"".join(chunks))
        x = np.asarray(document["inputs"][0]["data"], dtype=np.float32)
        body = orjson.dumps({"outputs": [{"name": "output", "shape": [1, 10], "data": x[:10].tolist()}]})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def thread_ticks(pid: int) -> dict[str, int]:
    ticks = {}
    for path in glob.glob(f"/proc/{pid}/task/*/stat"):
        try:
            fields = Path(path).read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue  # the thread ended
        ticks[path.split("/")[4]] = int(fields[11]) + int(fields[12])
    return ticks


def metric_means(base: str, model: str) -> dict[str, float]:
    metrics = {
        "rows_per_forward": "mininn_batch_size",
        "forward_ms": "mininn_inference_duration_seconds",
        "queue_wait_ms": "mininn_queue_wait_seconds",
    }
    totals = histogram_totals(base, model, *metrics.values())
    means = {}
    for name, metric in metrics.items():
        total, count = totals[metric]
        means[name] = total / count if count else float("nan")
    return means


def measure(
    pid: int, url: str, body: sl.Body, seconds: float, base: str | None, model: str
) -> dict[str, Any]:
    """One closed-loop stretch of ``CLIENTS`` clients, with the server's and client's CPU."""
    asyncio.run(sl.closed_loop(url, body, CLIENTS, 0.5, 0.5))  # warm-up, not measured
    tick = os.sysconf("SC_CLK_TCK")
    threads0, client0 = thread_ticks(pid), resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    latencies, statuses = asyncio.run(sl.closed_loop(url, body, CLIENTS, 0.0, seconds))
    elapsed = time.perf_counter() - started
    threads1, client1 = thread_ticks(pid), resource.getrusage(resource.RUSAGE_SELF)
    answered = statuses.get(200, 0)
    busy = sorted(((t - threads0.get(k, 0)) / tick / elapsed for k, t in threads1.items()), reverse=True)
    server_cpu = sum(t - threads0.get(k, 0) for k, t in threads1.items()) / tick
    client_cpu = (client1.ru_utime + client1.ru_stime) - (client0.ru_utime + client0.ru_stime)
    point = {
        "requests_per_s": answered / seconds,
        "p99_ms": sl.percentile(latencies, 99),
        "statuses": {str(k): v for k, v in statuses.items()},
        "server_cpu_us_per_request": server_cpu / answered * 1e6,
        "thread_busy": [round(b, 3) for b in busy if b >= 0.01],
        "client_cpu_us_per_request": client_cpu / answered * 1e6,
    }
    if base is not None:
        point.update(metric_means(base, model))  # means since start-up (warm-up included)
        point["forward_ms"] *= 1e3
        point["queue_wait_ms"] *= 1e3
    return point


def forward_seconds(max_rows: int) -> dict[int, float]:
    """The zoo MLP's forward alone for 1..``max_rows`` rows: best of 5, one BLAS thread."""
    from threadpoolctl import threadpool_limits

    import mininn
    import models

    servable = models.servable("mlp", sl.MLP)
    rng = np.random.default_rng(0)
    seconds = {}
    with threadpool_limits(1), mininn.no_grad():
        for rows in range(1, max_rows + 1):
            inputs = {"input": rng.standard_normal((rows, sl.MLP["in_features"]), dtype=np.float32)}
            servable.predict(inputs)
            best = float("inf")
            for _ in range(5):
                started = time.perf_counter()
                servable.predict(inputs)
                best = min(best, time.perf_counter() - started)
            seconds[rows] = best
    return seconds


def parse_times(body: bytes) -> dict[str, float]:
    from app.v2 import parse_inference_request
    from models.signature import TensorSpec

    inputs, outputs = [TensorSpec("input", "FP32", (-1, 784))], [TensorSpec("output", "FP32", (-1, 10))]
    calls = {
        "json.loads": lambda: json.loads(body),
        "orjson.loads": lambda: orjson.loads(body),
        "parse_inference_request": lambda: parse_inference_request(
            body, None, model="mlp", inputs=inputs, outputs=outputs, max_batch_size=64
        ),
    }
    times = {}
    for name, call in calls.items():
        call()
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(500):
                call()
            best = min(best, (time.perf_counter() - started) / 500)
        times[name] = best * 1e6
    return times


def variants(forward_s: dict[int, float]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(label, model, protocol, how to start its server); ``forward_s``: the MLP's forward alone by rows."""
    shipped = {"switch": "app.main.SWITCH_INTERVAL_S", "router": False, "stand_in": None, "settings": {}}
    # one forward at a time (a core for forwards), each a sleep as long as the forward alone
    off_the_gil = {**shipped, "stand_in": forward_s, "settings": {"inference_threads": 1}}
    return [
        ("batching, json", "mlp", "json", shipped),
        ("no batching, json", "mlp-nobatch", "json", shipped),
        ("batching, binary", "mlp", "binary", shipped),
        ("no batching, binary", "mlp-nobatch", "binary", shipped),
        ("batching, json, router", "mlp", "json", {**shipped, "router": True}),
        ("batching, json, switch 5 ms", "mlp", "json", {**shipped, "switch": 0.005}),
        ("batching, json, forward off the GIL", "mlp", "json", off_the_gil),
        ("no batching, json, forward off the GIL", "mlp-nobatch", "json", off_the_gil),
        ("floor, json", "mlp", "json", {"floor": True}),
    ]


def run_variant(
    work: Path, label: str, model: str, protocol: str, how: dict[str, Any], seconds: float
) -> dict:
    port = sl.free_port()
    base = f"http://127.0.0.1:{port}"
    body = {"json": sl.json_body, "binary": sl.binary_body}[protocol]("input", sl.sample("mlp"))
    log = work / f"{re.sub(r'[^a-z0-9]+', '-', label)}.log"
    if how.get("floor"):
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "--app-dir",
            str(Path(__file__).parent),
            "serve_breakdown:floor_app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--loop",
            "uvloop",
            "--http",
            "httptools",
        ]
        server = sl.running(command, dict(os.environ, **sl.BLAS_ENV), f"{base}/", "floor", log)
        metrics = None
    else:
        code = SERVER.format(switch=how["switch"], router=how["router"], stand_in=how["stand_in"])
        command = [sys.executable, "-c", code]
        server = sl.mininn_server(work / "repository", port, log, command=command, **how["settings"])
        metrics = base
    with server as pid:
        point = measure(pid, f"{base}/v2/models/{model}/infer", body, seconds, metrics, model)
    print(
        f"  {label:40s} {point['requests_per_s']:7.0f} req/s  p99 {point['p99_ms']:6.1f} ms  server "
        f"{point['server_cpu_us_per_request']:5.0f} us/req  threads {point['thread_busy']}  "
        f"rows/forward {point.get('rows_per_forward', float('nan')):.1f}",
        flush=True,
    )
    return point


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=6.0, help="measured seconds per variant and round")
    parser.add_argument("--repeat", type=int, default=2, help="interleaved rounds")
    parser.add_argument("--output", type=Path, default=sl.RESULTS / "serve_breakdown.json")
    opts = parser.parse_args(argv)
    started = time.monotonic()
    machine = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_before": os.getloadavg()[0],
    }
    work = Path(tempfile.mkdtemp(prefix="serve_breakdown-"))
    try:
        sl.write_repository(work / "repository")
        body = sl.json_body("input", sl.sample("mlp")).content
        parse = parse_times(body)
        print("parse of one 784-float JSON body (us): " + ", ".join(f"{k} {v:.1f}" for k, v in parse.items()))
        forward_s = forward_seconds(sl.MODELS["mlp"][2])
        alone = ", ".join(f"{rows} rows {forward_s[rows] * 1e3:.2f}" for rows in (1, 16, 32))
        print(f"MLP forward alone (ms): {alone}")
        rounds: dict[str, list[dict[str, Any]]] = {}
        for round_ in range(opts.repeat):
            print(f"round {round_ + 1}/{opts.repeat}, {CLIENTS} clients, MLP", flush=True)
            for label, model, protocol, how in variants(forward_s):
                rounds.setdefault(label, []).append(
                    run_variant(work, label, model, protocol, how, opts.seconds)
                )
    except BaseException:
        print(f"logs kept in {work}", file=sys.stderr)
        raise
    shutil.rmtree(work, ignore_errors=True)
    machine["load_average_after"] = os.getloadavg()[0]
    results = {
        "machine": machine,
        "run": {
            "clients": CLIENTS,
            "seconds": opts.seconds,
            "repeat": opts.repeat,
            "wall_seconds": time.monotonic() - started,
        },
        "parse_us": parse,
        "forward_alone_ms": {rows: seconds * 1e3 for rows, seconds in forward_s.items()},
        "variants": rounds,
    }
    write_report(opts.output, results, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
