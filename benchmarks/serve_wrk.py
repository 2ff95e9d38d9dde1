"""The served MLP under wrk: mininn-serve with its defaults against MLServer's best, JSON, binary and gRPC.

Usage::

    python benchmarks/serve_wrk.py                      # 3 rounds of 5 s points: about 12 minutes
    python benchmarks/serve_wrk.py --rounds 1 --seconds 2 --no-mlserver   # a quick look
    python benchmarks/serve_wrk.py --profile --profile-label after     # and a py-spy profile at 32 conns
    python benchmarks/serve_wrk.py --profile-only --profile-label after   # only the profile

Writes ``benchmarks/results/serve_wrk.json`` (and, with a profile,
``benchmarks/results/serve_profile.json``: see ``serve_profile.py``).

What it does, all on this machine, clients and servers on 127.0.0.1:

- Serves the zoo ``mlp`` 784-1024-1024-10 (``serve_load.write_repository``: random
  weights, ``max_batch_size`` 64 in its ``model.json``) with ``python -m app`` at its
  defaults: only the repository, the ports and ``MININN_SEED_REPOSITORY=false`` are set
  (the log level stays ``info``, batching, queue and threads as shipped). MLServer
  (``benchmarks/mlserver_runtime/``, the same forward in NumPy, its own venv) runs the
  same weights with ``parallel_workers`` 0 and 1, each with adaptive batching off and
  on (``max_batch_size`` 64, ``max_batch_time`` 5 ms). BLAS is pinned to one thread in
  every server (``OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1``).
- Every server's answer is checked against a float64 NumPy forward before any timing.
- HTTP load is ``wrk`` (``--latency``; a Lua script POSTs one pre-encoded batch-1
  body; one wrk thread): JSON to every server, binary tensors
  (``Inference-Header-Content-Length``) to mininn-serve (MLServer takes none), at
  ``--connections`` (1, 8, 32). gRPC load is a closed loop of ``--grpc-clients`` (1,
  8, 32) clients in ``--grpc-processes`` separate processes, a thread and a channel
  per client, one pre-serialized ``ModelInferRequest`` (``raw_input_contents``) per
  call through a generic ``unary_unary`` (``_grpc_load.py``), against mininn-serve's
  and MLServer's gRPC endpoints.
- Cores: with more than one core, the load generators (wrk, the gRPC client
  processes, py-spy) run on the last core and everything else, this script and the
  servers it starts (which inherit its affinity), on the others
  (``os.sched_setaffinity``; ``--server-cores N``: the first N of them only);
  ``--no-pin`` leaves every process free. On a 2-core machine each server thus gets
  one core, the clients the other.
- At each concurrency every target runs once per round, one after the other
  (mininn-serve, MLServer, mininn-serve, MLServer, ... in a fixed order, reversed
  every other round), for ``--rounds`` rounds; a point is the median over rounds of requests/s,
  p50 and p99 (wrk's). A run with any non-2xx answer, socket error or failed gRPC
  call marks its point failed: the run says so loudly and exits 1 (after writing
  the JSON).
- The summary's ratios: mininn-serve JSON over MLServer's best JSON configuration (the
  one with the highest median at that concurrency) at 1, 8 and 32 connections
  (targets 1.5x and 2.5x at 1 and 32), mininn-serve's p99 at 32 connections (target
  50 ms), binary REST beside JSON, and mininn-serve gRPC over MLServer's best gRPC at
  1, 8 and 32 clients (target 1.0x). Each ratio also comes per round, to show its
  spread.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout: import app and models from it
sys.path.insert(0, str(ROOT / "benchmarks"))

import serve_load  # noqa: E402
import serve_profile  # noqa: E402
from _grpc_load import GrpcLoad  # noqa: E402
from _support import free_port  # noqa: E402
from _wrk import run_wrk  # noqa: E402
from serve_load import (  # noqa: E402
    Target,
    check,
    grpc_targets,
    mininn_server,
    mininn_targets,
    mlserver_targets,
    numpy_mlp,
    sample,
    write_repository,
)

RESULTS = ROOT / "benchmarks" / "results"
CONNECTIONS = (1, 8, 32)
TARGETS = {  # what the issue asks: (ratio name, concurrency, at least)
    "json_over_mlserver_best": {1: 1.5, 32: 2.5},
    "grpc_over_mlserver_grpc_best": {1: 1.0, 8: 1.0, 32: 1.0},
}
P99_TARGET_MS = (32, 50.0)  # mininn-serve JSON at 32 connections: p99 at most 50 ms


# ---- cores --------------------------------------------------------------------------------------
def split_cores(pin: bool, server_cores: int = 0) -> tuple[set[int] | None, set[int] | None]:
    """(server cores, client cores): the last core for the clients where there are two or more,
    the first ``server_cores`` of the rest (all of them when 0) for the servers."""
    cores = sorted(os.sched_getaffinity(0))
    if not pin or len(cores) < 2:
        return None, None
    servers = cores[:-1][:server_cores] if server_cores > 0 else cores[:-1]
    return set(servers), {cores[-1]}


# ---- servers and targets ------------------------------------------------------------------------
def default_mininn(stack: ExitStack, work: Path) -> tuple[int, list[Target]]:
    """mininn-serve at its defaults; its pid and its JSON, binary and gRPC targets (batching as shipped)."""
    from app.settings import Settings

    defaults = {name: Settings.model_fields[name].default for name in ("log_level", "max_batch_size",
                                                                      "max_queue")}
    port, grpc_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    # serve_load's helper sets the benchmark's log level, batch size and queue: give the defaults back.
    pid = stack.enter_context(mininn_server(work / "repository", port, work / "mininn.log",
                                            grpc_port=grpc_port, **defaults))
    targets = mininn_targets(base, "mlp", ("json", "binary"))
    targets += grpc_targets(f"grpc://127.0.0.1:{grpc_port}", "mlp", base)
    return pid, [t for t in targets if t.batching]


def alternate(ours: list[Target], theirs: list[Target]) -> list[Target]:
    """One of ours, one of theirs, ... (the longer list's rest at the end): the order of a round."""
    mixed = [t for pair in zip(ours, theirs) for t in pair]
    return mixed + ours[len(theirs):] + theirs[len(ours):]


def name(target: Target) -> str:
    """A target's row name: its server and, for MLServer, whether adaptive batching is on."""
    if target.server.startswith("mlserver"):
        return f"{target.server}{', adaptive batching' if target.batching else ''}"
    return target.server


def check_answers(targets: list[Target], weights: dict[str, np.ndarray]) -> None:
    """Every target's answer against a float64 NumPy forward; stop at the first that differs."""
    expected = numpy_mlp(weights, sample("mlp"))
    for target in targets:
        if not check([target], expected):
            raise SystemExit(f"{name(target)} ({target.protocol}) answers differently from NumPy's forward")
    print(f"answers checked against NumPy: {len(targets)} targets", flush=True)


# ---- measurement --------------------------------------------------------------------------------
def run_once(target: Target, clients: int, opts: argparse.Namespace, grpc_load: GrpcLoad | None,
             cores: set[int] | None) -> dict[str, Any]:
    """One warm-up, then one measured closed-loop run of ``target`` at ``clients``."""
    if target.protocol == "grpc":
        assert grpc_load is not None
        result = grpc_load.run(target.url.removeprefix("grpc://"), target.body.content, clients,
                               opts.warmup, opts.seconds)
        errors = {"failed_calls": result.failures, "late_calls": result.late,
                  "slowest_ms": round(result.slowest_ms, 1)}
    else:
        run_wrk(target.url, target.body, clients, opts.warmup, cores)
        result = run_wrk(target.url, target.body, clients, opts.seconds, cores)
        errors = {"non_2xx": result.non_2xx, "socket_errors": result.socket_errors}
    return {"requests_per_s": round(result.requests_per_s, 1), "p50_ms": round(result.p50_ms, 2),
            "p99_ms": round(result.p99_ms, 2), "requests": result.requests, "errors": result.errors,
            "error_detail": errors}


def sweep(targets: list[Target], opts: argparse.Namespace, grpc_load: GrpcLoad | None,
          cores: set[int] | None) -> list[dict[str, Any]]:
    """Every target at each concurrency, its runs interleaved with the others' over the rounds."""
    points = []
    for clients in sorted(set(opts.connections) | set(opts.grpc_clients)):
        here = [t for t in targets
                if clients in (opts.grpc_clients if t.protocol == "grpc" else opts.connections)]
        runs: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(here))}
        for round_ in range(opts.rounds):
            order = list(range(len(here)))[:: 1 if round_ % 2 == 0 else -1]
            for i in order:
                run = run_once(here[i], clients, opts, grpc_load, cores)
                runs[i].append(run)
                slowest = run["error_detail"].get("slowest_ms")
                flag = f"  ERRORS {run['error_detail']}" if run["errors"] else (
                    f"  slowest {slowest} ms" if slowest is not None else "")
                print(f"  c={clients:<3d} round {round_ + 1} {name(here[i]):<42}{here[i].protocol:<7}"
                      f"{run['requests_per_s']:9.1f} req/s  p50 {run['p50_ms']:7.2f} ms  "
                      f"p99 {run['p99_ms']:7.2f} ms{flag}", flush=True)
        points += [point(here[i], clients, runs[i]) for i in range(len(here))]
    return points


