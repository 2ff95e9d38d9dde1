"""Forward-pass (and one training-step) speed: mininn vs torch, same machine, same threads.

Usage::

    python benchmarks/forward.py [--repeats 9] [--warmup 2] [--threads 1,2] [--only mlp,...]
                                 [--profile CASE]

Both libraries compute the same thing: each network is built in torch, and its
state dict is copied into the mininn twin, whose output is then checked against
torch's. Inference runs in eval mode under no-grad (torch then takes its fused
"fast path" for the transformer). Runs of the two libraries are interleaved and
the median over ``--repeats`` runs after ``--warmup`` runs is reported, so a
busy (shared) machine slows both alike.

Threads: NumPy's BLAS is pinned with ``threadpoolctl`` to N threads and
``torch.set_num_threads(N)``; ``--threads 1,2`` measures each count in turn
(default: the count NumPy's BLAS uses now). Without threadpoolctl both run with
their defaults, and the JSON says so. On a small machine shared with other
work, one thread gives the steadiest numbers: a BLAS that spins on a busy
core can stall for far longer than the work itself.
``OPENBLAS_CORETYPE``/``OPENBLAS_L2_SIZE`` can slow NumPy's OpenBLAS; unset
them for the benchmark's command (never in tests or CI), e.g.
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/forward.py``.
Whether they were set is recorded.

Targets (issue 4): MLP within 1.25x of torch, conv and transformer networks
within 2x, the MLP training step within 2.5x. ``--profile CASE`` prints where
mininn's time goes for one case (cProfile, cumulative).

Results go to ``benchmarks/results/forward.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _support import profile_calls, time_interleaved  # noqa: E402

import mininn  # noqa: E402
import mininn.nn.functional as F  # noqa: E402
import mininn.optim  # noqa: E402
from mininn import nn  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "forward.json"


@dataclass
class Case:
    """One comparison: a torch callable, its mininn twin, and the target ratio."""

    name: str
    description: str
    target: float
    run_torch: Callable[[], Any]
    run_mininn: Callable[[], Any]
    agreement: float  # max |mininn - torch| / max |torch| of the checked outputs


# ---- threads ---------------------------------------------------------------------------
@contextlib.contextmanager
def pinned_threads(requested: int | None) -> Iterator[dict[str, Any]]:
    """Pin NumPy's BLAS (threadpoolctl) and torch to the same thread count."""
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        yield {"pinned": False, "numpy_blas_threads": "default",
               "torch_threads": torch.get_num_threads(),
               "note": "threadpoolctl not installed: both libraries use their defaults"}
        return
    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    current = blas[0]["num_threads"] if blas else os.cpu_count() or 1
    n = requested or current
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    with threadpool_limits(limits=n, user_api="blas"):
        yield {"pinned": True, "numpy_blas_threads": n, "torch_threads": torch.get_num_threads(),
               "numpy_blas": [f"{i['internal_api']} {i['version']} ({i.get('architecture')})"
                              for i in blas]}
    torch.set_num_threads(before)


# ---- weight copying and checks -------------------------------------------------------------
def copy_weights(t_model: torch.nn.Module, m_model: nn.Module) -> None:
    """Load torch's state dict into the mininn twin (strict: every key must match)."""
    state = {k: mininn.tensor(v.detach().cpu().numpy().copy()) for k, v in t_model.state_dict().items()}
    m_model.load_state_dict(state)


def agreement(m_out: Any, t_out: Any) -> float:
    ref = t_out.detach().numpy()
    diff = np.abs(m_out.detach().numpy() - ref).max()
    return float(diff / max(np.abs(ref).max(), 1e-30))


def inference_case(name: str, description: str, target: float, t_model: torch.nn.Module,
                   m_model: nn.Module, x: np.ndarray) -> Case:
    t_model.eval()
    m_model.eval()
    tx, mx = torch.from_numpy(x), mininn.tensor(x)

    def run_torch() -> Any:
        with torch.no_grad():
            return t_model(tx)

    def run_mininn() -> Any:
        with mininn.no_grad():
            return m_model(mx)

    return Case(name, description, target, run_torch, run_mininn,
                agreement(run_mininn(), run_torch()))


