"""Where a served request's time goes: a py-spy profile of the server, summarized by request step.

Usage::

    python benchmarks/serve_wrk.py --profile --profile-label after      # record one under 32 wrk connections
    python benchmarks/serve_profile.py RAW --label before [--rate 200 --seconds 5 --requests-per-s 1046]

The second form summarizes a profile already recorded in py-spy's raw format
(``py-spy record -p PID -d 5 -r 200 -f raw [--threads]``: one line a distinct stack,
``frame;frame;...;leaf COUNT``, root first). Either way the summary goes under its
label in ``benchmarks/results/serve_profile.json`` (other labels are kept), so a
``before`` and an ``after`` sit side by side.

A sample belongs to the event loop's thread (the main thread: uvicorn runs the loop
there) unless its stack starts in ``Thread._bootstrap`` (the inference threads and any
other). Each sample is given to one step of a request: its frames are read from the
leaf towards the root and the first frame that matches a step's pattern (:data:`STEPS`,
in that order) names it; frames that match none (NumPy, the standard library's
helpers) count for the nearest caller that does. So a ``Gauge.inc`` inside the batch
queue counts as metrics, a NumPy check inside the request decoder as decoding. With the
sampling rate, the duration and the request rate, a step's samples become microseconds
of the event loop's thread per request. py-spy leaves out idle samples (a thread waiting
in ``epoll``), so the shares are of the thread's busy time, and the samples over
rate x duration are how busy it was.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["STEPS", "parse_raw", "py_spy", "record", "step_of", "summarize"]

RESULTS = Path(__file__).resolve().parent / "results" / "serve_profile.json"
VENV_PY_SPY = Path("/work/main/.venv-test/bin/py-spy")

# (step, pattern over one frame "function (file:line)"), tried in this order on each frame, leaf first.
STEPS: list[tuple[str, str]] = [
    ("forward (inference thread)", r"\((mininn|models)/"),
    ("logging", r"\((logging/|uvicorn/logging\.py)|access_log|log_access"),
    ("metrics and statistics",
     r"\((prometheus_client/|app/runtime/statistics\.py|app/runtime/metrics\.py|opentelemetry/"
     r"|trace/__init__\.py|fastapi/telemetry/)|_observe \(|_telemetry"),
    ("body read", r"read_body|Request\.(stream|body) |_DeadlineReceive|receive \(|\(app/http/body\.py"),
    ("send", r"RequestResponseCycle\.send |Response\.__call__ |on_response_complete"
             r"|\(asyncio/(selector_events|transports)\.py"),
    ("encode", r"encode|dumps|SerializeToString|infer_response|\(app/v2/(response|captures)\.py"
               r"|_response \(app/routes"),
    ("validation", r"valid|_check|check_|signature|_batch_size|_as_declared|_requested_output|\(pydantic"),
    ("parse and decode", r"parse|decode|loads|FromString|request_document"
                         r"|\(app/(http/json_limits|v2/tensors|v2/request|grpc/codec)\.py"),
    ("waiting for work (inference thread)", r"^_worker \(concurrent/futures/thread\.py"),
    ("queue and batching",
     r"\(app/runtime/(batching|dataplane|runner|manager|versions|service)\.py"
     r"|\(asyncio/(futures|tasks|locks|queues)\.py|\(concurrent/futures/|run_in_executor"),
    ("middleware and auth", r"[Mm]iddleware|\(app/http/(auth|middleware|body_timeout)\.py|_ServerApp"
                            r"|request_id"),
    ("route handler", r"\((app/routes/|starlette/routing|fastapi/routing|app/grpc/servicer\.py"
                      r"|app/grpc/server\.py)"),
    ("HTTP protocol (uvicorn)", r"\((uvicorn/protocols/|app/http/server\.py|h11/)|httptools"),
    ("gRPC runtime", r"\(grpc/|_cython"),
    ("event loop", r"\(asyncio/|uvloop|Runner\.run |run_forever|_run_once"),
]
_COMPILED = [(step, re.compile(pattern)) for step, pattern in STEPS]
OTHER = "other"
_THREAD_FRAME = re.compile(r"^(thread|process) \(?")


def parse_raw(text: str) -> list[tuple[list[str], int]]:
    """py-spy's raw format as (frames root first, without a thread/process frame, count) pairs."""
    stacks = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            raise ValueError(f"line {number} is not 'frame;...;frame COUNT' (py-spy's raw format): {line!r}")
        frames = [f for f in stack.split(";") if not _THREAD_FRAME.match(f)]
        stacks.append((frames, int(count)))
    return stacks


def step_of(frames: list[str]) -> str:
    """The request step of one stack (root first): the first step matching a frame, leaf first."""
    for frame in reversed(frames):
        for step, pattern in _COMPILED:
            if pattern.search(frame):
                return step
    return OTHER


def _is_event_loop(frames: list[str]) -> bool:
    return not (frames and frames[0].startswith("Thread._bootstrap"))


