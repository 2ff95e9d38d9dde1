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

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _support import profile_calls, time_interleaved  # noqa: E402

import mininn  # noqa: E402
from mininn import nn  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "layers.json"


@dataclass
class Pair:
    """The two callables of a case and how closely their outputs agree."""

    run_torch: Callable[[], Any]
    run_mininn: Callable[[], Any]
    agreement: float  # max |mininn - torch| / max |torch| over the checked outputs


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
def copy_weights(t_model: torch.nn.Module, m_model: nn.Module) -> None:
    """Load torch's state dict into the mininn twin (strict: every key must match)."""
    state = {k: mininn.tensor(v.detach().cpu().numpy().copy()) for k, v in t_model.state_dict().items()}
    m_model.load_state_dict(state)


def _first(out: Any) -> Any:
    """The output tensor of a layer that returns ``(output, state)``."""
    return out[0] if isinstance(out, tuple) else out


def agreement(m_out: Any, t_out: Any) -> float:
    ref = _first(t_out).detach().numpy()
    diff = np.abs(_first(m_out).detach().numpy() - ref).max()
    return float(diff / max(np.abs(ref).max(), 1e-30))


def forward_pair(t_layer: torch.nn.Module, m_layer: nn.Module, x: np.ndarray) -> Pair:
    """Eval-mode, no-grad forward of both layers on ``x``."""
    t_layer.eval()
    m_layer.eval()
    tx, mx = torch.from_numpy(x), mininn.tensor(x)

    def run_torch() -> Any:
        with torch.no_grad():
            return t_layer(tx)

    def run_mininn() -> Any:
        with mininn.no_grad():
            return m_layer(mx)

    return Pair(run_torch, run_mininn, agreement(run_mininn(), run_torch()))


def train_step_pair(t_layer: torch.nn.Module, m_layer: nn.Module, x: np.ndarray) -> Pair:
    """Forward + ``output.sum()`` + backward into the parameters and the input, grads zeroed first."""
    t_layer.train()
    m_layer.train()
    tx = torch.from_numpy(x).requires_grad_(True)
    mx = mininn.tensor(x, requires_grad=True)

    def run_torch() -> Any:
        t_layer.zero_grad()
        tx.grad = None
        out = t_layer(tx)
        _first(out).sum().backward()
        return out

    def run_mininn() -> Any:
        m_layer.zero_grad()
        mx.grad = None
        out = m_layer(mx)
        _first(out).sum().backward()
        return out

    out_agreement = agreement(run_mininn(), run_torch())
    grads = [(mp.grad, tp.grad) for mp, tp in zip(m_layer.parameters(), t_layer.parameters())]
    grads.append((mx.grad, tx.grad))
    grad_agreement = max(agreement(m, t) for m, t in grads)
    return Pair(run_torch, run_mininn, max(out_agreement, grad_agreement))


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


@case("lstm_forward", f"LSTM forward (no_grad), {RNN_SHAPE}", 1.5)
def lstm_forward() -> Pair:
    return forward_pair(*_recurrent("LSTM"))


@case("lstm_train_step", f"LSTM forward+backward, {RNN_SHAPE}", 1.5)
def lstm_train_step() -> Pair:
    return train_step_pair(*_recurrent("LSTM"))


@case("gru_forward", f"GRU forward (no_grad), {RNN_SHAPE}", 1.5)
def gru_forward() -> Pair:
    return forward_pair(*_recurrent("GRU"))


@case("gru_train_step", f"GRU forward+backward, {RNN_SHAPE}", 1.5)
def gru_train_step() -> Pair:
    return train_step_pair(*_recurrent("GRU"))


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


# ---- timing ----------------------------------------------------------------------------------
def time_case(c: Case, pair: Pair, repeats: int, warmup: int, budget_s: float) -> dict[str, Any]:
    """Interleaved runs: warm-up, then up to ``repeats`` timed pairs within ``budget_s``."""
    times = time_interleaved(pair.run_torch, pair.run_mininn, repeats, warmup, budget_s)
    return {
        "description": c.description,
        **times,
        "target": c.target,
        "meets_target": times["ratio"] <= c.target,
        "max_relative_difference": pair.agreement,
    }


def profile(c: Case, runs: int = 3) -> None:
    pair = c.build()
    profile_calls(pair.run_mininn, runs)


def print_table(results: dict[str, dict[str, Any]]) -> None:
    header = f"{'case':<18}{'torch ms':>11}{'mininn ms':>11}{'ratio':>8}{'target':>8}  ok   rel.diff"
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        ok = "yes" if r["meets_target"] else "NO"
        print(f"{name:<18}{r['torch_ms']:>11.2f}{r['mininn_ms']:>11.2f}{r['ratio']:>8.2f}"
              f"{r['target']:>8.2f}  {ok:<4} {r['max_relative_difference']:.1e}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--budget", type=float, default=20.0,
                        help="seconds of timed runs per case at most (after 3 runs)")
    parser.add_argument("--only", default=None, help="comma-separated case names")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--profile", default=None, help="profile mininn on this case instead")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.list:
        for c in CASES.values():
            print(f"{c.name:<18}{c.description}")
        return 0
    if args.profile:
        profile(CASES[args.profile])
        return 0
    names = args.only.split(",") if args.only else list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; known: {list(CASES)}")
    results = {}
    for name in names:
        c = CASES[name]
        results[name] = time_case(c, c.build(), args.repeats, args.warmup, args.budget)
    print_table(results)
    report = {
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "load_average": os.getloadavg()},
        "versions": {"numpy": np.__version__, "torch": torch.__version__},
        "threads": {"torch": torch.get_num_threads(),
                    **{k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}},
        "method": "one thread each; torch and mininn runs interleaved; median of runs after warm-up; "
                  "ratio = mininn / torch",
        "cases": results,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