# ---- networks ------------------------------------------------------------------------------
def mlp(lib: Any) -> Any:
    return lib.nn.Sequential(lib.nn.Linear(784, 1024), lib.nn.ReLU(), lib.nn.Linear(1024, 1024),
                             lib.nn.ReLU(), lib.nn.Linear(1024, 10))


def simple_model(lib: Any) -> Any:
    """The seed's SimpleModel: two 5x5 convolutions, ReLU after each."""

    class SimpleModel(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = lib.nn.Conv2d(1, 20, 5)
            self.conv2 = lib.nn.Conv2d(20, 20, 5)

        def forward(self, x: Any) -> Any:
            relu = lib.nn.functional.relu
            return relu(self.conv2(relu(self.conv1(x))))

    return SimpleModel()


def torch_resnet18() -> torch.nn.Module:
    """torchvision's resnet18 layout (torchvision itself is not installed here)."""
    tnn = torch.nn

    class BasicBlock(tnn.Module):
        def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
            super().__init__()
            self.conv1 = tnn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = tnn.BatchNorm2d(planes)
            self.relu = tnn.ReLU(inplace=True)
            self.conv2 = tnn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = tnn.BatchNorm2d(planes)
            self.downsample = None
            if stride != 1 or inplanes != planes:
                self.downsample = tnn.Sequential(tnn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                                 tnn.BatchNorm2d(planes))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    class ResNet(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = tnn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = tnn.BatchNorm2d(64)
            self.relu = tnn.ReLU(inplace=True)
            self.maxpool = tnn.MaxPool2d(3, 2, 1)
            inplanes = 64
            for i, planes in enumerate((64, 128, 256, 512), 1):
                stride = 1 if i == 1 else 2
                blocks = tnn.Sequential(BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes))
                setattr(self, f"layer{i}", blocks)
                inplanes = planes
            self.avgpool = tnn.AdaptiveAvgPool2d((1, 1))
            self.fc = tnn.Linear(512, 1000)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    model = ResNet()
    with torch.no_grad():  # non-trivial batch-norm statistics so eval mode is not an identity
        for m in model.modules():
            if isinstance(m, tnn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.0)
    return model


def mininn_resnet18() -> nn.Module:
    """``models.create("resnet18")`` (torchvision's layout and key names)."""
    from models import registry

    return registry.create("resnet18")


def encoder(lib: Any) -> Any:
    """6 post-norm layers, d_model 384, 6 heads, feed-forward 1536, batch-first."""
    layer = lib.nn.TransformerEncoderLayer(384, 6, 1536, batch_first=True)
    return lib.nn.TransformerEncoder(layer, 6)


# ---- cases ---------------------------------------------------------------------------------
def build_cases(only: set[str] | None) -> list[Case]:
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    cases = []

    def want(name: str) -> bool:
        return only is None or name in only

    if want("mlp"):
        t, m = mlp(torch), mlp(mininn)
        copy_weights(t, m)
        x = rng.standard_normal((256, 784)).astype(np.float32)
        cases.append(inference_case("mlp", "MLP 784-1024-1024-10, batch 256", 1.25, t, m, x))
    if want("simple_cnn"):
        t, m = simple_model(torch), simple_model(mininn)
        copy_weights(t, m)
        x = rng.standard_normal((32, 1, 28, 28)).astype(np.float32)
        cases.append(inference_case("simple_cnn", "SimpleModel 2x Conv2d 5x5, batch 32, 28x28", 2.0,
                                    t, m, x))
    for batch in (1, 8):
        if want(f"resnet18_b{batch}"):
            t, m = torch_resnet18(), mininn_resnet18()
            copy_weights(t, m)
            x = rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)
            cases.append(inference_case(f"resnet18_b{batch}", f"ResNet-18, batch {batch}, 224x224",
                                        2.0, t, m, x))
    if want("transformer"):
        with _quiet():
            t, m = encoder(torch), encoder(mininn)
        copy_weights(t, m)
        x = rng.standard_normal((8, 128, 384)).astype(np.float32)
        cases.append(inference_case("transformer", "TransformerEncoder 6x(384, 6 heads, ffn 1536), "
                                    "seq 128, batch 8", 2.0, t, m, x))
    if want("mlp_train_step"):
        cases.append(train_step_case(rng))
    return cases


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def train_step_case(rng: np.random.Generator) -> Case:
    """forward + cross-entropy + backward + SGD(momentum) step of the MLP, batch 256."""
    t, m = mlp(torch), mlp(mininn)
    copy_weights(t, m)
    x = rng.standard_normal((256, 784)).astype(np.float32)
    y = rng.integers(0, 10, 256)
    tx, ty, mx, my = torch.from_numpy(x), torch.from_numpy(y), mininn.tensor(x), mininn.tensor(y)
    t_opt = torch.optim.SGD(t.parameters(), lr=0.01, momentum=0.9)
    m_opt = mininn.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)

    def run_torch() -> Any:
        t_opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(t(tx), ty)
        loss.backward()
        t_opt.step()
        return loss

    def run_mininn() -> Any:
        m_opt.zero_grad()
        loss = F.cross_entropy(m(mx), my)
        loss.backward()
        m_opt.step()
        return loss

    losses = agreement(run_mininn(), run_torch())
    losses = max(losses, agreement(run_mininn(), run_torch()))  # after one step each
    weights = max(agreement(mp, tp) for mp, tp in zip(m.parameters(), t.parameters()))
    return Case("mlp_train_step", "MLP forward+backward+SGD step, batch 256", 2.5, run_torch,
                run_mininn, max(losses, weights))


