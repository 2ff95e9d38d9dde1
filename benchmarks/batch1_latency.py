"""Batch-1 latency of small models: mininn against torch eager, one thread each.

Usage::

    python benchmarks/batch1_latency.py [--repeats 2000] [--warmup 50] [--budget 20] [--only mlp,cnn,...]
                                        [--profile CASE]

The models the issue names, built in torch, their state dicts loaded into mininn twins
(strict), outputs checked to agree within 1e-5 (absolute, against outputs of magnitude
about 1) before any timing:

- ``mlp``: ``Linear(784, 256) -> ReLU -> Linear(256, 10)`` on 1x784;
- ``cnn``: ``Conv2d(1, 16, 3, padding=1) -> BatchNorm2d(16) -> ReLU -> MaxPool2d(2) ->
  Conv2d(16, 32, 3, padding=1) -> BatchNorm2d(32) -> ReLU -> MaxPool2d(2) -> Flatten ->
  Linear(32*7*7, 10)`` on 1x1x28x28 (batch-norm statistics set away from 0 and 1 so that
  eval mode is not an identity);
- ``lstm_t20`` / ``lstm_t100``: ``LSTM(64, 64, num_layers=2, bidirectional=True,
  batch_first=True)`` on 1x20x64 and 1x100x64 (its whole output tuple).

Both run in eval mode under no-grad. Threads are pinned to one before NumPy and torch
load (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``), then with
``threadpoolctl`` and ``torch.set_num_threads(1)``. Runs of the two libraries alternate
call by call (``_support.time_interleaved``) and the medians are compared: ratio =
mininn / torch. Targets (issue 31): MLP at most 1.0x, CNN 1.2x, LSTM 1.5x.
``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` are recorded as ``forward.py`` does (unset them
for the command if they are set: they can slow NumPy's OpenBLAS).

Results go to ``benchmarks/results/batch1_latency.json``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _compare import Pair, case_parser, copy_weights, forward_pair, print_table, report, time_pair  # noqa: E402
from _support import profile_calls, write_report  # noqa: E402

import mininn  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "batch1_latency.json"
TOLERANCE = 1e-5


def mlp(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )


def lstm(lib: Any) -> Any:
    return lib.nn.LSTM(input_size=64, hidden_size=64, num_layers=2, bidirectional=True, batch_first=True)


def _set_batch_norm_statistics(model: torch.nn.Module) -> None:
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)


def _flat(out: Any) -> list[np.ndarray]:
    """Every tensor of an output (a tensor, or nested tuples such as LSTM's ``(out, (h, c))``)."""
    if isinstance(out, (tuple, list)):
        return [a for item in out for a in _flat(item)]
    return [np.asarray(out.detach().numpy())]


def twin_pair(build: Callable[[Any], Any], shape: tuple[int, ...]) -> Pair:
    """``build(torch)`` and ``build(mininn)`` on the same weights and input, eval mode, no-grad.

    Raises:
        AssertionError: an output differs from torch's by more than :data:`TOLERANCE`.
    """
    torch.manual_seed(0)
    t_model = build(torch)
    _set_batch_norm_statistics(t_model)
    m_model = build(mininn)
    copy_weights(t_model, m_model)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    pair = forward_pair(t_model, m_model, x)
    worst, relative = 0.0, 0.0
    for m_out, t_out in zip(_flat(pair.run_mininn()), _flat(pair.run_torch()), strict=True):
        assert m_out.shape == t_out.shape, f"{build.__name__}: shapes {m_out.shape} and {t_out.shape}"
        difference = float(np.abs(m_out - t_out).max())
        worst = max(worst, difference)
        relative = max(relative, difference / max(float(np.abs(t_out).max()), 1e-30))
    assert worst <= TOLERANCE, f"{build.__name__} on {shape}: outputs differ by {worst:.2e} > {TOLERANCE}"
    return Pair(pair.run_torch, pair.run_mininn, relative)


CASES: dict[str, tuple[str, float, Callable[[], Pair]]] = {
    "mlp": ("MLP 784-256-10, 1x784", 1.0, lambda: twin_pair(mlp, (1, 784))),
    "cnn": ("small CNN (2 conv, BN, pool, linear), 1x1x28x28", 1.2, lambda: twin_pair(cnn, (1, 1, 28, 28))),
    "lstm_t20": ("LSTM 2 layers, bidirectional, hidden 64, 1x20x64", 1.5,
                 lambda: twin_pair(lstm, (1, 20, 64))),
    "lstm_t100": ("the same LSTM, 1x100x64", 1.5, lambda: twin_pair(lstm, (1, 100, 64))),
}


def main(argv: list[str] | None = None) -> int:
    parser = case_parser(__doc__, RESULTS, repeats=2000, warmup=50)
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    names = args.only.split(",") if args.only else list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {list(CASES)}")
    with threadpool_limits(limits=1, user_api="blas"):
        if args.profile:
            profile_calls(CASES[args.profile][2]().run_mininn, runs=200, cumulative=True)
            return 0
        results = {}
        for name in names:
            description, target, build = CASES[name]
            results[name] = time_pair(build(), description, target, args.repeats, args.warmup, args.budget)
    print_table(results, width=12)
    threads = {"torch": torch.get_num_threads(), "numpy_blas": "1 (threadpoolctl)",
               **{k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}
    openblas_env = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    write_report(args.output, report("eval + no_grad, batch 1, one thread each", threads=threads,
                                     openblas_env=openblas_env, tolerance=TOLERANCE, cases=results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