def _steps(stacks: Iterable[tuple[list[str], int]], per_request_s: float | None) -> list[dict[str, Any]]:
    counts: Counter = Counter()
    for frames, count in stacks:
        counts[step_of(frames)] += count
    total = sum(counts.values()) or 1
    rows = []
    for step, samples in counts.most_common():
        row: dict[str, Any] = {"step": step, "samples": samples, "share": round(samples / total, 4)}
        if per_request_s is not None:
            row["us_per_request"] = round(samples * per_request_s * 1e6, 1)
        rows.append(row)
    return rows


def _top_self(stacks: Iterable[tuple[list[str], int]], n: int) -> list[dict[str, Any]]:
    leaves: Counter = Counter()
    for frames, count in stacks:
        leaves[frames[-1] if frames else "?"] += count
    total = sum(leaves.values()) or 1
    return [{"frame": frame, "samples": samples, "share": round(samples / total, 4)}
            for frame, samples in leaves.most_common(n)]


def summarize(text: str, rate_hz: float | None = None, seconds: float | None = None,
              requests_per_s: float | None = None, top: int = 15) -> dict[str, Any]:
    """A raw py-spy profile's samples by thread and request step, and its top self-time frames.

    ``rate_hz`` and ``seconds`` (how it was recorded) give the event loop's busy share;
    with ``requests_per_s`` too (the load it was recorded under), microseconds per request.
    """
    stacks = parse_raw(text)
    loop = [s for s in stacks if _is_event_loop(s[0])]
    others = [s for s in stacks if not _is_event_loop(s[0])]
    loop_samples = sum(count for _, count in loop)
    known = rate_hz is not None and seconds is not None
    # one sample stands for 1 / rate_hz seconds, shared by requests_per_s x seconds requests
    per_request = 1 / (rate_hz * requests_per_s * seconds) if known and requests_per_s else None
    summary: dict[str, Any] = {
        "rate_hz": rate_hz, "seconds": seconds, "requests_per_s": requests_per_s,
        "samples": {"event_loop_thread": loop_samples,
                    "other_threads": sum(count for _, count in others)},
        "event_loop_busy": round(loop_samples / (rate_hz * seconds), 3) if known else None,
        "event_loop_us_per_request": round(loop_samples * per_request * 1e6, 1) if per_request else None,
        "event_loop_steps": _steps(loop, per_request),
        "other_thread_steps": _steps(others, per_request),
        "event_loop_top_self": _top_self(loop, top),
        "other_threads_top_self": _top_self(others, top // 2),
        "method": "py-spy samples; each sample's step is the first frame, leaf first, that matches a "
                  "pattern of 'rules' (in order); shares are of each thread group's busy samples",
        "rules": dict(STEPS),
    }
    return summary


def print_summary(label: str, summary: dict[str, Any]) -> None:
    """The event loop's steps as a table on stdout."""
    busy = summary["event_loop_busy"]
    print(f"\nprofile '{label}': event loop thread {summary['samples']['event_loop_thread']} samples"
          + (f", {busy:.0%} busy" if busy is not None else ""))
    for row in summary["event_loop_steps"]:
        per = f"{row['us_per_request']:8.1f} us/request" if "us_per_request" in row else ""
        print(f"  {row['step']:<38}{row['share']:7.1%}  {per}")


def py_spy() -> str:
    """The py-spy command: the test venv's, else the one on PATH."""
    found = str(VENV_PY_SPY) if VENV_PY_SPY.exists() else shutil.which("py-spy")
    if found is None:
        raise RuntimeError("py-spy not found: pip install py-spy (it is in the test environment)")
    return found


def record(pid: int, output: Path, seconds: float = 5, rate_hz: int = 200,
           cpus: Iterable[int] | None = None) -> subprocess.Popen[bytes]:
    """Start ``py-spy record`` on ``pid`` (raw format, thread ids) writing ``output``; the caller waits.

    ``cpus``: the cores py-spy may run on (keep it off the server's).
    """
    allowed = set(cpus) if cpus is not None else None
    command = [py_spy(), "record", "-p", str(pid), "-d", str(round(seconds)), "-r", str(rate_hz),
               "-f", "raw", "--threads", "-o", str(output)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=(lambda: os.sched_setaffinity(0, allowed)) if allowed else None)


def store(label: str, summary: dict[str, Any], output: Path = RESULTS) -> None:
    """Write ``summary`` under ``label`` in ``output``, keeping the other labels there."""
    report = json.loads(output.read_text()) if output.exists() else {}
    report[label] = summary
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote '{label}' into {output}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("raw", type=Path, help="a py-spy profile in raw format")
    parser.add_argument("--label", required=True, help="e.g. before or after")
    parser.add_argument("--rate", type=float, default=None, help="samples per second it was recorded at")
    parser.add_argument("--seconds", type=float, default=None, help="how long it was recorded")
    parser.add_argument("--requests-per-s", type=float, default=None, help="the load it was recorded under")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    summary = summarize(args.raw.read_text(), args.rate, args.seconds, args.requests_per_s)
    summary["source"] = str(args.raw)
    print_summary(args.label, summary)
    store(args.label, summary, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
