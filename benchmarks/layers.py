"""Per-layer speed: mininn vs torch on the same weights and inputs, one thread each.

Usage::

    python benchmarks/layers.py [--repeats 7] [--warmup 1] [--budget 20] [--only lstm_forward,...]
                                [--list] [--profile CASE]

Every case builds a torch layer, copies its state dict into the mininn twin,
checks that the outputs agree, then times both, interleaved run by run (a
shared machine slows both alike), and reports the medians and their ratio
(mininn / torch). Threads are pinned to one before NumPy and torch load
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, and
``torch.set_num_threads(1)``): one thread gives the steadiest numbers on a
small shared machine, and measures the code rather than the thread pool.

Cases live in a registry: add one with ``@case("name", "what it is", target)``
on a function that returns a :class:`Pair` of callables (torch, mininn) and
their agreement. Each ``*_forward`` case runs under no-grad in eval mode; each
``*_train_step`` case runs forward + a sum loss + backward with gradients
zeroed first (no optimizer: the layer is what is measured).

Results go to ``benchmarks/results/layers.json``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _compare import (  # noqa: E402
    Pair,
    agreement,
    case_parser,
    copy_weights,
    first_output,
    forward_pair,
    print_table,
    report,
    time_pair,
)
from _support import profile_calls, write_report  # noqa: E402

import mininn  # noqa: E402
from mininn import nn  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "layers.json"


@dataclass
class Case:
    name: str
    description: str
    target: float
    build: Callable[[], Pair]


CASES: dict[str, Case] = {}


def case(name: str, description: str, target: float) -> Callable[[Callable[[], Pair]], Callable[[], Pair]]:
    """Register ``build`` (returning a :class:`Pair`) as benchmark case ``name``."""

    def register(build: Callable[[], Pair]) -> Callable[[], Pair]:
        CASES[name] = Case(name, description, target, build)
        return build

    return register


# ---- helpers ---------------------------------------------------------------------------------
def train_step_pair(t_layer: torch.nn.Module, m_layer: nn.Module, x: np.ndarray) -> Pair:
    """Forward + ``output.sum()`` + backward into the parameters and the input, grads zeroed first."""
    t_layer.train()
    m_layer.train()
    tx = torch.from_numpy(x).requires_grad_(True)
    mx = mininn.tensor(x, requires_grad=True)
    run_torch, run_mininn = _train_step(t_layer, tx), _train_step(m_layer, mx)
    out_agreement = agreement(run_mininn(), run_torch())
    grads = [(mp.grad, tp.grad) for mp, tp in zip(m_layer.parameters(), t_layer.parameters())]
    grads.append((mx.grad, tx.grad))
    grad_agreement = max(agreement(m, t) for m, t in grads)
    return Pair(run_torch, run_mininn, max(out_agreement, grad_agreement))


def _train_step(layer: Any, x: Any) -> Callable[[], Any]:
    """One step of ``layer`` (torch's or mininn's: the same calls) on ``x``, gradients zeroed first."""

    def run() -> Any:
        layer.zero_grad()
        x.grad = None
        out = layer(x)
        first_output(out).sum().backward()
        return out

    return run


# ---- cases -----------------------------------------------------------------------------------
SEQ, BATCH, FEATURES, HIDDEN, LAYERS = 128, 32, 256, 256, 2
RNN_SHAPE = f"seq {SEQ}, batch {BATCH}, input {FEATURES}, hidden {HIDDEN}, {LAYERS} layers"


def _recurrent(cls_name: str) -> tuple[torch.nn.Module, nn.Module, np.ndarray]:
    torch.manual_seed(0)
    t_layer = getattr(torch.nn, cls_name)(FEATURES, HIDDEN, LAYERS)
    m_layer = getattr(nn, cls_name)(FEATURES, HIDDEN, LAYERS)
    copy_weights(t_layer, m_layer)
    x = np.random.default_rng(0).standard_normal((SEQ, BATCH, FEATURES)).astype(np.float32)
    return t_layer, m_layer, x


def _recurrent_cases(cls_name: str) -> None:
    """Register ``<name>_forward`` and ``<name>_train_step`` for ``nn.<cls_name>``."""
    name = cls_name.lower()
    case(f"{name}_forward", f"{cls_name} forward (no_grad), {RNN_SHAPE}", 1.5)(
        lambda: forward_pair(*_recurrent(cls_name))
    )
    case(f"{name}_train_step", f"{cls_name} forward+backward, {RNN_SHAPE}", 1.5)(
        lambda: train_step_pair(*_recurrent(cls_name))
    )


for _cls_name in ("LSTM", "GRU"):
    _recurrent_cases(_cls_name)


class _Interpolate(torch.nn.Module):
    def forward(self, x: Any) -> Any:
        return torch.nn.functional.interpolate(x, scale_factor=4, mode="bilinear", align_corners=False)


class _MininnInterpolate(nn.Module):
    def forward(self, x: Any) -> Any:
        return nn.functional.interpolate(x, scale_factor=4, mode="bilinear", align_corners=False)


@case("interpolate_4x", "F.interpolate bilinear, scale 4, on (8, 64, 64, 64)", 1.5)
def interpolate_bilinear() -> Pair:
    x = np.random.default_rng(0).standard_normal((8, 64, 64, 64)).astype(np.float32)
    return forward_pair(_Interpolate(), _MininnInterpolate(), x)


@case("conv3d_forward", "Conv3d 16->32, kernel 3, padding 1, on (2, 16, 16, 32, 32)", 1.5)
def conv3d_forward() -> Pair:
    torch.manual_seed(0)
    t_layer = torch.nn.Conv3d(16, 32, 3, padding=1)
    m_layer = nn.Conv3d(16, 32, 3, padding=1)
    copy_weights(t_layer, m_layer)
    x = np.random.default_rng(0).standard_normal((2, 16, 16, 32, 32)).astype(np.float32)
    return forward_pair(t_layer, m_layer, x)


TRANSFORMER = dict(d_model=256, nhead=8, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=1024,
                   dropout=0.0, batch_first=True)
SRC, TGT = (16, 64), (16, 48)  # (batch, tokens)


@case("transformer", f"nn.Transformer encoder-decoder, d_model 256, 2+2 layers, src {SRC}, tgt {TGT}", 1.5)
def transformer_forward() -> Pair:
    torch.manual_seed(0)
    t_model = torch.nn.Transformer(**TRANSFORMER).eval()
    m_model = nn.Transformer(**TRANSFORMER).eval()
    copy_weights(t_model, m_model)
    rng = np.random.default_rng(0)
    src = rng.standard_normal((*SRC, TRANSFORMER["d_model"])).astype(np.float32)
    tgt = rng.standard_normal((*TGT, TRANSFORMER["d_model"])).astype(np.float32)
    t_mask = torch.nn.Transformer.generate_square_subsequent_mask(TGT[1])
    m_mask = nn.Transformer.generate_square_subsequent_mask(TGT[1])
    t_src, t_tgt = torch.from_numpy(src), torch.from_numpy(tgt)
    m_src, m_tgt = mininn.tensor(src), mininn.tensor(tgt)

    def run_torch() -> Any:
        with torch.no_grad():
            return t_model(t_src, t_tgt, tgt_mask=t_mask)

    def run_mininn() -> Any:
        with mininn.no_grad():
            return m_model(m_src, m_tgt, tgt_mask=m_mask)

    return Pair(run_torch, run_mininn, agreement(run_mininn(), run_torch()))


# ---- main ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = case_parser(__doc__, RESULTS, repeats=7, warmup=1)
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.list:
        for c in CASES.values():
            print(f"{c.name:<18}{c.description}")
        return 0
    if args.profile:
        profile_calls(CASES[args.profile].build().run_mininn)
        return 0
    names = args.only.split(",") if args.only else list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {list(CASES)}")
    results = {}
    for name in names:
        c = CASES[name]
        results[name] = time_pair(c.build(), c.description, c.target, args.repeats, args.warmup, args.budget)
    print_table(results)
    threads = {"torch": torch.get_num_threads(),
               **{k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}}
    write_report(args.output, report("one thread each", threads=threads, cases=results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
