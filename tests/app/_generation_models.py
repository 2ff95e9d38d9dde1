"""Text-generation models for the protocol tests; ``python _generation_models.py`` registers them and serves.

``test-tiny-lm`` is the engine tests' tiny GPT (``tests/app/runtime/_tiny_lm.py``:
random weights, a real per-sequence KV cache, UTF-8 bytes as tokens, a chat
template ``role: content`` per line) served from a model folder like any
model: ``model.json`` names the architecture, ``1/weights.safetensors`` holds
its state dict, and ``/infer`` takes ``input_ids`` INT64 ``[-1, -1]`` and answers
``logits``. Its generator is a ``TinyGenerator`` over the servable's module (the
registry's ``generator`` factory, as the zoo's ``llama`` has one).

Its config: ``context`` (the context length), ``fail_at`` (the generator raises
once a sequence reaches this many tokens: a model failing mid-generation; 0:
never), ``delay_ms`` (each decode step sleeps this long: a slow model),
``tokenizer`` (false: token ids only) and ``chat_template`` (false: no chat
template, plain prompts only).

:func:`generation_repository` writes the protocol tests' repository: ``tiny``
(context 64), ``tiny-ids`` (no tokenizer), ``tiny-plain`` (no chat template),
``faulty`` (fails at 12 tokens),
``slow`` (context 512, 20 ms a step) and the ``mlp`` models of ``_app_support``
(not text models).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "runtime"))  # _tiny_lm: the engine tests' model

from _tiny_lm import VOCAB, ByteTokenizer, TinyGenerator, TinyLM  # noqa: E402

import mininn  # noqa: E402
import models  # noqa: E402
from models.signature import Signature, TensorSpec  # noqa: E402

TINY = "test-tiny-lm"


@dataclass(frozen=True)
class TinyLMConfig:
    dim: int = 32
    layers: int = 1
    heads: int = 4
    context: int = 64  # most prompt + generated tokens
    fail_at: int = 0  # the generator raises once a sequence has this many tokens; 0: never
    delay_ms: float = 0.0  # each decode step sleeps this long
    tokenizer: bool = True  # false: token ids only
    chat_template: bool = True  # false: a tokenizer without a chat template (plain prompts only)


class PlainTokenizer(ByteTokenizer):
    """The byte tokenizer without a chat template."""

    has_chat_template = False


def build(config: TinyLMConfig) -> TinyLM:
    return TinyLM(dim=config.dim, layers=config.layers, heads=config.heads, context=config.context)


def register() -> None:
    """Register ``test-tiny-lm`` (replacing an earlier registration)."""
    models.register(
        models.Architecture(
            name=TINY,
            config_cls=TinyLMConfig,
            build=build,
            signature=lambda c: Signature(
                [TensorSpec("input_ids", "INT64", (-1, -1))], [TensorSpec("logits", "FP32", (-1, -1, VOCAB))]
            ),
            generator=generator_for,
        ),
        replace=True,
    )


def generator_for(servable: Any) -> TinyGenerator:
    """The engine's view of a loaded ``test-tiny-lm`` servable."""
    config: TinyLMConfig = servable.config
    fail_at = config.fail_at

    def fails(tokens: list[int]) -> bool:
        return 0 < fail_at <= len(tokens)

    tokenizer = (ByteTokenizer() if config.chat_template else PlainTokenizer()) if config.tokenizer else None
    generator = TinyGenerator(servable.module, tokenizer, config.context, fails if fail_at else None)
    if config.delay_ms:
        decode, delay = generator.decode, config.delay_ms / 1e3

        def slow_decode(seqs: list[Any], token_ids: list[int]) -> Any:
            time.sleep(delay)
            return decode(seqs, token_ids)

        generator.decode = slow_decode  # type: ignore[method-assign]
    return generator


def write_tiny_lm(root: Path, name: str, seed: int = 0, **config: Any) -> Path:
    """A ``test-tiny-lm`` model folder with random weights drawn from ``seed`` (mostly printable ASCII)."""
    import json

    folder = root / name
    (folder / "1").mkdir(parents=True, exist_ok=True)
    mininn.manual_seed(seed)
    module = build(TinyLMConfig(**config))
    with mininn.no_grad():
        module.lm_head.bias[32:127] += 4.0
    mininn.save(module.state_dict(), str(folder / "1" / "weights.safetensors"))
    (folder / "model.json").write_text(json.dumps({"architecture": TINY, "config": config}))
    return folder


def generation_repository(root: Path) -> Path:
    """The protocol tests' repository (see the module docstring)."""
    sys.path.insert(0, str(HERE))
    from _app_support import make_repository

    make_repository(root)
    write_tiny_lm(root, "tiny", seed=1)
    write_tiny_lm(root, "tiny-ids", seed=2, tokenizer=False)
    write_tiny_lm(root, "tiny-plain", seed=5, chat_template=False)
    write_tiny_lm(root, "faulty", seed=3, fail_at=12)
    write_tiny_lm(root, "slow", seed=4, context=512, delay_ms=20)
    return root


if __name__ == "__main__":
    register()
    from app.__main__ import main

    sys.exit(main([]))
