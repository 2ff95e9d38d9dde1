"""Start-up of ``python -m app`` on the demo repository: wall and CPU seconds until ready.

Two conditions, interleaved over ``--rounds`` rounds: with a current bytecode cache of
``app``, ``mininn`` and ``models``, and with none (their ``__pycache__`` folders removed and
``PYTHONDONTWRITEBYTECODE`` set: each start compiles them again, as on machines that set that
variable and never wrote a cache; installed packages keep the cache pip wrote). The demo
repository is seeded once by a first start; the language-model demo is removed, as
``tests/app/test_start_command.py`` does (its 93 MB GGUF file takes tens of seconds).

    python benchmarks/startup.py --rounds 3

Writes ``benchmarks/results/startup.json``.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from _support import free_port, write_report

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "startup.json"


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def start_once(repository: Path, extra_env: dict[str, str], timeout: float = 120) -> tuple[float, float]:
    """Seconds until /v2/health/ready answers 200, and the server's CPU seconds by then."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MININN_")}
    env.update(MININN_HOST="127.0.0.1", MININN_PORT=str(port), MININN_MODEL_REPOSITORY=str(repository),
               MININN_LOG_LEVEL="warning", MININN_GRPC_PORT="0", **extra_env)
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "app"], cwd=ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - started < timeout:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v2/health/ready", timeout=1).status_code == 200:
                    return time.perf_counter() - started, _cpu_seconds(process.pid)
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
        raise TimeoutError(f"not ready after {timeout} s")
    finally:
        process.terminate()
        process.wait(30)


PACKAGES = ("app", "mininn", "models")


def _compile() -> None:
    for package in PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=1)


def _drop_cache() -> None:
    for package in PACKAGES:
        for folder in (ROOT / package).rglob("__pycache__"):
            shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    _compile()
    with tempfile.TemporaryDirectory() as tmp:
        repository = Path(tmp) / "model_repository"
        start_once(repository, {}, timeout=600)  # seeds the demos
        shutil.rmtree(repository / "smollm2", ignore_errors=True)
        conditions = {"bytecode cache": (_compile, {}),
                      "no bytecode cache": (_drop_cache, {"PYTHONDONTWRITEBYTECODE": "1"})}
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in conditions}
        try:
            for _ in range(args.rounds):
                for name, (prepare, env) in conditions.items():
                    prepare()
                    runs[name].append(start_once(repository, env))
        finally:
            with contextlib.suppress(OSError):
                _compile()
    report = {
        name: {"wall_s": [round(w, 2) for w, _ in rows], "cpu_s": [round(c, 2) for _, c in rows],
               "median_cpu_s": round(statistics.median(c for _, c in rows), 2)}
        for name, rows in runs.items()
    }
    for name, row in report.items():
        print(f"{name:18s} wall {row['wall_s']}  cpu {row['cpu_s']}")
    write_report(RESULTS, {"rounds": args.rounds, "conditions": report})


if __name__ == "__main__":
    main()
