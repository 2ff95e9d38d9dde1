"""Module call overhead: calls per second of a trivial module, mininn vs torch, one run.

Usage::

    python benchmarks/module_overhead.py [--calls 200000] [--repeats 7]

The module's ``forward`` returns its input unchanged, so a call measures only the
module system: ``__call__``, the hook checks and (in the second case) one forward
hook that returns ``None``. Three cases per library: a direct ``forward`` call (the
floor), ``module(x)`` with no hooks, and ``module(x)`` with one forward hook.
Libraries and cases are interleaved, each timing is the best of ``--repeats`` runs
of ``--calls`` calls (the machine may be shared), and CPU time is measured with
``time.process_time`` so a busy machine shows up as wall >> CPU.

Target (from the module issue): no-hook call overhead at most torch's, i.e. the
``no_hooks`` ratio mininn/torch of calls per second is >= 1.

Results go to ``benchmarks/results/module_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "module_overhead.json"
CASES = ("forward_direct", "no_hooks", "one_forward_hook")


def _setup(lib_name: str) -> dict[str, Any]:
    """A trivial module and input for one library, with a hooked twin."""
    if lib_name == "torch":
        import torch as lib
    else:
        import mininn as lib
        import mininn.nn  # noqa: F401

    class Identity(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            return x

    plain, hooked = Identity(), Identity()
    hooked.register_forward_hook(lambda module, args, output: None)
    return {"plain": plain, "hooked": hooked, "x": lib.zeros(4), "version": lib.__version__}


def _calls(case: str, env: dict[str, Any]) -> Any:
    x = env["x"]
    if case == "forward_direct":
        return env["plain"].forward, x
    if case == "no_hooks":
        return env["plain"], x
    return env["hooked"], x


def _time_once(fn: Any, x: Any, n: int) -> tuple[float, float]:
    loop = range(n)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in loop:
        fn(x)
    return time.perf_counter() - wall0, time.process_time() - cpu0


def measure(calls: int, repeats: int) -> dict[str, dict[str, dict[str, float]]]:
    envs = {name: _setup(name) for name in ("torch", "mininn")}
    best: dict[str, dict[str, tuple[float, float]]] = {
        lib: {case: (float("inf"), float("inf")) for case in CASES} for lib in envs
    }
    for _ in range(repeats):
        for case in CASES:
            for lib, env in envs.items():  # interleaved: both libraries see the same load
                fn, x = _calls(case, env)
                wall, cpu = _time_once(fn, x, calls)
                if wall < best[lib][case][0]:
                    best[lib][case] = (wall, cpu)
    return {
        lib: {
            case: {
                "calls_per_s": calls / wall,
                "ns_per_call": wall / calls * 1e9,
                "cpu_ns_per_call": cpu / calls * 1e9,
            }
            for case, (wall, cpu) in cases.items()
        }
        for lib, cases in best.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000, help="calls per timing")
    parser.add_argument("--repeats", type=int, default=7, help="timings per case (best is kept)")
    args = parser.parse_args()

    results = measure(args.calls, args.repeats)
    ratios = {
        case: results["mininn"][case]["calls_per_s"] / results["torch"][case]["calls_per_s"] for case in CASES
    }
    overhead = {
        lib: {
            case: results[lib][case]["ns_per_call"] - results[lib]["forward_direct"]["ns_per_call"]
            for case in ("no_hooks", "one_forward_hook")
        }
        for lib in results
    }
    met = overhead["mininn"]["no_hooks"] <= overhead["torch"]["no_hooks"]
    report = {
        "what": "calls per second of an identity Module (higher is better); ratio = mininn / torch",
        "calls": args.calls,
        "repeats": args.repeats,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "versions": {"torch": _setup("torch")["version"], "mininn": _setup("mininn")["version"]},
        "results": results,
        "ratio_mininn_over_torch": ratios,
        "module_overhead_ns_over_direct_forward": overhead,
        "target_no_hook_overhead_at_most_torchs": met,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{'case':<18}{'torch calls/s':>16}{'mininn calls/s':>16}{'ratio':>8}")
    for case in CASES:
        t, m = results["torch"][case]["calls_per_s"], results["mininn"][case]["calls_per_s"]
        print(f"{case:<18}{t:>16,.0f}{m:>16,.0f}{ratios[case]:>8.2f}")
    for case in ("no_hooks", "one_forward_hook"):
        t, m = overhead["torch"][case], overhead["mininn"][case]
        print(f"overhead over forward() [{case}]: torch {t:.0f} ns, mininn {m:.0f} ns")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
