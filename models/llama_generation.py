"""The ``llama`` architecture's text generator: prefill and decode over per-sequence KV caches.

:class:`LlamaGenerator` is what the generation engine drives (the ``TextGenerator`` seam of
issue 28): ``new_sequence()`` gives an empty :class:`~models.kv_cache.SequenceCache`;
``prefill(seq, ids)`` runs the prompt and caches it; ``decode(seqs, ids)`` runs one new token
per sequence, each attending over its own cache and projected row by row, so a sequence's
logits are the same alone or in any batch; ``release(seq)`` frees the cache. The engine calls
it under ``mininn.no_grad()`` on its own thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

import mininn
from models.errors import InputError
from models.kv_cache import ROW_WISE_DECODE, CachedBatch, SequenceCache

if TYPE_CHECKING:
    from models.llama import LlamaForCausalLM

__all__ = ["LlamaGenerator"]


class LlamaGenerator:
    """Generation over a :class:`LlamaForCausalLM` with a KV cache per sequence.

    Args:
        module: The model (weights loaded, on its device and dtype, in eval mode).
        tokenizer: The text tokenizer (``encode``/``decode``/``apply_chat_template``,
            ``eos_token_ids``), or None for token ids only.
        context_length: Prompt plus generated tokens per sequence; default the config's
            ``max_position_embeddings``.
        batch_invariant: Project each row of a decode step on its own (matrix-vector products:
            a sequence's logits are bitwise the same alone or in any batch). False: one
            matrix product per projection for the whole batch (more tokens/s with many
            sequences; a row's logits then differ by float32 rounding with the batch).

    Attributes:
        eos_token_ids: The tokenizer's end-of-sequence ids, else the config's.
    """

    def __init__(
        self, module: LlamaForCausalLM, tokenizer: Any = None, context_length: int | None = None,
        batch_invariant: bool = True,
    ) -> None:
        config = module.config
        self.module = module
        self.tokenizer = tokenizer
        self.context_length = context_length or config.max_position_embeddings
        self.vocab_size = config.vocab_size
        self.batch_invariant = batch_invariant

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """Ids that end a sequence: the tokenizer's where it has them, else the config's."""
        ids = getattr(self.tokenizer, "eos_token_ids", None)
        return tuple(ids) if ids else self.module.config.eos_token_ids

    def new_sequence(self) -> SequenceCache:
        """An empty sequence (its cache grows as tokens are added)."""
        return SequenceCache()

    def prefill(self, seq: SequenceCache, token_ids: Sequence[int]) -> np.ndarray:
        """Run ``token_ids`` after what ``seq`` holds; the logits ``[V]`` of the last one.

        Raises:
            InputError: no tokens, an id outside the vocabulary, or past the context length.
        """
        ids = self._checked(token_ids, seq.length, "prompt")
        if not ids:
            raise InputError("the prompt has no tokens: prefill needs at least one")
        logits = self._forward([seq], np.asarray([ids], dtype=np.int64))
        return logits[0]

    def decode(self, seqs: Sequence[SequenceCache], token_ids: Sequence[int]) -> np.ndarray:
        """One new token per sequence; the logits ``[len(seqs), V]``.

        Raises:
            InputError: the lengths differ, a sequence appears twice, an id is outside the
                vocabulary, or a sequence is at the context length.
        """
        if len(seqs) != len(token_ids):
            raise InputError(f"decode got {len(seqs)} sequences and {len(token_ids)} token ids; one each")
        if len({id(seq) for seq in seqs}) != len(seqs):
            raise InputError("decode got the same sequence twice in one step")
        if not seqs:
            return np.zeros((0, self.vocab_size), dtype=np.float32)
        ids = [self._checked([token], seq.length, "token")[0] for seq, token in zip(seqs, token_ids)]
        return self._forward(list(seqs), np.asarray(ids, dtype=np.int64)[:, None])

    def release(self, seq: SequenceCache) -> None:
        """Free ``seq``'s cache."""
        seq.release()

    def _checked(self, token_ids: Sequence[int], length: int, what: str) -> list[int]:
        ids = [int(t) for t in token_ids]
        bad = [t for t in ids if not 0 <= t < self.vocab_size]
        if bad:
            raise InputError(
                f"{what} token id {bad[0]} is outside the vocabulary (0 .. {self.vocab_size - 1})"
            )
        if length + len(ids) > self.context_length:
            raise InputError(
                f"{length + len(ids)} tokens are over the context length of {self.context_length} "
                f"({length} cached + {len(ids)} new)"
            )
        return ids

    def _forward(self, seqs: list[SequenceCache], ids: np.ndarray) -> np.ndarray:
        device = self.module.lm_head.weight.device
        batch = CachedBatch(seqs, [seq.length for seq in seqs])
        token = ROW_WISE_DECODE.set(self.batch_invariant)
        try:
            with mininn.no_grad():
                logits = self.module(mininn.as_tensor(ids, device=device), batch, last_only=True)  # (B, 1, V)
        finally:
            ROW_WISE_DECODE.reset(token)
        for seq, row in zip(seqs, ids):
            seq.length += len(row)
            seq.token_ids.extend(int(t) for t in row)
        return logits.detach().cpu().numpy()[:, 0]
