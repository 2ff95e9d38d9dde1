"""Serving throughput and latency under concurrent load: batching on/off, JSON/binary/gRPC, vs MLServer.

Usage::

    python benchmarks/serve_load.py            # everything, about 10 minutes
    python benchmarks/serve_load.py --quick    # 2 s points, no unpinned-BLAS run: about 5 minutes
    python benchmarks/serve_load.py --setup-mlserver   # only make MLServer's venv

Writes ``benchmarks/results/serve_load.json`` and ``benchmarks/results/serve_load.png``
(matplotlib: a benchmark dependency, not a runtime one).

What it does, all on this machine, client and servers on 127.0.0.1:

- Writes a temporary repository: ``mlp`` (zoo ``mlp`` 784-1024-1024-10, random
  weights, ``max_batch_size`` 64) and ``resnet18`` (zoo ``resnet18``, 64x64 RGB
  input instead of 224x224 so that a forward takes tens of milliseconds, not
  seconds, on two shared cores; 1000 classes, random weights, ``max_batch_size``
  32), each also as ``<name>-nobatch`` (same weights, ``"dynamic_batching": false``).
- Starts ``python -m app`` (and MLServer, below) and drives each endpoint in a
  closed loop: N concurrent clients, each on one kept-alive connection, send a
  batch-1 request as soon as their previous one is answered, for a fixed time
  after a warm-up, with N = 1, 8, 32 and 64. All settings are measured at one N
  before the next N, so the shared machine's load swings hit them alike.
  Reported per point: answered requests per second, p50/p95/p99 latency, the
  status codes, and for mininn-serve the mean rows per forward (``/metrics``).
- The client is a minimal asyncio HTTP/1.1 client (pre-encoded requests); ``--client
  httpx`` uses ``httpx.AsyncClient`` instead, which costs 1.5 ms of client CPU per
  request with one connection and 4-5 ms with 32 (measured here): on two cores it
  would measure itself rather than the servers.
- BLAS runs one thread per forward in both servers (``--blas-threads``): on two
  shared cores OpenBLAS's own threads made a batch-1 MLP forward 25x slower
  (57 ms against 2 ms, measured with the load average at 15). One extra series
  runs the MLP with the library default, as an out-of-the-box server would.
- gRPC (``--no-grpc`` skips it): the MLP's binary-tensor REST points are measured
  interleaved with the same batch-1 request over the V2 gRPC endpoint
  (``ModelInfer`` with ``raw_input_contents``, outputs in ``raw_output_contents``),
  batching on and off, and against MLServer's gRPC endpoint on the same weights
  when MLServer runs. The gRPC client is a thread per client with a channel of
  its own (its own HTTP/2 connection, like the HTTP clients' kept-alive
  connections), sending one pre-serialized message per call with grpc's
  synchronous stub and not decoding the answer (``grpc_closed_loop``); a status
  other than OK is recorded as the negative gRPC code number.
- Another series runs the MLP (JSON) on ``MININN_WORKERS=2`` processes, one per
  core here (``--no-workers`` skips it): each has its own event loop, inference
  threads and batch queue, so the unbatched requests are no longer bound to
  one interpreter.
- Serves the same MLP weights with Seldon's MLServer through
  ``benchmarks/mlserver_runtime/runtime.py`` (the same forward in NumPy), in its own
  venv ``benchmarks/mlserver_runtime/.venv`` (``mlserver``, ``uvloop<0.22``,
  ``numpy``; made on first use), with ``parallel_workers`` 1 (its default) and 0
  (in-process), each with and without adaptive batching (``max_batch_size`` 64,
  ``max_batch_time`` 5 ms), and drives it with the same client and JSON bodies
  (MLServer takes no binary tensors). Every server's answer is first checked
  against a float64 NumPy forward.
- Overload: a fresh mininn server (``MININN_MAX_QUEUE`` 16,
  ``MININN_REQUEST_TIMEOUT_MS`` 2000) on ``resnet18`` with binary tensors; the
  sustainable rate is measured with 16 closed-loop clients, then an open-loop
  client offers 4x that rate for 20 s whatever the answers, then the closed loop
  runs again at once. Reported: answers by status, their p99 and slowest latency
  against the timeout, the server's memory (RSS) every half second, and
  throughput before and right after.

The shared machine's load average is recorded with the results; absolute
figures move with it, the comparisons within one run much less.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout: import mininn and models from it
sys.path.insert(0, str(ROOT / "benchmarks"))
from _support import Body, binary_body, free_port, histogram_totals, json_body, mlp_weights  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RUNTIME_DIR = ROOT / "benchmarks" / "mlserver_runtime"
MLSERVER_VENV = RUNTIME_DIR / ".venv"
MLSERVER_PACKAGES = ["mlserver", "uvloop<0.22", "numpy"]  # uvloop 0.22 crashes MLServer's workers here

MLP = {"in_features": 784, "hidden_sizes": [1024, 1024], "out_features": 10}
RESNET = {"image_size": 64, "num_classes": 1000}
MODELS = {  # name -> (architecture, config, max_batch_size, input name, input shape without batch)
    "mlp": ("mlp", MLP, 64, "input", (784,)),
    "resnet18": ("resnet18", RESNET, 32, "image", (3, 64, 64)),
}
CONCURRENCY = (1, 8, 32, 64)
MLSERVER_BATCH_TIME_S = 0.005
CLIENT = "raw"  # or "httpx" (--client)
BLAS_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # --blas-threads
WORKERS = 2  # the multi-process series (--no-workers skips it): one process per core here
OVERLOAD = {"max_queue": 16, "timeout_ms": 2000, "factor": 4, "seconds": 20}
GRPC_INFER = "/inference.GRPCInferenceService/ModelInfer"


# ---- repository and bodies --------------------------------------------------------------------
def resnet_weights() -> dict[str, np.ndarray]:
    import mininn
    import models

    mininn.manual_seed(0)
    module = models.servable("resnet18", RESNET).module
    return {key: np.ascontiguousarray(t.numpy()) for key, t in module.state_dict().items()}


def write_repository(root: Path) -> dict[str, dict[str, np.ndarray]]:
    from safetensors.numpy import save_file

    weights = {"mlp": mlp_weights(MLP, seed=0), "resnet18": resnet_weights()}
    for name, (architecture, config, max_batch, _, _) in MODELS.items():
        for suffix, extra in (("", {}), ("-nobatch", {"dynamic_batching": False})):
            folder = root / f"{name}{suffix}"
            (folder / "1").mkdir(parents=True)
            spec = {"architecture": architecture, "config": config, "max_batch_size": max_batch, **extra}
            (folder / "model.json").write_text(json.dumps(spec))
            save_file(weights[name], str(folder / "1" / "weights.safetensors"))
    return weights


def sample(model: str) -> np.ndarray:
    shape = MODELS[model][4]
    return np.random.default_rng(1).standard_normal((1, *shape)).astype(np.float32)


def grpc_body(model: str, name: str, x: np.ndarray) -> Body:
    """A serialized ``ModelInferRequest`` for ``model``: one FP32 input in ``raw_input_contents``."""
    from app.grpc import inference_pb2

    request = inference_pb2.ModelInferRequest(model_name=model, raw_input_contents=[x.tobytes()])
    request.inputs.add(name=name, datatype="FP32", shape=x.shape)
    return Body(request.SerializeToString(), {})


def grpc_first_output(url: str, body: Body) -> np.ndarray:
    """The first output of one ``ModelInfer`` call (``url``: ``grpc://host:port``)."""
    from app.grpc import inference_pb2

    with grpc.insecure_channel(url.removeprefix("grpc://")) as channel:
        answer = channel.unary_unary(GRPC_INFER)(body.content, timeout=60)
    response = inference_pb2.ModelInferResponse.FromString(answer)
    return np.frombuffer(response.raw_output_contents[0], "<f4").reshape(response.outputs[0].shape)


def first_output(response: httpx.Response) -> np.ndarray:
    response.raise_for_status()
    length = response.headers.get("inference-header-content-length")
    if length is None:
        output = response.json()["outputs"][0]
        return np.asarray(output["data"], np.float32).reshape(output["shape"])
    output = json.loads(response.content[: int(length)])["outputs"][0]
    size = output["parameters"]["binary_data_size"]
    return np.frombuffer(response.content[int(length) : int(length) + size], "<f4").reshape(output["shape"])


# ---- servers ----------------------------------------------------------------------------------
def wait_ready(url: str, process: subprocess.Popen[bytes], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} was not ready within {timeout:.0f} s")


@contextmanager
def running(command: list[str], env: dict[str, str], ready: str, what: str, log: Path) -> Iterator[int]:
    """Start ``command``; yield its pid once ``ready`` answers 200; stop it on exit."""
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_ready(ready, process, what)
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def mininn_server(
    repository: Path,
    port: int,
    log: Path,
    blas: dict[str, str] | None = None,
    command: list[str] | None = None,
    **settings: Any,
) -> Any:
    """``python -m app`` (or ``command``) on ``repository``, with ``MININN_*`` ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MININN_")}
    env.update(BLAS_ENV if blas is None else blas)
    env = {k: v for k, v in env.items() if v != ""}
    env.update(
        MININN_HOST="127.0.0.1",
        MININN_PORT=str(port),
        MININN_MODEL_REPOSITORY=str(repository),
        MININN_SEED_REPOSITORY="false",
        MININN_LOG_LEVEL="warning",
        MININN_MAX_BATCH_SIZE="64",
        MININN_MAX_QUEUE="1024",
        MININN_GRPC_PORT="0",  # settings={"grpc_port": N} turns it on
    )
    env.update({f"MININN_{key.upper()}": str(value) for key, value in settings.items()})
    ready = f"http://127.0.0.1:{port}/v2/health/ready"
    return running(command or [sys.executable, "-m", "app"], env, ready, "mininn-serve", log)


def setup_mlserver() -> Path:
    """MLServer's own venv (made once); the path of its ``mlserver`` command."""
    command = MLSERVER_VENV / "bin" / "mlserver"
    if not command.exists():
        print(
            f"making {MLSERVER_VENV.relative_to(ROOT)} (pip install {' '.join(MLSERVER_PACKAGES)}) ...",
            flush=True,
        )
        subprocess.run([sys.executable, "-m", "venv", str(MLSERVER_VENV)], check=True)
        pip = [str(MLSERVER_VENV / "bin" / "python"), "-m", "pip", "install", "-q", *MLSERVER_PACKAGES]
        subprocess.run(pip, check=True)
    return command


def mlserver_version() -> str:
    python = MLSERVER_VENV / "bin" / "python"
    code = "import importlib.metadata as m; print(m.version('mlserver'))"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True).stdout.strip()


