"""Per-op overhead and matmul throughput: mininn vs raw NumPy vs torch, in one run.

Measures, each as the best of several repeats of a timed loop:

* ``add`` of two 4-element float32 tensors: plain, with ``requires_grad`` on one
  operand (graph recorded), and the same under ``no_grad``;
* ``mul`` with ``requires_grad`` and a 4-element ``sum`` (a reduction);
* a 1024x1024 float32 matmul.

torch runs with as many threads as NumPy's BLAS has (read with threadpoolctl when
it is installed; otherwise both keep their defaults and the JSON says so).
Results go to ``benchmarks/results/tensor_ops.json``.

Run: ``python benchmarks/tensor_ops.py`` (``--quick`` for fewer repeats). Where
OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are set for old OpenBLAS builds, unset both in
the benchmark command only: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python ...``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

import mininn

RESULTS = Path(__file__).parent / "results" / "tensor_ops.json"


def _blas_threads() -> tuple[int | None, list[dict[str, Any]]]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None, []
    info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    numpy_pools = [i for i in info if "numpy" in i.get("filepath", "")] or info
    threads = numpy_pools[0]["num_threads"] if numpy_pools else None
    keep = ("internal_api", "num_threads", "version", "architecture", "filepath")
    return threads, [{k: i.get(k) for k in keep} for i in info]


def _best_us(fn: Callable[[], Any], number: int, repeat: int) -> float:
    """Best per-call time in microseconds."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def _small_ops(number: int, repeat: int) -> dict[str, dict[str, float]]:
    vals = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    na, nb = vals.copy(), vals.copy()
    ma, mb = mininn.tensor(vals), mininn.tensor(vals)
    mr = mininn.tensor(vals, requires_grad=True)
    ta, tb = torch.tensor(vals), torch.tensor(vals)
    tr = torch.tensor(vals, requires_grad=True)
    cases: dict[str, dict[str, Callable[[], Any]]] = {
        "add": {"numpy": lambda: na + nb, "mininn": lambda: ma + mb, "torch": lambda: ta + tb},
        "add_requires_grad": {"mininn": lambda: mr + mb, "torch": lambda: tr + tb},
        "mul_requires_grad": {"mininn": lambda: mr * mb, "torch": lambda: tr * tb},
        "sum": {"numpy": lambda: na.sum(), "mininn": lambda: ma.sum(), "torch": lambda: ta.sum()},
    }
    out = {name: _interleaved(libs, number, repeat) for name, libs in cases.items()}
    with mininn.no_grad(), torch.no_grad():
        out["add_requires_grad_under_no_grad"] = _interleaved(
            {"mininn": lambda: mr + mb, "torch": lambda: tr + tb}, number, repeat
        )
    return out


def _interleaved(fns: dict[str, Callable[[], Any]], number: int, repeat: int) -> dict[str, float]:
    """Best per-call microseconds of each library, timed in turns so that load hits all alike."""
    best = {lib: float("inf") for lib in fns}
    for _ in range(repeat):
        for lib, fn in fns.items():
            best[lib] = min(best[lib], _best_us(fn, number, 1))
    return best


def _matmul(repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 1024), dtype=np.float32)
    b = rng.standard_normal((1024, 1024), dtype=np.float32)
    ma, mb = mininn.tensor(a), mininn.tensor(b)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    fns = {"numpy": lambda: a @ b, "mininn": lambda: ma @ mb, "torch": lambda: ta @ tb}
    for fn in fns.values():  # warm up BLAS thread pools
        fn()
    return {lib: us / 1e3 for lib, us in _interleaved(fns, 5, repeat).items()}  # milliseconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (noisier)")
    args = parser.parse_args()
    number, repeat = (5_000, 5) if args.quick else (20_000, 15)

    blas_threads, blas_info = _blas_threads()
    if blas_threads is not None:
        torch.set_num_threads(blas_threads)
    small = _small_ops(number, repeat)
    matmul_ms = _matmul(3 if args.quick else 15)

    ratios = {name: {f"mininn/{lib}": libs["mininn"] / libs[lib] for lib in libs if lib != "mininn"}
              for name, libs in small.items()}
    ratios["matmul_1024_f32"] = {
        "mininn/numpy": matmul_ms["mininn"] / matmul_ms["numpy"],
        "mininn/torch": matmul_ms["mininn"] / matmul_ms["torch"],
    }
    result = {
        "small_op_us": small,
        "matmul_1024_f32_ms": matmul_ms,
        "ratios": ratios,
        "targets": {"matmul mininn/numpy": "<= 1.1", "small op mininn/torch": "< 2.0"},
        "threads": {
            "numpy_blas": blas_threads,
            "torch": torch.get_num_threads(),
            "matched": blas_threads is not None,
            "note": None if blas_threads is not None else
            "threadpoolctl not installed: NumPy and torch keep their default thread counts",
        },
        "blas": blas_info,
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS")},
        "versions": {"numpy": np.__version__, "torch": torch.__version__, "mininn": mininn.__version__,
                     "python": platform.python_version()},
        "machine": {"cpus": os.cpu_count(), "processor": platform.machine()},
        "settings": {"number": number, "repeat": repeat},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    _report(result)


def _report(result: dict[str, Any]) -> None:
    lines = [f"threads: numpy BLAS {result['threads']['numpy_blas']}, torch {result['threads']['torch']}"]
    for name, libs in result["small_op_us"].items():
        cells = "  ".join(f"{lib} {us:6.2f} us" for lib, us in libs.items())
        ratio = "  ".join(f"{k} {v:5.2f}x" for k, v in result["ratios"][name].items())
        lines.append(f"{name:32s} {cells}   {ratio}")
    mm = result["matmul_1024_f32_ms"]
    ratio = "  ".join(f"{k} {v:5.2f}x" for k, v in result["ratios"]["matmul_1024_f32"].items())
    lines.append(f"{'matmul 1024x1024 f32':32s} " + "  ".join(f"{k} {v:6.2f} ms" for k, v in mm.items())
                 + f"   {ratio}")
    lines.append(f"written to {RESULTS}")
    print("\n".join(lines))  # noqa: T201 - a benchmark's report


if __name__ == "__main__":
    main()
