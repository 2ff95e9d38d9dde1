"""Did a change slow mininn down? ``forward.py`` / ``layers.py`` on two revisions, interleaved.

Usage::

    python benchmarks/compare_revisions.py --base main~3                  # forward.py and layers.py
    python benchmarks/compare_revisions.py --base 4756399 --bench layers --only lstm_forward --rounds 5

The base revision is exported (``git archive``) into a temporary folder; the head is
this checkout's working tree (or ``--head REV``, exported too). Each round runs the
benchmark script of each tree in a process of its own (its ``sys.path`` and
``PYTHONPATH`` point at its own tree, so it imports that tree's ``mininn``), base and
head one after the other, the order swapped every round, one thread each (``forward.py
--threads 1``; ``layers.py`` pins itself). Each run times mininn against torch
interleaved, as the script always does.

Per case it reports the median over rounds of mininn's time in each tree and their
ratio (head / base), and the same for mininn's time over torch's measured in the same
process: torch is the same in both trees, so that ratio of ratios cancels most of what
a shared machine's load does to one process and not to the other, and the verdict
(``within_5_percent``: at most 1.05) uses it. Results go to
``benchmarks/results/compare_revisions.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "compare_revisions.json"
BENCHES = {"forward": ["--threads", "1"], "layers": []}
LIMIT = 1.05


def export(revision: str, into: Path) -> Path:
    """The tree of ``revision`` (``git archive``) under ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def cases_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The timed cases of a ``forward.py`` (``runs[0].cases``) or ``layers.py`` (``cases``) report."""
    return report["runs"][0]["cases"] if "runs" in report else report["cases"]


def run_bench(tree: Path, bench: str, output: Path, extra: list[str]) -> dict[str, dict[str, Any]]:
    """One run of ``tree``'s ``benchmarks/<bench>.py``; its cases."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(tree), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    command = [sys.executable, str(tree / "benchmarks" / f"{bench}.py"), *BENCHES[bench], *extra,
               "--output", str(output)]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n{done.stderr[-3000:]}")
    return cases_of(json.loads(output.read_text()))


def compare(runs: dict[str, list[dict[str, dict[str, Any]]]]) -> dict[str, dict[str, Any]]:
    """Per case present in both trees: medians over rounds and the head/base ratios."""
    rows = {}
    for case in runs["base"][0]:
        if not all(case in run for tree in runs.values() for run in tree):
            continue
        mininn = {t: statistics.median(r[case]["mininn_ms"] for r in runs[t]) for t in runs}
        over_torch = {t: statistics.median(r[case]["mininn_ms"] / r[case]["torch_ms"] for r in runs[t])
                      for t in runs}
        normalized = over_torch["head"] / over_torch["base"]
        rows[case] = {
            "base_mininn_ms": round(mininn["base"], 3), "head_mininn_ms": round(mininn["head"], 3),
            "head_over_base": round(mininn["head"] / mininn["base"], 3),
            "base_over_torch": round(over_torch["base"], 3), "head_over_torch": round(over_torch["head"], 3),
            "head_over_base_vs_torch": round(normalized, 3),
            "within_5_percent": normalized <= LIMIT,
            "rounds": len(runs["base"]),
        }
    return rows


def print_rows(bench: str, rows: dict[str, dict[str, Any]]) -> None:
    print(f"\n{bench}: {'case':<18}{'base ms':>10}{'head ms':>10}{'head/base':>11}{'vs torch':>10}  ok")
    pad = " " * (len(bench) + 2)
    for case, row in rows.items():
        print(f"{pad}{case:<18}{row['base_mininn_ms']:>10.2f}{row['head_mininn_ms']:>10.2f}"
              f"{row['head_over_base']:>11.3f}{row['head_over_base_vs_torch']:>10.3f}  "
              f"{'yes' if row['within_5_percent'] else 'NO'}", flush=True)


def write(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {path}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the revision to compare against (e.g. main)")
    parser.add_argument("--head", default=None, help="a revision instead of this working tree")
    parser.add_argument("--bench", nargs="+", choices=list(BENCHES), default=list(BENCHES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=None, help="comma-separated case names (passed on)")
    parser.add_argument("--repeats", type=int, default=None, help="passed on to the benchmark")
    parser.add_argument("--budget", type=float, default=None, help="passed on to the benchmark")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.only and len(args.bench) > 1:
        parser.error("--only names the cases of one benchmark: give one --bench with it")
    extra = [f"--{k}={v}" for k in ("only", "repeats", "budget") if (v := getattr(args, k)) is not None]
    work = Path(tempfile.mkdtemp(prefix="compare_revisions-"))
    report: dict[str, Any] = {"base": args.base, "head": args.head or "working tree", "limit": LIMIT,
                              "method": __doc__.split("\n\n")[2].replace("\n", " ")}
    try:
        trees = {"base": export(args.base, work / "base"),
                 "head": export(args.head, work / "head") if args.head else ROOT}
        for bench in args.bench:
            runs: dict[str, list[dict[str, dict[str, Any]]]] = {"base": [], "head": []}
            for round_ in range(args.rounds):
                for tree in ("base", "head") if round_ % 2 == 0 else ("head", "base"):
                    print(f"{bench}: round {round_ + 1}, {tree}", flush=True)
                    output = work / f"{bench}-{tree}-{round_}.json"
                    runs[tree].append(run_bench(trees[tree], bench, output, extra))
            report[bench] = compare(runs)
            print_rows(bench, report[bench])
            write(args.output, report)  # after each benchmark: a long run keeps what it has
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