def mlserver_folder(
    root: Path, weights: dict[str, np.ndarray], workers: int, batching: bool
) -> tuple[Path, int, int]:
    """An MLServer model folder from ``mlserver_runtime/``'s settings: free ports, ``workers``, batching.

    Returns the folder, its HTTP port and its gRPC port.
    """
    folder = root / f"mlserver-w{workers}-{'b' if batching else 'n'}"
    (folder / "mlp").mkdir(parents=True)
    np.savez(folder / "mlp" / "weights.npz", **weights)
    settings = json.loads((RUNTIME_DIR / "settings.json").read_text())
    settings.update(
        http_port=free_port(), grpc_port=free_port(), metrics_port=free_port(), parallel_workers=workers
    )
    (folder / "settings.json").write_text(json.dumps(settings))
    model = json.loads((RUNTIME_DIR / "model-settings.json").read_text())
    if batching:
        model.update(max_batch_size=64, max_batch_time=MLSERVER_BATCH_TIME_S)
    (folder / "mlp" / "model-settings.json").write_text(json.dumps(model))
    return folder, settings["http_port"], settings["grpc_port"]


def mlserver(command: Path, folder: Path, port: int, log: Path) -> Any:
    env = dict(os.environ, PYTHONPATH=str(RUNTIME_DIR), **BLAS_ENV)
    env.pop("VIRTUAL_ENV", None)
    ready = f"http://127.0.0.1:{port}/v2/models/mlp/ready"
    return running([str(command), "start", str(folder)], env, ready, "MLServer", log)


