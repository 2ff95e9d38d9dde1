"""Helpers the torch-vs-mininn speed benchmarks ``forward.py`` and ``layers.py`` share.

A :class:`Pair` is a torch callable, its mininn twin and how closely their outputs agree;
:func:`time_pair` times one against the other, interleaved; :func:`print_table` and
:func:`report` shape the results, :func:`case_parser` the command line.
"""

from __future__ import annotations

import argparse
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _support import time_interleaved

import mininn
from mininn import nn

__all__ = [
    "Pair",
    "agreement",
    "case_parser",
    "copy_weights",
    "first_output",
    "forward_pair",
    "print_table",
    "report",
    "time_pair",
]


@dataclass
class Pair:
    """The two callables of a case and how closely their outputs agree."""

    run_torch: Callable[[], Any]
    run_mininn: Callable[[], Any]
    agreement: float  # max |mininn - torch| / max |torch| over the checked outputs


def copy_weights(t_model: torch.nn.Module, m_model: nn.Module) -> None:
    """Load torch's state dict into the mininn twin (strict: every key must match)."""
    state = {k: mininn.tensor(v.detach().cpu().numpy().copy()) for k, v in t_model.state_dict().items()}
    m_model.load_state_dict(state)


def first_output(out: Any) -> Any:
    """The output tensor of a layer that returns ``(output, state)``."""
    return out[0] if isinstance(out, tuple) else out


def agreement(m_out: Any, t_out: Any) -> float:
    """max |mininn - torch| / max |torch| of two outputs (the first of a tuple)."""
    ref = first_output(t_out).detach().numpy()
    diff = np.abs(first_output(m_out).detach().numpy() - ref).max()
    return float(diff / max(np.abs(ref).max(), 1e-30))


def forward_pair(t_model: torch.nn.Module, m_model: nn.Module, x: np.ndarray) -> Pair:
    """Eval-mode, no-grad forward of both models on ``x``."""
    t_model.eval()
    m_model.eval()
    tx, mx = torch.from_numpy(x), mininn.tensor(x)

    def run_torch() -> Any:
        with torch.no_grad():
            return t_model(tx)

    def run_mininn() -> Any:
        with mininn.no_grad():
            return m_model(mx)

    return Pair(run_torch, run_mininn, agreement(run_mininn(), run_torch()))


def time_pair(pair: Pair, description: str, target: float, repeats: int, warmup: int,
              budget_s: float) -> dict[str, Any]:
    """Interleaved runs: warm-up, then up to ``repeats`` timed pairs within ``budget_s``."""
    times = time_interleaved(pair.run_torch, pair.run_mininn, repeats, warmup, budget_s)
    return {
        "description": description,
        **times,
        "target": target,
        "meets_target": times["ratio"] <= target,
        "max_relative_difference": pair.agreement,
    }


def print_table(results: dict[str, dict[str, Any]], width: int = 18) -> None:
    """One line a case of :func:`time_pair` results, ``width`` characters for its name."""
    header = f"{'case':<{width}}{'torch ms':>11}{'mininn ms':>11}{'ratio':>8}{'target':>8}  ok   rel.diff"
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        ok = "yes" if r["meets_target"] else "NO"
        print(f"{name:<{width}}{r['torch_ms']:>11.2f}{r['mininn_ms']:>11.2f}{r['ratio']:>8.2f}"
              f"{r['target']:>8.2f}  {ok:<4} {r['max_relative_difference']:.1e}")


def report(setting: str, **sections: Any) -> dict[str, Any]:
    """A JSON report of :func:`time_pair` results: the machine and versions, the method
    (``setting``, then how :func:`time_pair` times), then ``sections``."""
    return {
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "load_average": os.getloadavg()},
        "versions": {"numpy": np.__version__, "torch": torch.__version__},
        "method": f"{setting}; torch and mininn runs interleaved; median of runs after warm-up; "
                  "ratio = mininn / torch",
        **sections,
    }


def case_parser(doc: str, output: Path, *, repeats: int, warmup: int) -> argparse.ArgumentParser:
    """The options of a benchmark of named cases: ``--repeats``, ``--warmup``, ``--budget``,
    ``--only``, ``--profile`` and ``--output``; ``doc``'s first paragraph describes it."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--warmup", type=int, default=warmup)
    parser.add_argument("--budget", type=float, default=20.0,
                        help="seconds of timed runs per case at most (after 3 runs)")
    parser.add_argument("--only", default=None, help="comma-separated case names")
    parser.add_argument("--profile", default=None, help="profile mininn on this case instead")
    parser.add_argument("--output", type=Path, default=output)
    return parser
