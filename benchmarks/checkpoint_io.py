"""Checkpoint save/load: time and peak memory, mininn (safetensors, npz, pt) vs torch.save/torch.load.

Usage::

    python benchmarks/checkpoint_io.py [--size-mb 200] [--repeats 3]

Each measurement runs in a fresh subprocess, so one case's memory never
counts against another. Peak memory is the resident set's high-water mark
(``VmHWM`` in ``/proc/self/status``, reset through ``/proc/self/clear_refs``
just before the operation), which, unlike tracemalloc, sees memory-mapped
pages too; "extra" is that peak minus the resident size just before the
operation. Loads read a file that is already in the page cache (it was just
written and is read once before timing), so they measure the library, not
the disk. Cases are interleaved and the median over ``--repeats`` subprocesses is
reported, with CPU time beside wall time (the machine may be shared).

Targets (from the checkpoint issue): safetensors load at least as fast as
``torch.load``; its peak extra memory at most 1.3x the file size.

Results go to ``benchmarks/results/checkpoint_io.json``.
"""

from __future__ import annotations

import argparse
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

RESULTS = Path(__file__).resolve().parent / "results" / "checkpoint_io.json"
CASES = [  # (library, format, suffix)
    ("mininn", "safetensors", ".safetensors"),
    ("mininn", "npz", ".npz"),
    ("mininn", "pt", ".pt"),
    ("torch", "pt", ".torch.pt"),
    ("safetensors.numpy", "safetensors", ".pkg.safetensors"),  # the package's own reader, for reference
]
MiB = 1 << 20


# ---- child process: one operation ----------------------------------------------------------
def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":")
                out[key] = int(value.split()[0]) * 1024
    return out


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)


def _state_dict(size_mb: int) -> dict[str, np.ndarray]:
    """Float32 tensors of 1024 x 1024 (4 MiB each) plus a few small ones, like a model's layers."""
    rng = np.random.default_rng(0)
    n_big = size_mb // 4
    sd = {f"layers.{i}.weight": rng.standard_normal((1024, 1024), dtype=np.float32) for i in range(n_big)}
    sd.update({f"layers.{i}.bias": rng.standard_normal(1024, dtype=np.float32) for i in range(n_big)})
    return sd


def _run_case(op: str, library: str, fmt: str, path: str, size_mb: int) -> dict[str, Any]:
    if library == "torch":
        import torch
    import mininn.serialization as ser

    if op == "save":
        sd = _state_dict(size_mb)
        if library == "torch":
            sd = {k: torch.from_numpy(v) for k, v in sd.items()}
        action = (
            (lambda: torch.save(sd, path)) if library == "torch" else (lambda: ser.save(sd, path, format=fmt))
        )
    else:
        Path(path).read_bytes()  # warm the page cache, then drop the copy
        action = (
            (lambda: torch.load(path, weights_only=True)) if library == "torch" else (lambda: ser.load(path))
        )
    before = _status()["VmRSS"]
    _reset_peak()
    cpu, start = time.process_time(), time.perf_counter()
    result = action()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = _status()["VmHWM"]
    del result
    return {"seconds": seconds, "cpu_seconds": cpu, "extra_bytes": peak - before}


def _functions(library: str, fmt: str) -> tuple[Any, Any]:
    """(save(obj, path), load(path)) of one library."""
    if library == "torch":
        import torch

        return torch.save, lambda path: torch.load(path, weights_only=True)
    if library == "safetensors.numpy":
        import safetensors.numpy

        return safetensors.numpy.save_file, safetensors.numpy.load_file
    import mininn.serialization as ser

    return (lambda sd, path: ser.save(sd, path, format=fmt)), ser.load


# ---- parent: orchestration ------------------------------------------------------------------
def _child(op: str, library: str, fmt: str, path: Path, size_mb: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", op, library, fmt, str(path), "--size-mb", str(size_mb)]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
        "extra_bytes": int(statistics.median(r["extra_bytes"] for r in runs)),
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=4, metavar=("OP", "LIBRARY", "FORMAT", "PATH"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_run_case(*args.child, size_mb=args.size_mb)))
        return

    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        f"{lib}:{fmt}": {"save": [], "load": []} for lib, fmt, _ in CASES
    }
    sizes = {}
    with tempfile.TemporaryDirectory(prefix="checkpoint_io.") as tmp:
        for _ in range(args.repeats):  # cases interleaved, so a busy moment hits all of them alike
            for library, fmt, suffix in CASES:
                name, path = f"{library}:{fmt}", Path(tmp) / f"state{suffix}"
                runs[name]["save"].append(_child("save", library, fmt, path, args.size_mb))
                runs[name]["load"].append(_child("load", library, fmt, path, args.size_mb))
                sizes[name] = path.stat().st_size
                path.unlink()
    results: dict[str, Any] = {
        "cases": {
            name: {"file_bytes": sizes[name], "save": _median(r["save"]), "load": _median(r["load"])}
            for name, r in runs.items()
        }
    }
    _summarize(results, args)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {RESULTS.relative_to(Path.cwd()) if RESULTS.is_relative_to(Path.cwd()) else RESULTS}")


def _summarize(results: dict[str, Any], args: argparse.Namespace) -> None:
    torch_case = results["cases"]["torch:pt"]
    results["machine"] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
    }
    results["settings"] = {"size_mb": args.size_mb, "repeats": args.repeats}
    columns = (
        ("file MiB", 9),
        ("save s", 9),
        ("load s", 9),
        ("load cpu s", 12),
        ("load/torch", 12),
        ("save extra", 12),
        ("load extra", 12),
    )
    header = f"{'case':<31}" + "".join(f"{title:>{width}}" for title, width in columns)
    print(header)
    print("-" * len(header))
    for name, case in results["cases"].items():
        size = case["file_bytes"]
        case["load_time_vs_torch"] = case["load"]["seconds"] / torch_case["load"]["seconds"]
        case["load_cpu_vs_torch"] = case["load"]["cpu_seconds"] / torch_case["load"]["cpu_seconds"]
        case["save_time_vs_torch"] = case["save"]["seconds"] / torch_case["save"]["seconds"]
        case["load_extra_vs_file"] = case["load"]["extra_bytes"] / size
        case["save_extra_vs_file"] = case["save"]["extra_bytes"] / size
        print(
            f"{name:<31}{size / MiB:>9.1f}{case['save']['seconds']:>9.3f}{case['load']['seconds']:>9.3f}"
            f"{case['load']['cpu_seconds']:>12.3f}"
            f"{case['load_time_vs_torch']:>11.2f}x{case['save_extra_vs_file']:>11.2f}x"
            f"{case['load_extra_vs_file']:>11.2f}x"
        )
    st = results["cases"]["mininn:safetensors"]
    results["targets"] = {
        "safetensors_load_at_least_as_fast_as_torch_load": st["load_time_vs_torch"] <= 1.0,
        "safetensors_load_peak_extra_at_most_1.3x_file": st["load_extra_vs_file"] <= 1.3,
    }
    print("\n(extra = peak resident memory during the operation minus resident memory before, / file size)")
    for target, ok in results["targets"].items():
        print(f"{'PASS' if ok else 'FAIL'}  {target}")


if __name__ == "__main__":
    main()