# ---- load -------------------------------------------------------------------------------------
@dataclass
class Point:
    server: str
    model: str
    batching: bool
    protocol: str
    concurrency: int
    seconds: float
    answered: int = 0
    throughput: float = 0.0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)
    rows_per_forward: float | None = None


class Connection:
    """One kept-alive HTTP/1.1 connection that sends a pre-encoded request and reads the answer.

    A few microseconds of client CPU per request, where ``httpx.AsyncClient`` spends
    1.5 ms with one connection and 4-5 ms with 32 (measured here): on two shared
    cores an httpx client would measure itself, not the server.
    """

    def __init__(self, url: str, body: Body) -> None:
        parsed = httpx.URL(url)
        self.host, self.port = parsed.host, parsed.port
        head = [f"POST {parsed.raw_path.decode()} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        head += [f"{key}: {value}" for key, value in body.headers.items()]
        head.append(f"Content-Length: {len(body.content)}")
        self.request = ("\r\n".join(head) + "\r\n\r\n").encode() + body.content
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def send(self) -> int:
        """The status of one round trip (on a new connection if the server closed the idle one)."""
        reused = self.writer is not None
        try:
            return await self._round_trip()
        except (ConnectionError, asyncio.IncompleteReadError):
            self.close()
            if not reused:
                raise
            return await self._round_trip()  # the server's keep-alive timeout closed it

    async def _round_trip(self) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(self.request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        length, close = 0, False
        for line in lines[1:]:
            key, _, value = line.partition(b":")
            key = key.strip().lower()
            if key == b"content-length":
                length = int(value)
            elif key == b"connection" and value.strip().lower() == b"close":
                close = True
        await self.reader.readexactly(length)
        if close:
            self.close()
        return int(lines[0].split(b" ", 2)[1])

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def grpc_closed_loop(
    url: str, body: Body, clients: int, warmup: float, seconds: float
) -> tuple[list[float], Counter]:
    """:func:`closed_loop` over gRPC (``url``: ``grpc://host:port``): a thread per client.

    Each client has a channel of its own (its own HTTP/2 connection) and makes
    blocking calls with grpc's synchronous stub, sending one pre-serialized
    message and not decoding the answer: about 170 us of client CPU per call
    here, where ``grpc.aio``'s client spent about 300. A status other than OK is
    recorded as minus its gRPC code number.
    """
    start = time.perf_counter()
    begin, end = start + warmup, start + warmup + seconds
    latencies: list[float] = []
    statuses: Counter = Counter()
    lock = threading.Lock()
    options = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", -1)]

    def one_client() -> None:
        mine: list[float] = []
        codes: Counter = Counter()
        with grpc.insecure_channel(url.removeprefix("grpc://"), options=options) as channel:
            call = channel.unary_unary(GRPC_INFER)  # bytes in, bytes out
            while (sent := time.perf_counter()) < end:
                try:
                    call(body.content, timeout=120)
                    status = 200
                except grpc.RpcError as exc:
                    status = -exc.code().value[0]
                done = time.perf_counter()
                if begin <= done <= end:
                    mine.append(done - sent)
                    codes[status] += 1
        with lock:
            latencies.extend(mine)
            statuses.update(codes)

    threads = [threading.Thread(target=one_client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, statuses


async def closed_loop(
    url: str, body: Body, clients: int, warmup: float, seconds: float, client: str = "raw"
) -> tuple[list[float], Counter]:
    """Latencies (s) and statuses of the answers that arrived in the measured window."""
    if url.startswith("grpc://"):
        return await asyncio.to_thread(grpc_closed_loop, url, body, clients, warmup, seconds)
    latencies: list[float] = []
    statuses: Counter = Counter()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=120) as pool:
        start = time.perf_counter()
        begin, end = start + warmup, start + warmup + seconds

        async def one_client() -> None:
            connection = Connection(url, body)
            try:
                while (sent := time.perf_counter()) < end:
                    if client == "raw":
                        status = await connection.send()
                    else:
                        status = (
                            await pool.post(url, content=body.content, headers=body.headers)
                        ).status_code
                    done = time.perf_counter()
                    if begin <= done <= end:
                        latencies.append(done - sent)
                        statuses[status] += 1
            finally:
                connection.close()

        await asyncio.gather(*(one_client() for _ in range(clients)))
    return latencies, statuses


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q) * 1e3) if values else float("nan")


def batch_rows(base: str, model: str) -> tuple[float, float]:
    return histogram_totals(base, model, "mininn_batch_size")["mininn_batch_size"]


@dataclass
class Samples:
    """What the rounds of one point collected."""

    latencies: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    rows: float = 0.0
    forwards: float = 0.0


def run_segment(
    samples: Samples,
    url: str,
    body: Body,
    clients: int,
    warmup: float,
    seconds: float,
    metrics: str | None,
    model: str,
) -> None:
    """One measured stretch of closed-loop load, added to ``samples``."""
    before = batch_rows(metrics, model) if metrics else (0.0, 0.0)
    latencies, statuses = asyncio.run(closed_loop(url, body, clients, warmup, seconds, CLIENT))
    after = batch_rows(metrics, model) if metrics else (0.0, 0.0)
    samples.latencies += latencies
    samples.statuses.update(statuses)
    samples.seconds += seconds
    samples.rows += after[0] - before[0]
    samples.forwards += after[1] - before[1]


def summarize(point: Point, samples: Samples) -> Point:
    point.seconds = samples.seconds
    point.answered = samples.statuses.get(200, 0)
    point.throughput = point.answered / samples.seconds
    point.p50_ms, point.p95_ms, point.p99_ms = (percentile(samples.latencies, q) for q in (50, 95, 99))
    point.statuses = {str(k): v for k, v in sorted(samples.statuses.items())}
    point.rows_per_forward = samples.rows / samples.forwards if samples.forwards else None
    batch = f", {point.rows_per_forward:.1f} rows/forward" if point.rows_per_forward else ""
    print(
        f"  {point.server:28s} {point.model:9s} {'on ' if point.batching else 'off'} {point.protocol:6s} "
        f"c={point.concurrency:<3d} {point.throughput:8.1f} req/s  p50 {point.p50_ms:7.1f} ms  "
        f"p99 {point.p99_ms:7.1f} ms{batch}  {point.statuses}",
        flush=True,
    )
    return point


def measure(point: Point, url: str, body: Body, warmup: float) -> Point:
    """One point in one stretch (the overload section's before and after)."""
    samples = Samples()
    run_segment(samples, url, body, point.concurrency, warmup, point.seconds, None, point.model)
    return summarize(point, samples)


@dataclass(frozen=True)
class Target:
    """One server endpoint under one setting, driven at every concurrency."""

    server: str
    model: str
    batching: bool
    protocol: str
    url: str
    body: Body
    metrics: str | None = None  # a mininn base URL: rows per forward come from its /metrics


def mininn_targets(
    base: str, model: str, protocols: tuple[str, ...], server: str = "mininn-serve"
) -> list[Target]:
    encoders = {"json": json_body, "binary": binary_body}
    return [
        Target(
            server,
            model,
            batching,
            protocol,
            f"{base}/v2/models/{model if batching else model + '-nobatch'}/infer",
            encoders[protocol](MODELS[model][3], sample(model)),
            base,
        )
        for protocol in protocols
        for batching in (True, False)
    ]


def grpc_targets(
    base: str, model: str, metrics: str | None = None, server: str = "mininn-serve"
) -> list[Target]:
    """``model`` over gRPC (``base``: ``grpc://host:port``), batching on and off.

    ``metrics``: the server's HTTP base URL, whose ``/metrics`` give the rows per forward.
    """
    return [
        Target(
            server,
            model,
            batching,
            "grpc",
            base,
            grpc_body(model if batching else model + "-nobatch", MODELS[model][3], sample(model)),
            metrics,
        )
        for batching in (True, False)
    ]


def check(targets: list[Target], reference: np.ndarray | None) -> bool:
    """Whether every target answers ``reference`` (the first answer when None) for its sample."""
    same = True
    for target in targets:
        if target.protocol == "grpc":
            output = grpc_first_output(target.url, target.body)
        else:
            response = httpx.post(
                target.url, content=target.body.content, headers=target.body.headers, timeout=60
            )
            output = first_output(response)
        reference = output if reference is None else reference
        same &= bool(np.allclose(output, reference, rtol=1e-4, atol=1e-4))
    return same


def sweep(targets: list[Target], opts: argparse.Namespace) -> list[Point]:
    """Every target at each concurrency, in interleaved rounds, so that the machine's load hits them alike.

    A point pools its rounds: throughput over their total time, percentiles over all their answers.
    """
    points = []
    for clients in opts.concurrency:
        samples = [Samples() for _ in targets]
        for _ in range(opts.rounds):
            for t, collected in zip(targets, samples):
                run_segment(collected, t.url, t.body, clients, opts.warmup, opts.seconds, t.metrics, t.model)
        for t, collected in zip(targets, samples):
            points.append(
                summarize(Point(t.server, t.model, t.batching, t.protocol, clients, 0.0), collected)
            )
    return points


def numpy_mlp(weights: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The MLP's forward in float64 NumPy: the reference both servers are checked against."""
    layers = sorted({int(key.split(".")[0]) for key in weights})
    h = x.astype(np.float64)
    for position, index in enumerate(layers):
        h = h @ weights[f"{index}.weight"].T.astype(np.float64) + weights[f"{index}.bias"]
        h = np.maximum(h, 0) if position < len(layers) - 1 else h
    return h


def mlserver_targets(stack: ExitStack, work: Path, weights: dict[str, np.ndarray]) -> list[Target]:
    """Start MLServer with workers 1 and 0, adaptive batching off and on; their targets."""
    command = setup_mlserver()
    body = json_body("input", sample("mlp"))
    over_grpc = grpc_body("mlp", "input", sample("mlp"))
    targets = []
    for workers in (1, 0):
        for batching in (False, True):
            folder, port, grpc_port = mlserver_folder(work, weights, workers, batching)
            stack.enter_context(mlserver(command, folder, port, work / f"{folder.name}.log"))
            url = f"http://127.0.0.1:{port}/v2/models/mlp/infer"
            server = f"mlserver workers={workers}"
            targets.append(Target(server, "mlp", batching, "json", url, body))
            grpc_url = f"grpc://127.0.0.1:{grpc_port}"
            targets.append(Target(server, "mlp", batching, "grpc", grpc_url, over_grpc))
    return targets


def run_sweeps(
    work: Path, weights: dict[str, dict[str, np.ndarray]], opts: argparse.Namespace
) -> dict[str, Any]:
    results: dict[str, Any] = {"points": []}
    port, grpc_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    with ExitStack() as stack:
        log = work / "mininn.log"
        stack.enter_context(mininn_server(work / "repository", port, log, grpc_port=grpc_port))
        if "mlp" in opts.models:
            ours = mininn_targets(base, "mlp", ("json",))
            peers = [] if opts.no_mlserver else mlserver_targets(stack, work, weights["mlp"])
            peers_json = [t for t in peers if t.protocol == "json"]
            expected = numpy_mlp(weights["mlp"], sample("mlp"))
            results["outputs_match"] = {"mlp": check(ours + peers_json, expected)}
            print("mlp, JSON: mininn-serve and MLServer (same weights), interleaved", flush=True)
            results["points"] += sweep(ours + peers_json, opts)
            binary = mininn_targets(base, "mlp", ("binary",))
            results["outputs_match"]["mlp binary"] = check(binary, expected)
            if opts.grpc:
                over_grpc = grpc_targets(f"grpc://127.0.0.1:{grpc_port}", "mlp", base)
                over_grpc += [t for t in peers if t.protocol == "grpc"]
                results["outputs_match"]["mlp grpc"] = check(over_grpc, expected)
                binary += over_grpc
            also = " and gRPC raw contents" if opts.grpc else ""
            print(f"mlp, binary tensors over REST{also} (MLServer takes no binary REST)", flush=True)
            results["points"] += sweep(binary, opts)
            if peers:
                results["mlserver"] = {
                    "version": mlserver_version(),
                    "max_batch_size": 64,
                    "max_batch_time_s": MLSERVER_BATCH_TIME_S,
                }
        if "resnet18" in opts.models:
            targets = mininn_targets(base, "resnet18", ("json", "binary"))
            results.setdefault("outputs_match", {})["resnet18"] = check(targets, None)
            print("resnet18 (64x64)", flush=True)
            results["points"] += sweep(targets, opts)
    if "mlp" in opts.models and opts.default_blas:
        results["points"] += run_default_blas(work, opts)
    if "mlp" in opts.models and opts.workers:
        results["points"] += run_workers(work, opts)
    return results


def run_workers(work: Path, opts: argparse.Namespace) -> list[Point]:
    """The mlp (JSON) on ``MININN_WORKERS`` processes, each with its own event loop and batch queue.

    Rows per forward are not reported: each worker has its own ``/metrics``.
    """
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = f"mininn-serve, {WORKERS} workers"
    print(f"mlp, JSON, {WORKERS} worker processes", flush=True)
    with mininn_server(work / "repository", port, work / "mininn-workers.log", workers=WORKERS):
        targets = [replace(t, metrics=None) for t in mininn_targets(base, "mlp", ("json",), server)]
        wait_for_every_worker(targets)
        return sweep(targets, opts)


def wait_for_every_worker(targets: list[Target], timeout_s: float = 60.0) -> None:
    """Until 20 requests in a row to each target answer 200: /v2/health/ready reached only one worker."""
    deadline = time.monotonic() + timeout_s
    for target in targets:
        answered = 0
        while answered < 20:
            response = httpx.post(target.url, content=target.body.content, headers=target.body.headers)
            answered = answered + 1 if response.status_code == 200 else 0
            if time.monotonic() > deadline:
                status = response.status_code
                raise RuntimeError(f"{target.url} still answers {status} after {timeout_s:.0f} s")


def run_default_blas(work: Path, opts: argparse.Namespace) -> list[Point]:
    """The mlp (JSON) with the BLAS library's default threads per forward (no *_NUM_THREADS)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    unpinned = {key: os.environ.get(key, "") for key in BLAS_ENV}
    print("mlp, JSON, BLAS threads left at the library default", flush=True)
    with mininn_server(work / "repository", port, work / "mininn-blas.log", blas=unpinned):
        return sweep(mininn_targets(base, "mlp", ("json",), "mininn-serve, default BLAS threads"), opts)


# ---- overload ---------------------------------------------------------------------------------
def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def open_loop(url: str, body: Body, rate: float, seconds: float, pid: int) -> dict[str, Any]:
    """Send ``rate`` requests per second for ``seconds`` whatever the answers; record them all.

    Each request in flight holds one kept-alive connection; an idle one is reused.
    """
    records: list[tuple[float, float, int]] = []  # (sent, latency, status)
    memory: list[tuple[float, float]] = []
    idle: list[Connection] = []
    start = time.perf_counter()

    async def one(sent: float) -> None:
        connection = idle.pop() if idle else Connection(url, body)
        try:
            status = await connection.send()
            idle.append(connection)
        except (OSError, asyncio.IncompleteReadError):
            status = 0
            connection.close()
        records.append((sent - start, time.perf_counter() - sent, status))

    async def sample_memory() -> None:
        while time.perf_counter() - start < seconds + 2:
            memory.append((time.perf_counter() - start, rss_mib(pid)))
            await asyncio.sleep(0.5)

    sampler = asyncio.ensure_future(sample_memory())
    tasks = []
    for i in range(int(rate * seconds)):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(time.perf_counter())))
    sent_seconds = time.perf_counter() - start
    await asyncio.gather(*tasks)
    await sampler
    for connection in idle:
        connection.close()
    return {"records": records, "memory": memory, "sent_seconds": sent_seconds, "connections": len(idle)}


def run_overload(repository: Path, work: Path, opts: argparse.Namespace) -> dict[str, Any]:
    """4x the sustainable rate on a server with a short queue and timeout; then the closed loop again."""
    model = "resnet18"
    body = binary_body(MODELS[model][3], sample(model))
    port = free_port()
    url = f"http://127.0.0.1:{port}/v2/models/{model}/infer"
    settings = {"max_queue": OVERLOAD["max_queue"], "request_timeout_ms": OVERLOAD["timeout_ms"]}
    clients = OVERLOAD["max_queue"]
    with mininn_server(repository, port, work / "overload.log", **settings) as pid:
        seconds = opts.seconds * opts.rounds
        before = measure(
            Point("mininn-serve", model, True, "binary", clients, seconds), url, body, opts.warmup
        )
        rate = OVERLOAD["factor"] * before.throughput
        print(f"  overload: {rate:.1f} req/s offered for {opts.overload_seconds:.0f} s", flush=True)
        load = asyncio.run(open_loop(url, body, rate, opts.overload_seconds, pid))
        after = measure(Point("mininn-serve", model, True, "binary", clients, seconds), url, body, 0.0)
    records = load["records"]
    by_status = Counter(status for _, _, status in records)
    slowest = {str(s): max(lat for _, lat, st in records if st == s) * 1e3 for s in by_status}
    latency = {str(s): percentile([lat for _, lat, st in records if st == s], 99) for s in by_status}
    memory = [m for _, m in load["memory"]]
    return {
        "model": model,
        "settings": {**settings, "max_batch_size": MODELS[model][2]},
        "sustainable_rps": before.throughput,
        "offered_rps": rate,
        "achieved_send_rps": len(records) / load["sent_seconds"],
        "seconds": opts.overload_seconds,
        "answers": {str(k): v for k, v in sorted(by_status.items())},
        "p99_ms": latency,
        "slowest_ms": slowest,
        "timeout_ms": OVERLOAD["timeout_ms"],
        "factor": OVERLOAD["factor"],
        "connections": load["connections"],
        "rss_mib": {"first": memory[0], "min": min(memory), "max": max(memory), "last": memory[-1]},
        "before": asdict(before),
        "after": asdict(after),
        "timeline": [[round(t, 3), round(lat * 1e3, 2), status] for t, lat, status in records],
        "memory": [[round(t, 2), round(m, 1)] for t, m in load["memory"]],
    }


# ---- summary and plot -------------------------------------------------------------------------
def find(points: list[Point], **match: Any) -> Point | None:
    for point in points:
        if all(getattr(point, key) == value for key, value in match.items()):
            return point
    return None


def targets(points: list[Point]) -> dict[str, Any]:
    on = find(points, server="mininn-serve", model="mlp", batching=True, protocol="json", concurrency=32)
    off = find(points, server="mininn-serve", model="mlp", batching=False, protocol="json", concurrency=32)
    summary: dict[str, Any] = {}
    if on and off and off.throughput:
        summary["mlp_json_c32_batching_speedup"] = on.throughput / off.throughput
        summary["mlp_json_c32_batching_p99_ms"] = on.p99_ms
    server = f"mininn-serve, {WORKERS} workers"
    on_w = find(points, server=server, model="mlp", batching=True, protocol="json", concurrency=32)
    off_w = find(points, server=server, model="mlp", batching=False, protocol="json", concurrency=32)
    if on_w and off_w and off_w.throughput:
        summary[f"mlp_json_c32_{WORKERS}_workers_batching_speedup"] = on_w.throughput / off_w.throughput
    for clients in CONCURRENCY:
        ours = {"server": "mininn-serve", "model": "mlp", "batching": True, "concurrency": clients}
        rest, over_grpc = find(points, protocol="binary", **ours), find(points, protocol="grpc", **ours)
        if rest and over_grpc and rest.throughput:
            summary[f"mlp_c{clients}_grpc_vs_binary_rest"] = {
                "grpc_rps": over_grpc.throughput,
                "binary_rest_rps": rest.throughput,
                "grpc_over_rest": over_grpc.throughput / rest.throughput,
                "grpc_p99_ms": over_grpc.p99_ms,
                "binary_rest_p99_ms": rest.p99_ms,
            }
        theirs = [
            p
            for p in points
            if p.server.startswith("mlserver") and p.protocol == "grpc" and p.concurrency == clients
        ]
        if over_grpc and theirs:
            best = max(theirs, key=lambda p: p.throughput)
            summary[f"mlp_c{clients}_grpc_best_mlserver_grpc"] = {
                "server": best.server,
                "batching": best.batching,
                "throughput": best.throughput,
                "p99_ms": best.p99_ms,
                "ours_over_theirs": over_grpc.throughput / best.throughput if best.throughput else None,
            }
    peers = [
        p for p in points if p.server.startswith("mlserver") and p.protocol == "json" and p.concurrency == 32
    ]
    if on and peers:
        best = max(peers, key=lambda p: p.throughput)
        summary["mlp_json_c32_best_mlserver"] = {
            "server": best.server,
            "batching": best.batching,
            "throughput": best.throughput,
            "p99_ms": best.p99_ms,
            "ours_over_theirs": on.throughput / best.throughput if best.throughput else None,
        }
    return summary


# ---- main -------------------------------------------------------------------------------------
def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 s points, 8 s overload, no unpinned-BLAS run")
    parser.add_argument("--seconds", type=float, default=2.5, help="measured seconds per point and round")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds per point")
    parser.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds before each round")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--concurrency", nargs="+", type=int, default=list(CONCURRENCY))
    parser.add_argument("--no-mlserver", action="store_true", help="skip the MLServer comparison")
    parser.add_argument("--no-overload", action="store_true", help="skip the overload section")
    parser.add_argument("--no-grpc", dest="grpc", action="store_false", help="skip the gRPC points")
    parser.add_argument(
        "--no-default-blas", dest="default_blas", action="store_false", help="skip the unpinned-BLAS mlp run"
    )
    parser.add_argument(
        "--no-workers", dest="workers", action="store_false", help=f"skip the {WORKERS}-worker mlp run"
    )
    parser.add_argument("--overload-seconds", type=float, default=float(OVERLOAD["seconds"]))
    parser.add_argument("--setup-mlserver", action="store_true", help="only make MLServer's venv, then exit")
    parser.add_argument("--replot", action="store_true", help="only redraw the PNG from the JSON")
    parser.add_argument(
        "--client", choices=["raw", "httpx"], default="raw", help="raw asyncio HTTP/1.1 (default) or httpx"
    )
    parser.add_argument("--blas-threads", type=int, default=1, help="BLAS threads per forward, both servers")
    parser.add_argument("--output", type=Path, default=RESULTS / "serve_load.json")
    opts = parser.parse_args(argv)
    global CLIENT
    CLIENT = opts.client
    BLAS_ENV.update({key: str(opts.blas_threads) for key in BLAS_ENV})
    if opts.quick:
        opts.seconds, opts.rounds, opts.overload_seconds, opts.default_blas = 2.0, 1, 8.0, False
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    from serve_load_plot import plot

    if opts.replot:
        plot(json.loads(opts.output.read_text()), opts.output.with_suffix(".png"))
        return 0
    if opts.setup_mlserver:
        print(setup_mlserver())
        return 0
    started = time.monotonic()
    machine = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "load_average_before": os.getloadavg()[0],
    }
    work = Path(tempfile.mkdtemp(prefix="serve_load-"))
    try:
        weights = write_repository(work / "repository")
        results: dict[str, Any] = {"machine": machine, "run": vars(opts) | {"output": str(opts.output)}}
        swept = run_sweeps(work, weights, opts)
        points = swept.pop("points")
        results.update(swept)
        if not opts.no_overload and "resnet18" in opts.models:
            print("overload", flush=True)
            results["overload"] = run_overload(work / "repository", work, opts)
    except BaseException:
        print(f"logs kept in {work}", file=sys.stderr)
        raise
    shutil.rmtree(work, ignore_errors=True)
    machine["load_average_after"] = os.getloadavg()[0]
    results["points"] = [asdict(p) for p in points]
    results["targets"] = targets(points)
    results["run"]["wall_seconds"] = time.monotonic() - started
    opts.output.parent.mkdir(parents=True, exist_ok=True)
    opts.output.write_text(json.dumps(results, indent=1, default=str) + "\n")
    plot(results, opts.output.with_suffix(".png"))
    print(json.dumps(results["targets"], indent=1))
    print(
        f"wrote {opts.output} and {opts.output.with_suffix('.png')} in {results['run']['wall_seconds']:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
