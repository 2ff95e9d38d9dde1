"""Soak: mixed traffic from several clients against a multi-worker server, one worker SIGKILLed midway.

Usage::

    python benchmarks/soak.py                      # 10 minutes, 2 workers, 4 clients
    python benchmarks/soak.py --seconds 60         # the CI version (tests/hardening/test_soak.py)

Writes ``benchmarks/results/soak.json`` (``--out``) and prints a summary.

What it does, all on 127.0.0.1:

- Writes a temporary repository with the zoo ``mlp`` (4 -> 8 -> 3, seeded
  weights) and starts ``python -m app`` with ``MININN_WORKERS`` workers and
  ``MININN_API_KEY`` set.
- ``--clients`` threads, each on its own kept-alive ``httpx`` connection, send
  a mix until the time is up: JSON inference, binary inference, activation
  captures (``/activations``, and ``/infer`` with the ``capture`` parameter),
  parameter listings, and state-dict uploads (``PUT .../state_dict``, raw
  safetensors bytes, ``Authorization: Bearer``) from one uploader thread every
  ``--upload-every`` seconds. Each answer is checked (inference outputs against
  a NumPy forward of the version the response names).
- At ``--kill-at`` of the run it SIGKILLs one worker, found as a child of the
  uvicorn master through ``/proc``; uvicorn's supervisor starts a replacement.
  The kill window runs from the kill until one second after the last failed
  request, once a replacement worker is up and three seconds have passed
  without a failure; it may last at most 30 s.
- It samples every worker's resident memory (``VmRSS``) once a second.

Afterwards it checks: every upload that got a 2xx is on disk and loads with the
weights sent; every worker serves the newest acknowledged version (inference
over fresh connections names it and matches its forward); each worker that
started at least ``STARTUP_S`` before the second half and lived through it grew
its RSS by less than 10% over it (a replacement still importing and loading its
models at the half is growing, not leaking); no request failed outside the kill
window.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from _support import free_port  # noqa: E402

API_KEY = "soak-key"
MLP_CONFIG = {"in_features": 4, "hidden_sizes": [8], "out_features": 3}
MAX_RECOVERY_S = 30.0  # the longest the kill window may last
STARTUP_S = 10.0  # a worker's start-up (imports, model loads) before its RSS growth counts
SHAPES = {"0.weight": (8, 4), "0.bias": (8,), "3.weight": (3, 8), "3.bias": (3,)}


# ---- weights and the reference forward ---------------------------------------------------------------
def weights(seed: int) -> dict[str, np.ndarray]:
    """The ``mlp`` state dict drawn from ``seed`` (version ``n`` of the soak uploads seed ``n``)."""
    rng = np.random.default_rng(seed)
    return {key: rng.standard_normal(shape).astype(np.float32) for key, shape in SHAPES.items()}


def forward(state: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The ``mlp`` forward in NumPy (float64)."""
    h = np.maximum(x.astype(np.float64) @ state["0.weight"].T.astype(np.float64) + state["0.bias"], 0)
    return h @ state["3.weight"].T.astype(np.float64) + state["3.bias"]


def safetensors_bytes(state: dict[str, np.ndarray]) -> bytes:
    """``state`` as the bytes of a safetensors file."""
    from safetensors.numpy import save

    return save(state)


# ---- the server ----------------------------------------------------------------------------------------

def write_repository(root: Path) -> None:
    folder = root / "mlp"
    (folder / "1").mkdir(parents=True)
    (folder / "model.json").write_text(json.dumps({"architecture": "mlp", "config": MLP_CONFIG}))
    (folder / "1" / "weights.safetensors").write_bytes(safetensors_bytes(weights(1)))


def start_server(root: Path, port: int, workers: int, log: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MININN_")}
    env.update(
        MININN_HOST="127.0.0.1",
        MININN_PORT=str(port),
        MININN_MODEL_REPOSITORY=str(root),
        MININN_SEED_REPOSITORY="false",
        MININN_WORKERS=str(workers),
        MININN_API_KEY=API_KEY,
        MININN_LOG_LEVEL="warning",
        MININN_INFERENCE_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
    )
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "app"], cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )


def children(pid: int) -> list[int]:
    """The worker processes of the uvicorn master ``pid`` (its children running the app)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"resource_tracker" not in cmdline:
            found.append(int(entry.name))
    return sorted(found)


def rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def wait_ready(base: str, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            if httpx.get(f"{base}/v2/health/ready", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError("the server did not get ready")


# ---- traffic -----------------------------------------------------------------------------------------------
@dataclass
class Record:
    """One request: when, what, and how it ended."""

    started: float
    ended: float
    op: str
    status: int  # 0: no response (connection error)
    error: str = ""


@dataclass
class Upload:
    seed: int
    version: int
    acknowledged: float


@dataclass
class Shared:
    """What the client threads share: the records, the uploads, the acknowledged versions."""

    base: str
    stop_at: float
    records: list[Record] = field(default_factory=list)
    uploads: list[Upload] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    known: dict[int, dict[str, np.ndarray]] = field(default_factory=lambda: {1: weights(1)})
    pending: list[dict[str, np.ndarray]] = field(default_factory=list)  # uploads sent, not yet answered
    served_before_ack: int = 0  # answers from a version whose upload had not been acknowledged yet

    def add(self, record: Record) -> None:
        with self.lock:
            self.records.append(record)


def _infer_json(client: httpx.Client, rng: random.Random) -> tuple[httpx.Response, np.ndarray]:
    x = np.array([[rng.uniform(-2, 2) for _ in range(4)] for _ in range(rng.randint(1, 4))], np.float32)
    body = {
        "inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32", "data": x.ravel().tolist()}]
    }
    return client.post("/v2/models/mlp/infer", json=body), x


def _infer_binary(client: httpx.Client, rng: random.Random) -> tuple[httpx.Response, np.ndarray]:
    x = np.array([[rng.uniform(-2, 2) for _ in range(4)]], np.float32)
    header = json.dumps(
        {
            "inputs": [
                {"name": "input", "shape": [1, 4], "datatype": "FP32", "parameters": {"binary_data_size": 16}}
            ],
            "outputs": [{"name": "output", "parameters": {"binary_data": True}}],
        }
    ).encode()
    response = client.post(
        "/v2/models/mlp/infer",
        content=header + x.tobytes(),
        headers={"Inference-Header-Content-Length": str(len(header))},
    )
    return response, x


def _outputs(response: httpx.Response) -> tuple[int, np.ndarray]:
    length = response.headers.get("inference-header-content-length")
    if length is None:
        document = response.json()
        return int(document["model_version"]), np.asarray(document["outputs"][0]["data"], np.float32)
    document = json.loads(response.content[: int(length)])
    tail = response.content[int(length) :]
    return int(document["model_version"]), np.frombuffer(tail, np.float32)


def _check_inference(shared: Shared, response: httpx.Response, x: np.ndarray) -> str:
    version, out = _outputs(response)
    with shared.lock:
        state = shared.known.get(version)
        candidates = [state] if state is not None else list(shared.pending)
    # a new version serves before its upload's answer reaches the uploader: it is one of the pending
    if not any(np.allclose(out, forward(c, x).ravel(), rtol=1e-4, atol=1e-4) for c in candidates):
        return f"version {version} answered with outputs of no version sent"
    if state is None:
        with shared.lock:
            shared.served_before_ack += 1
    return ""


def client_loop(shared: Shared, index: int) -> None:
    rng = random.Random(index)
    ops = ["infer-json"] * 40 + ["infer-binary"] * 20 + ["activations"] * 15 + ["capture"] * 10
    ops += ["parameters"] * 15
    client = httpx.Client(base_url=shared.base, timeout=30)
    try:
        while time.monotonic() < shared.stop_at:
            op = rng.choice(ops)
            started = time.monotonic()
            try:
                status, error = _one(client, shared, op, rng)
            except httpx.HTTPError as exc:
                status, error = 0, f"{type(exc).__name__}: {exc}"
                client.close()
                client = httpx.Client(base_url=shared.base, timeout=30)
            shared.add(Record(started, time.monotonic(), op, status, error))
            time.sleep(rng.uniform(0.002, 0.02))
    finally:
        client.close()


def _one(client: httpx.Client, shared: Shared, op: str, rng: random.Random) -> tuple[int, str]:
    if op in ("infer-json", "infer-binary"):
        response, x = (_infer_json if op == "infer-json" else _infer_binary)(client, rng)
        if response.status_code != 200:
            return response.status_code, response.text[:200]
        return 200, _check_inference(shared, response, x)
    if op == "activations":
        body = {
            "inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [0.5, -1, 2, 0.25]}],
            "modules": ["0", "3"],
            "reduce": rng.choice(["none", "stats"]),
        }
        response = client.post("/v2/models/mlp/activations", json=body)
    elif op == "capture":
        body = {
            "inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [0.5, -1, 2, 0.25]}],
            "parameters": {"capture": "0,1"},
        }
        response = client.post("/v2/models/mlp/infer", json=body)
    else:
        response = client.get("/v2/models/mlp/parameters", params={"stats": rng.choice(["true", "false"])})
    if response.status_code != 200:
        return response.status_code, response.text[:200]
    return 200, ""


def upload_loop(shared: Shared, every: float) -> None:
    seed = 1000
    client = httpx.Client(base_url=shared.base, timeout=60, headers={"Authorization": f"Bearer {API_KEY}"})
    try:
        while time.monotonic() + every < shared.stop_at:
            time.sleep(every)
            seed += 1
            state = weights(seed)
            with shared.lock:
                shared.pending.append(state)
            started = time.monotonic()
            try:
                response = client.put("/v2/models/mlp/state_dict", content=safetensors_bytes(state))
                status, error = (
                    response.status_code,
                    "" if response.status_code == 201 else response.text[:200],
                )
            except httpx.HTTPError as exc:
                status, error = 0, f"{type(exc).__name__}: {exc}"
                client.close()
                client = httpx.Client(
                    base_url=shared.base, timeout=60, headers={"Authorization": f"Bearer {API_KEY}"}
                )
            with shared.lock:
                if status == 201:
                    version = int(response.json()["model_version"])
                    shared.known[version] = state
                    shared.uploads.append(Upload(seed, version, time.monotonic()))
                shared.pending = [p for p in shared.pending if p is not state]  # by identity
            shared.add(Record(started, time.monotonic(), "upload", status, error))
    finally:
        client.close()


# ---- the run ---------------------------------------------------------------------------------
@dataclass
class Report:
    """What a soak run measured and whether each promise held."""

    seconds: float
    workers: int
    clients: int
    requests: int = 0
    by_op: dict[str, int] = field(default_factory=dict)
    uploads_acknowledged: int = 0
    uploads_found: int = 0
    newest_acknowledged: int = 0
    answers_before_ack: int = 0
    served_versions: list[int] = field(default_factory=list)
    killed_pid: int = 0
    replacement_pid: int = 0
    kill_at_s: float = 0.0
    kill_window_s: list[float] = field(default_factory=list)
    errors_in_window: int = 0
    errors_outside_window: int = 0
    error_samples: list[str] = field(default_factory=list)
    worker_rss: dict[str, dict[str, float]] = field(default_factory=dict)
    rss_growth_second_half: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def run(seconds: float, workers: int, clients: int, upload_every: float, kill_at: float) -> Report:
    """One soak run; the :class:`Report` lists every promise that did not hold in ``failures``."""
    report = Report(seconds=seconds, workers=workers, clients=clients)
    with tempfile.TemporaryDirectory(prefix="mininn-soak-") as folder:
        root = Path(folder) / "model_repository"
        write_repository(root)
        port = free_port()
        server = start_server(root, port, workers, Path(folder) / "server.log")
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(base, server)
            _settle_workers(server.pid, workers)
            _every_worker_ready(base, workers)
            _drive(report, server, base, seconds, clients, upload_every, kill_at)
            _check_after(report, base, root)
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            log = (Path(folder) / "server.log").read_text(errors="replace")
            if "Traceback" in log:
                report.failures.append("the server log has a traceback:\n" + log[-3000:])
    return report


def _settle_workers(master: int, workers: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(children(master)) < workers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the master has {children(master)} workers, expected {workers}")
        time.sleep(0.1)


def _every_worker_ready(base: str, workers: int, timeout: float = 120) -> None:
    """Wait until ``20 * workers`` readiness checks in a row, each on a new connection, answer 200.

    A worker answers as soon as it has started, and loads its models after (503 "not ready:
    loading" meanwhile); the kernel hands each new connection to one of the workers, so a long
    run of fresh connections all ready means every worker is.
    """
    deadline, streak = time.monotonic() + timeout, 0
    while streak < 20 * workers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"not every one of the {workers} workers got ready")
        try:
            ok = httpx.get(f"{base}/v2/health/ready", timeout=2).status_code == 200
        except httpx.HTTPError:
            ok = False
        streak = streak + 1 if ok else 0
        if not ok:
            time.sleep(0.1)


def _drive(
    report: Report,
    server: subprocess.Popen[bytes],
    base: str,
    seconds: float,
    clients: int,
    upload_every: float,
    kill_at: float,
) -> None:
    t0 = time.monotonic()
    shared = Shared(base=base, stop_at=t0 + seconds)
    threads = [threading.Thread(target=client_loop, args=(shared, i), daemon=True) for i in range(clients)]
    threads.append(threading.Thread(target=upload_loop, args=(shared, upload_every), daemon=True))
    for thread in threads:
        thread.start()
    rss: dict[int, list[tuple[float, int]]] = {}
    killed_at, killed, replacement, window_end = None, 0, 0, None
    while time.monotonic() < shared.stop_at:
        now = time.monotonic() - t0
        workers_now = children(server.pid)
        for pid in workers_now:
            value = rss_bytes(pid)
            if value is not None:
                rss.setdefault(pid, []).append((now, value))
        if killed_at is None and now >= kill_at * seconds and workers_now:
            killed = workers_now[0]
            os.kill(killed, signal.SIGKILL)
            killed_at = now
        elif killed_at is not None and not replacement:
            fresh = [pid for pid in workers_now if pid not in rss or rss[pid][0][0] > killed_at]
            replacement = fresh[0] if fresh else 0
        if killed_at is not None and window_end is None and replacement:
            window_end = _replacement_served(shared, t0, killed_at)
        time.sleep(1.0 if killed_at is None or window_end is not None else 0.1)
    for thread in threads:
        thread.join(timeout=60)
    window_end = window_end if window_end is not None else seconds
    report.killed_pid, report.replacement_pid = killed, replacement
    report.kill_at_s = round(killed_at or 0.0, 2)
    report.kill_window_s = [round(killed_at or 0.0, 2), round(window_end, 2)]
    _tally(report, shared, t0, killed_at, window_end)
    _rss(report, rss, seconds)
    report.uploads_acknowledged = len(shared.uploads)
    report.answers_before_ack = shared.served_before_ack
    report.newest_acknowledged = max((u.version for u in shared.uploads), default=1)
    report._known = shared.known  # type: ignore[attr-defined]
    report._uploads = shared.uploads  # type: ignore[attr-defined]


def _replacement_served(shared: Shared, t0: float, killed_at: float) -> float | None:
    """The end of the kill window once the replacement is up: one second after the last failure.

    Called from the moment a replacement worker exists; returns None until
    three seconds have passed without a failure (then the window is over).
    """
    with shared.lock:
        after = [r for r in shared.records if r.started - t0 > killed_at]
    failures = [r.ended - t0 for r in after if r.status not in (200, 201) or r.error]
    last_failure = max(failures, default=killed_at)
    now = time.monotonic() - t0
    return last_failure + 1.0 if now - last_failure > 3.0 else None


def _tally(report: Report, shared: Shared, t0: float, killed_at: float | None, window_end: float) -> None:
    report.requests = len(shared.records)
    report.by_op = dict(Counter(r.op for r in shared.records))
    for record in shared.records:
        if record.status in (200, 201) and not record.error:
            continue
        started, ended = record.started - t0, record.ended - t0
        in_window = killed_at is not None and ended >= killed_at and started <= window_end
        if in_window:
            report.errors_in_window += 1
        else:
            report.errors_outside_window += 1
        if len(report.error_samples) < 20:
            report.error_samples.append(
                f"{started:.2f}-{ended:.2f}s {record.op} {record.status} {record.error[:160]}"
            )
    if report.errors_outside_window:
        report.failures.append(f"{report.errors_outside_window} requests failed outside the kill window")
    if killed_at is not None and window_end - killed_at > MAX_RECOVERY_S:
        report.failures.append(f"failures went on for {window_end - killed_at:.1f} s after the kill")


def _rss(report: Report, rss: dict[int, list[tuple[float, int]]], seconds: float) -> None:
    half = seconds / 2
    for pid, samples in rss.items():
        report.worker_rss[str(pid)] = {
            "first_s": round(samples[0][0], 1),
            "last_s": round(samples[-1][0], 1),
            "start_mib": round(samples[0][1] / 2**20, 1),
            "end_mib": round(samples[-1][1] / 2**20, 1),
        }
        at_half = [value for t, value in samples if t >= half]
        if samples[0][0] <= half - STARTUP_S and samples[-1][0] >= seconds - 3 and at_half:
            growth = at_half[-1] / at_half[0] - 1
            report.rss_growth_second_half[str(pid)] = round(100 * growth, 2)
            if growth >= 0.10:
                report.failures.append(
                    f"worker {pid} grew its RSS by {100 * growth:.1f}% over the second half"
                )
    if not report.rss_growth_second_half:
        report.failures.append(
            f"no worker was up {STARTUP_S:.0f} s before the second half and alive through it"
        )


def _check_after(report: Report, base: str, root: Path) -> None:
    import mininn

    known: dict[int, dict[str, np.ndarray]] = report._known  # type: ignore[attr-defined]
    for upload in report._uploads:  # type: ignore[attr-defined]
        path = root / "mlp" / str(upload.version) / "weights.safetensors"
        try:
            loaded = mininn.load(path)
        except (OSError, ValueError) as exc:
            report.failures.append(f"acknowledged version {upload.version} does not load: {exc}")
            continue
        sent = weights(upload.seed)
        if set(loaded) == set(sent) and all(np.array_equal(loaded[k].numpy(), sent[k]) for k in sent):
            report.uploads_found += 1
        else:
            report.failures.append(f"acknowledged version {upload.version} holds other weights")
    time.sleep(1.5)  # every worker polls the repository every 250 ms
    newest = report.newest_acknowledged
    served = set()
    x = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)
    for _ in range(24):  # fresh connections: the kernel spreads them over the workers
        with httpx.Client(base_url=base, timeout=30) as client:
            response, _ = _infer_once(client, x)
        version, out = _outputs(response)
        served.add(version)
        if not np.allclose(out, forward(known[version], x).ravel(), rtol=1e-4, atol=1e-4):
            report.failures.append(f"version {version} answers with other outputs")
    report.served_versions = sorted(served)
    if served != {newest}:
        report.failures.append(f"served versions {sorted(served)}, newest acknowledged {newest}")


def _infer_once(client: httpx.Client, x: np.ndarray) -> tuple[httpx.Response, np.ndarray]:
    body = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": x.ravel().tolist()}]}
    return client.post("/v2/models/mlp/infer", json=body), x


def summary(report: Report) -> str:
    lines = [
        f"soak: {report.seconds:.0f} s, {report.workers} workers, {report.clients} clients",
        f"requests {report.requests} {report.by_op}",
        f"uploads acknowledged {report.uploads_acknowledged}, found and loading {report.uploads_found}, "
        f"newest {report.newest_acknowledged}, served {report.served_versions}; "
        f"{report.answers_before_ack} answers came from a version before its upload was acknowledged",
        f"killed worker {report.killed_pid} at {report.kill_at_s} s, replacement {report.replacement_pid}, "
        f"window {report.kill_window_s}",
        f"errors in the window {report.errors_in_window}, outside {report.errors_outside_window}",
        f"worker RSS {report.worker_rss}",
        f"RSS growth over the second half (%) {report.rss_growth_second_half}",
        "OK" if report.ok else "FAILED:\n  " + "\n  ".join(report.failures),
    ]
    if report.error_samples:
        lines += ["errors (first 20):", *(f"  {sample}" for sample in report.error_samples)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--upload-every", type=float, default=2.0)
    parser.add_argument("--kill-at", type=float, default=0.4, help="fraction of the run")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "benchmarks" / "results" / "soak.json")
    args = parser.parse_args(argv)
    report = run(args.seconds, args.workers, args.clients, args.upload_every, args.kill_at)
    text = summary(report)
    sys.stdout.write(text + "\n")
    document = {k: v for k, v in asdict(report).items()}
    document["ok"] = report.ok
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
