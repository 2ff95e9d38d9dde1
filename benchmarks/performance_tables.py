"""Markdown tables for ``docs/performance.md`` ("A lean request path") from the benchmarks' JSON.

Usage::

    python benchmarks/performance_tables.py            # the committed *_before.json beside the latest runs

Reads, under ``benchmarks/results/``: ``serve_wrk_before.json`` and ``serve_wrk.json``
(``serve_wrk.py``), ``batch1_latency_before.json`` and ``batch1_latency.json``
(``batch1_latency.py``), and the ``before`` and ``after`` labels of
``serve_profile.json``; prints one table each, with a dash where a file or a row is
missing. Nothing is computed here that the JSON does not hold, except the
mininn-serve before/after ratio.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def _point(report: dict[str, Any], server: str, protocol: str, clients: int) -> dict[str, Any] | None:
    return next((p for p in report.get("points", []) if p["server"] == server
                 and p["protocol"] == protocol and p["concurrency"] == clients), None)


def _best_peer(report: dict[str, Any], protocol: str, clients: int) -> dict[str, Any] | None:
    peers = [p for p in report.get("points", []) if p["server"].startswith("mlserver")
             and p["protocol"] == protocol and p["concurrency"] == clients]
    return max(peers, key=lambda p: p["requests_per_s"], default=None)


def _rps(point: dict[str, Any] | None, server: bool = False) -> str:
    if point is None:
        return "-"
    failed = " (errors)" if point.get("failed") else ""
    name = f", {point['server'].removeprefix('mlserver ')}" if server else ""
    return f"{point['requests_per_s']:.0f} (p99 {point['p99_ms']:.0f} ms{name}){failed}"


def _ratio(ours: dict[str, Any] | None, theirs: dict[str, Any] | None) -> str:
    return f"{ours['requests_per_s'] / theirs['requests_per_s']:.2f}x" if ours and theirs else "-"


def served_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Requests/s (p99) of mininn-serve and of MLServer's best configuration, and their ratio,
    in the before run and in the after run (ratios only within a run: runs differ in load)."""
    lines = ["| protocol | clients | before: mininn-serve | before: MLServer best | before: ratio "
             "| after: mininn-serve | after: MLServer best | after: ratio |", "|---" * 8 + "|"]
    for protocol in ("json", "binary", "grpc"):
        for clients in (1, 8, 32):
            cells = []
            for report in (before, after):
                ours = _point(report, "mininn-serve", protocol, clients)
                peer = _best_peer(report, "json" if protocol == "binary" else protocol, clients)
                cells += [_rps(ours), _rps(peer, server=True), _ratio(ours, peer)]
            if cells[0] != "-" or cells[3] != "-":
                lines.append(f"| {protocol} | {clients} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def batch1_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Each case's torch and mininn milliseconds and ratio, before and after."""
    lines = ["| model | torch ms | mininn ms before | ratio before | mininn ms after | ratio after "
             "| target |", "|---|---|---|---|---|---|---|"]
    cases = {**before.get("cases", {}), **after.get("cases", {})}
    for name, case in cases.items():
        old, new = before.get("cases", {}).get(name), after.get("cases", {}).get(name)
        torch_ms = (new or old)["torch_ms"]
        cells = [f"{r['mininn_ms']:.3f} | {r['ratio']:.2f}x" if r else "- | -" for r in (old, new)]
        lines.append(f"| {case['description']} | {torch_ms:.3f} | {cells[0]} | {cells[1]} "
                     f"| <= {case['target']}x |")
    return "\n".join(lines)


def profile_table(profiles: dict[str, Any]) -> str:
    """The event loop's steps: share of its busy samples and microseconds per request, before and after."""
    labels = [label for label in ("before", "after") if label in profiles]
    header = "| step | " + " | ".join(f"{label}: share | {label}: us/request" for label in labels) + " |"
    lines = [header, "|---|" + "---|---|" * len(labels)]
    steps: dict[str, dict[str, Any]] = {}
    for label in labels:
        for row in profiles[label]["event_loop_steps"]:
            steps.setdefault(row["step"], {})[label] = row
    for step, rows in steps.items():
        cells = [f"{rows[label]['share']:.0%} | {rows[label].get('us_per_request', '-')}" if label in rows
                 else "- | -" for label in labels]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    totals = [f"{_percent(p['event_loop_busy'])} busy | {p['event_loop_us_per_request'] or '-'}"
              for p in (profiles[label] for label in labels)]
    lines.append("| event loop thread, all steps | " + " | ".join(totals) + " |")
    return "\n".join(lines)


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    r = args.results
    print(served_table(_load(r / "serve_wrk_before.json"), _load(r / "serve_wrk.json")), end="\n\n")
    print(batch1_table(_load(r / "batch1_latency_before.json"), _load(r / "batch1_latency.json")), end="\n\n")
    print(profile_table(_load(r / "serve_profile.json")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