def point(target: Target, clients: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians over rounds of one target at one concurrency, and its runs."""
    return {
        "server": name(target), "protocol": target.protocol, "concurrency": clients,
        **{key: round(statistics.median(r[key] for r in runs), 2)
           for key in ("requests_per_s", "p50_ms", "p99_ms")},
        "failed": any(r["errors"] for r in runs), "runs": runs,
    }


# ---- summary ------------------------------------------------------------------------------------
def _find(points: list[dict[str, Any]], server: str, protocol: str, clients: int) -> dict[str, Any] | None:
    return next((p for p in points if p["server"] == server and p["protocol"] == protocol
                 and p["concurrency"] == clients), None)


def _ratio(ours: dict[str, Any], theirs: list[dict[str, Any]], at_least: float | None) -> dict[str, Any]:
    best = max(theirs, key=lambda p: p["requests_per_s"])
    per_round = [round(a["requests_per_s"] / b["requests_per_s"], 3) if b["requests_per_s"] else None
                 for a, b in zip(ours["runs"], best["runs"])]
    ratio = ours["requests_per_s"] / best["requests_per_s"] if best["requests_per_s"] else float("nan")
    row = {"mininn_rps": ours["requests_per_s"], "mininn_p99_ms": ours["p99_ms"],
           "best_peer": best["server"], "peer_rps": best["requests_per_s"], "peer_p99_ms": best["p99_ms"],
           "ratio": round(ratio, 3), "ratio_per_round": per_round,
           "valid": not (ours["failed"] or best["failed"])}
    if at_least is not None:
        row.update(target=at_least, meets_target=ratio >= at_least)
    return row


def summarize(points: list[dict[str, Any]], opts: argparse.Namespace) -> dict[str, Any]:
    """The ratios and the p99 the issue asks for, from the points."""
    summary: dict[str, Any] = {}
    peers = {p["server"] for p in points if p["server"].startswith("mlserver")}
    for protocol, key, counts in (("json", "json_over_mlserver_best", opts.connections),
                                  ("grpc", "grpc_over_mlserver_grpc_best", opts.grpc_clients)):
        for clients in counts:
            ours = _find(points, "mininn-serve", protocol, clients)
            theirs = [p for s in peers if (p := _find(points, s, protocol, clients))]
            if ours and theirs:
                summary.setdefault(key, {})[f"c{clients}"] = _ratio(ours, theirs, TARGETS[key].get(clients))
    for clients in opts.connections:
        binary, json_ = (_find(points, "mininn-serve", p, clients) for p in ("binary", "json"))
        if binary and json_:
            summary.setdefault("binary_over_json", {})[f"c{clients}"] = {
                "binary_rps": binary["requests_per_s"], "json_rps": json_["requests_per_s"],
                "ratio": round(binary["requests_per_s"] / json_["requests_per_s"], 3),
                "binary_p99_ms": binary["p99_ms"]}
    clients, limit = P99_TARGET_MS
    if ours := _find(points, "mininn-serve", "json", clients):
        summary[f"mininn_json_p99_ms_c{clients}"] = {
            "p99_ms": ours["p99_ms"], "target_at_most": limit, "meets_target": ours["p99_ms"] <= limit}
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    for key, rows in summary.items():
        if key.startswith("mininn_json_p99"):
            print(f"{key}: {rows['p99_ms']} ms (target <= {rows['target_at_most']})")
            continue
        for at, row in rows.items():
            target = f"  target {row['target']}x {'met' if row['meets_target'] else 'NOT met'}" \
                if "target" in row else ""
            valid = "" if row.get("valid", True) else "  (INVALID: a run had errors)"
            print(f"{key} {at}: {row['ratio']:.2f}x {row.get('ratio_per_round', '')}{target}{valid}")


# ---- profile ------------------------------------------------------------------------------------
def profile(pid: int, target: Target, opts: argparse.Namespace, cores: set[int] | None) -> dict[str, Any]:
    """py-spy on the mininn server for ``--profile-seconds`` under 32 wrk connections (JSON)."""
    clients, seconds = 32, opts.profile_seconds
    result: dict[str, Any] = {}
    load = threading.Thread(target=lambda: result.update(wrk=run_wrk(target.url, target.body, clients,
                                                                        seconds + 3, cores)))
    raw = opts.profile_raw or Path(tempfile.mkdtemp(prefix="serve_profile-")) / f"{opts.profile_label}.raw"
    load.start()
    time.sleep(1.0)
    spy = serve_profile.record(pid, raw, seconds, opts.profile_rate, cores)
    _, err = spy.communicate(timeout=seconds + 60)
    load.join()
    if spy.returncode != 0 or not raw.exists():
        raise RuntimeError(f"py-spy failed ({spy.returncode}): {err.decode(errors='replace')[-2000:]}")
    wrk = result["wrk"]
    summary = serve_profile.summarize(raw.read_text(), opts.profile_rate, seconds, wrk.requests_per_s)
    summary.update(source=f"py-spy record -r {opts.profile_rate} -d {seconds:g} under wrk -c{clients}, "
                          f"mlp JSON, mininn-serve defaults; raw profile: {raw}",
                   wrk=asdict(wrk))
    if wrk.errors:
        raise RuntimeError(f"the profiled load had errors: {asdict(wrk)}")
    serve_profile.print_summary(opts.profile_label, summary)
    serve_profile.store(opts.profile_label, summary, opts.profile_output)
    return summary


# ---- main ---------------------------------------------------------------------------------------
def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per point")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each run")
    parser.add_argument("--connections", nargs="+", type=int, default=list(CONNECTIONS))
    parser.add_argument("--grpc-clients", nargs="+", type=int, default=list(CONNECTIONS))
    parser.add_argument("--grpc-processes", type=int, default=4, help="client processes (at most)")
    parser.add_argument("--no-mlserver", action="store_true", help="mininn-serve only")
    parser.add_argument("--no-grpc", action="store_true", help="HTTP only")
    parser.add_argument("--no-pin", dest="pin", action="store_false", help="leave every process on any core")
    parser.add_argument("--server-cores", type=int, default=0,
                        help="cores for the servers (default: all but the clients' one)")
    parser.add_argument("--mlserver-venv", type=Path, default=serve_load.MLSERVER_VENV,
                        help="MLServer's venv (made there on first use)")
    parser.add_argument("--profile", action="store_true", help="also record a py-spy profile at 32 conns")
    parser.add_argument("--profile-only", action="store_true", help="only the profile, no sweep")
    parser.add_argument("--profile-label", default="after", help="its key in serve_profile.json")
    parser.add_argument("--profile-seconds", type=float, default=5.0)
    parser.add_argument("--profile-rate", type=int, default=200, help="samples per second")
    parser.add_argument("--profile-raw", type=Path, default=None, help="keep py-spy's raw profile here")
    parser.add_argument("--profile-output", type=Path, default=RESULTS / "serve_profile.json")
    parser.add_argument("--output", type=Path, default=RESULTS / "serve_wrk.json")
    opts = parser.parse_args(argv)
    if opts.profile_only:
        opts.profile, opts.no_mlserver = True, True
    if opts.no_grpc:
        opts.grpc_clients = []
    return opts


def machine(server_cores: set[int] | None, client_cores: set[int] | None) -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "load_average_before": os.getloadavg(),
            "server_cores": sorted(server_cores) if server_cores else "any",
            "client_cores": sorted(client_cores) if client_cores else "any"}


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    serve_load.MLSERVER_VENV = opts.mlserver_venv
    server_cores, client_cores = split_cores(opts.pin, opts.server_cores)
    if server_cores:
        os.sched_setaffinity(0, server_cores)  # the servers started below inherit it
    report: dict[str, Any] = {"machine": machine(server_cores, client_cores),
                              "run": {k: str(v) if isinstance(v, Path) else v for k, v in vars(opts).items()}}
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="serve_wrk-"))
    try:
        with ExitStack() as stack:
            weights = write_repository(work / "repository")["mlp"]
            pid, targets = default_mininn(stack, work)
            report["mininn"] = {"set": ["MININN_HOST", "MININN_PORT", "MININN_GRPC_PORT",
                                        "MININN_MODEL_REPOSITORY", "MININN_SEED_REPOSITORY=false"],
                                "blas": serve_load.BLAS_ENV,
                                "everything else": "defaults (log level, max batch size and queue are "
                                                   "passed at their default values)"}
            if not opts.no_mlserver:
                targets = alternate(targets, mlserver_targets(stack, work, weights))
                report["mlserver"] = {"version": serve_load.mlserver_version(), "max_batch_size": 64,
                                      "max_batch_time_s": serve_load.MLSERVER_BATCH_TIME_S}
            targets = [t for t in targets if t.protocol != "grpc" or opts.grpc_clients]
            check_answers(targets, weights)
            if not opts.profile_only:
                processes = min(opts.grpc_processes, max(opts.grpc_clients, default=1))
                with GrpcLoad(processes, client_cores) as grpc_load:
                    report["points"] = sweep(targets, opts, grpc_load, client_cores)
                report["summary"] = summarize(report["points"], opts)
            if opts.profile:
                json_target = next(t for t in targets if t.server == "mininn-serve" and t.protocol == "json")
                profile(pid, json_target, opts, client_cores)
    except BaseException:
        print(f"logs kept in {work}", file=sys.stderr)
        raise
    shutil.rmtree(work, ignore_errors=True)
    if opts.profile_only:
        return 0
    report["machine"]["load_average_after"] = os.getloadavg()
    report["run"]["wall_seconds"] = round(time.monotonic() - started, 1)
    failed = [f"{p['server']} {p['protocol']} c={p['concurrency']}" for p in report["points"] if p["failed"]]
    report["failed_points"] = failed
    opts.output.parent.mkdir(parents=True, exist_ok=True)
    opts.output.write_text(json.dumps(report, indent=1) + "\n")
    print()
    print_summary(report["summary"])
    print(f"wrote {opts.output} in {report['run']['wall_seconds']:.0f} s")
    if failed:
        print(f"\nFAILED POINTS (errors during load; their figures are not valid): {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