# ---- timing --------------------------------------------------------------------------------
def time_case(case: Case, repeats: int, warmup: int, budget_s: float) -> dict[str, Any]:
    """Interleaved runs: warm-up, then up to ``repeats`` timed pairs within ``budget_s``."""
    times = time_interleaved(case.run_torch, case.run_mininn, repeats, warmup, budget_s)
    return {
        "description": case.description,
        **times,
        "target": case.target,
        "meets_target": times["ratio"] <= case.target,
        "max_relative_difference": case.agreement,
    }


def profile(case: Case, runs: int = 3) -> None:
    profile_calls(case.run_mininn, runs, cumulative=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--budget", type=float, default=20.0,
                        help="seconds of timed runs per case at most (after 3 runs)")
    parser.add_argument("--threads", default=None, help="thread counts to measure, e.g. 1,2")
    parser.add_argument("--only", default=None, help="comma-separated case names")
    parser.add_argument("--profile", default=None, help="profile mininn on this case instead")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    counts = [int(n) for n in args.threads.split(",")] if args.threads else [None]
    if args.profile:
        with pinned_threads(counts[0]):
            (case,) = build_cases({args.profile})
            profile(case)
        return 0
    configs = []
    for count in counts:
        with pinned_threads(count) as threads:
            cases = build_cases(only)
            results = {c.name: time_case(c, args.repeats, args.warmup, args.budget) for c in cases}
        print_table(results, threads)
        configs.append({"threads": threads, "cases": results})
    report = {
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "load_average": os.getloadavg()},
        "versions": {"numpy": np.__version__, "torch": torch.__version__},
        "openblas_env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
        "method": "eval + no_grad; torch and mininn runs interleaved; median of runs after "
                  "warm-up; ratio = mininn / torch",
        "runs": configs,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.output}")
    return 0


def print_table(results: dict[str, dict[str, Any]], threads: dict[str, Any]) -> None:
    print(f"\nthreads: numpy BLAS {threads['numpy_blas_threads']}, torch {threads['torch_threads']}")
    header = f"{'case':<16}{'torch ms':>11}{'mininn ms':>11}{'ratio':>8}{'target':>8}  ok   rel.diff"
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        ok = "yes" if r["meets_target"] else "NO"
        print(f"{name:<16}{r['torch_ms']:>11.2f}{r['mininn_ms']:>11.2f}{r['ratio']:>8.2f}"
              f"{r['target']:>8.2f}  {ok:<4} {r['max_relative_difference']:.1e}")


if __name__ == "__main__":
    sys.exit(main())
