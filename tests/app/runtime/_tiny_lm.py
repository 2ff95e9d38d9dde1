"""A tiny causal language model with a real per-sequence KV cache, written to issue 28's seam 1.

:class:`TinyLM` is a mininn GPT (learned positions, pre-norm blocks,
multi-head attention, GELU MLP) with random weights; :class:`TinyGenerator`
drives it as the generation engine expects: ``prefill`` runs a prompt through
the blocks and keeps each layer's keys and values in the sequence's cache,
``decode`` runs one token per sequence with the projections batched over the
rows and attention per row over that row's own cache. :class:`ByteTokenizer`
is UTF-8 bytes (ids 0-255) plus ``<s>`` and ``</s>``, so a character of two or
more bytes spans tokens (as in byte-level BPE).

The model works in float64 by default: OpenBLAS rounds a row of ``x @ W.T``
differently for different row counts, which in float64 is far below any
sampling decision of these tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import mininn
import mininn.nn.functional as F
from mininn import nn
from models.errors import InputError

BOS, EOS = 256, 257
VOCAB = 258


class ByteTokenizer:
    """UTF-8 bytes as tokens, ``<s>`` (256) first when special tokens are added, ``</s>`` (257) last."""

    eos_token_ids = (EOS,)
    bos_token_id = BOS
    has_chat_template = True

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        ids = list(text.encode("utf-8"))
        return [BOS, *ids] if add_special_tokens else ids

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        out, run = [], bytearray()
        for token in ids:
            if token < 256:
                run.append(int(token))
                continue
            out.append(run.decode("utf-8", errors="replace"))
            run = bytearray()
            if not skip_special_tokens:
                out.append("<s>" if token == BOS else "</s>")
        out.append(run.decode("utf-8", errors="replace"))
        return "".join(out)

    def apply_chat_template(
        self, messages: list[dict[str, Any]], *, add_generation_prompt: bool = True
    ) -> str:
        lines = []
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("content"), str):
                raise InputError(f"messages[{index}] must be an object with a string 'content'")
            if message.get("role") not in ("system", "user", "assistant"):
                raise InputError(
                    f"messages[{index}] has role {message.get('role')!r}; use system, user or assistant"
                )
            lines.append(f"{message['role']}: {message['content']}\n")
        return "".join(lines) + ("assistant:" if add_generation_prompt else "")


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def mlp(self, x: mininn.Tensor) -> mininn.Tensor:
        return self.out(F.gelu(self.fc(self.ln_2(x))))


class TinyLM(nn.Module):
    """``forward(ids[B, T]) -> logits[B, T, V]``: the whole sequence, causal, no cache."""

    def __init__(
        self, vocab: int = VOCAB, dim: int = 64, layers: int = 2, heads: int = 4, context: int = 512
    ):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, ids: mininn.Tensor) -> mininn.Tensor:
        _, t = ids.shape
        x = self.wte(ids) + self.wpe(mininn.arange(t))
        for block in self.blocks:
            h = block.qkv(block.ln_1(x))
            q, k, v = (_heads(part, block.heads) for part in h.chunk(3, dim=-1))  # (B, nh, T, hs)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + block.proj(y.transpose(1, 2).reshape(x.shape))
            x = x + block.mlp(x)
        return self.lm_head(self.ln_f(x))


def _heads(x: mininn.Tensor, heads: int) -> mininn.Tensor:
    b, t, d = x.shape
    return x.reshape(b, t, heads, d // heads).transpose(1, 2)


@dataclass
class Cache:
    """One sequence: its tokens and, per layer, keys and values ``(nh, t, hs)`` as host arrays."""

    tokens: list[int] = field(default_factory=list)
    keys: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    released: bool = False


class TinyGenerator:
    """The engine's view of :class:`TinyLM`.

    Args:
        module: the model (eval mode).
        tokenizer: its tokenizer, or None (token ids only).
        context_length: most prompt plus generated tokens.
        fail_when: raise ``RuntimeError`` in ``prefill``/``decode`` for a sequence whose tokens
            (prompt and generated) make it true: a model that fails mid-generation.
    """

    def __init__(
        self,
        module: TinyLM,
        tokenizer: ByteTokenizer | None = None,
        context_length: int = 512,
        fail_when: Callable[[list[int]], bool] | None = None,
    ) -> None:
        self.module = module
        self.tokenizer = tokenizer
        self.context_length = context_length
        self.vocab_size = module.lm_head.out_features
        self.fail_when = fail_when
        self.live: set[int] = set()  # ids of sequences not yet released
        self.decode_rows: list[int] = []  # rows of each decode call

    def new_sequence(self) -> Cache:
        cache = Cache()
        self.live.add(id(cache))
        return cache

    def release(self, seq: Cache) -> None:
        seq.released = True
        self.live.discard(id(seq))

    def prefill(self, seq: Cache, token_ids: list[int]) -> np.ndarray:
        self._check(seq, token_ids)
        m, past, t = self.module, len(seq.tokens), len(token_ids)
        ids = mininn.tensor([token_ids])
        x = m.wte(ids) + m.wpe(mininn.arange(past, past + t))  # (1, T, C)
        mask = np.tril(np.ones((t, past + t), dtype=bool), k=past)
        for layer, block in enumerate(m.blocks):
            q, k, v = (
                _heads(part, block.heads).numpy()[0] for part in block.qkv(block.ln_1(x)).chunk(3, dim=-1)
            )
            keys, values = self._append(seq, layer, k, v)
            y = _attend(q, keys, values, mask)  # (nh, T, hs)
            x = x + block.proj(mininn.from_numpy(y.transpose(1, 0, 2).reshape(1, t, -1)))
            x = x + block.mlp(x)
        seq.tokens.extend(token_ids)
        return m.lm_head(m.ln_f(x)).numpy()[0, -1]

    def decode(self, seqs: list[Cache], token_ids: list[int]) -> np.ndarray:
        for seq, token in zip(seqs, token_ids, strict=True):
            self._check(seq, [token])
        self.decode_rows.append(len(seqs))
        m, b = self.module, len(seqs)
        positions = mininn.tensor([len(seq.tokens) for seq in seqs])
        x = m.wte(mininn.tensor(token_ids)) + m.wpe(positions)  # (B, C): projections batched over rows
        for layer, block in enumerate(m.blocks):
            qkv = block.qkv(block.ln_1(x)).numpy()
            rows = []
            for row, seq in enumerate(seqs):  # attention: each row over its own cache
                q, k, v = (part.reshape(block.heads, 1, -1) for part in np.split(qkv[row], 3))
                keys, values = self._append(seq, layer, k, v)
                rows.append(_attend(q, keys, values, None).reshape(-1))
            x = x + block.proj(mininn.from_numpy(np.stack(rows)))
            x = x + block.mlp(x)
        for seq, token in zip(seqs, token_ids, strict=True):
            seq.tokens.append(token)
        return m.lm_head(m.ln_f(x)).numpy().reshape(b, -1)

    def _check(self, seq: Cache, new: list[int]) -> None:
        if seq.released:
            raise RuntimeError("a released sequence was used")
        if len(seq.tokens) + len(new) > self.context_length:
            raise RuntimeError(f"sequence of {len(seq.tokens) + len(new)} tokens over the context")
        if self.fail_when is not None and self.fail_when(seq.tokens + new):
            raise RuntimeError("the tiny model failed on purpose")

    @staticmethod
    def _append(seq: Cache, layer: int, k: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if layer == len(seq.keys):
            seq.keys.append(k)
            seq.values.append(v)
        else:
            seq.keys[layer] = np.concatenate([seq.keys[layer], k], axis=1)
            seq.values[layer] = np.concatenate([seq.values[layer], v], axis=1)
        return seq.keys[layer], seq.values[layer]


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Softmax attention ``(nh, T, hs)`` of ``q`` over ``k``/``v`` ``(nh, S, hs)``; ``mask`` (T, S) keeps."""
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (scores / scores.sum(axis=-1, keepdims=True)) @ v


def tiny_generator(
    seed: int = 0,
    *,
    dim: int = 64,
    layers: int = 2,
    context_length: int = 512,
    tokenizer: bool = True,
    dtype: Any = None,
    fail_when: Callable[[list[int]], bool] | None = None,
) -> TinyGenerator:
    """A :class:`TinyGenerator` over a freshly seeded random :class:`TinyLM` (float64 unless ``dtype``)."""
    mininn.manual_seed(seed)
    module = TinyLM(dim=dim, layers=layers, context=context_length)
    with mininn.no_grad():  # mostly printable ASCII, so generated text reads as text
        module.lm_head.bias[32:127] += 4.0
    module.to(dtype=dtype or mininn.float64).eval()
    return TinyGenerator(module, ByteTokenizer() if tokenizer else None, context_length, fail_when)


def greedy_reference(generator: TinyGenerator, prompt: list[int], steps: int) -> list[int]:
    """``steps`` greedy tokens by the plain loop: the whole sequence through ``forward``, argmax."""
    ids = list(prompt)
    with mininn.no_grad():
        for _ in range(steps):
            logits = generator.module(mininn.tensor([ids])).numpy()[0, -1]
            ids.append(int(np.argmax(logits)))
    return ids[len(prompt) :]
