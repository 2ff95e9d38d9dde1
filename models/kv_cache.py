"""Per-sequence key/value caches and the cached attention core of the ``llama`` architecture.

A :class:`SequenceCache` holds one sequence's keys and values, one array pair per layer,
``(num_key_value_heads, capacity, head_dim)``, grown by doubling. A forward pass over some
sequences (a prefill of one prompt, or a decode step of one new token per sequence) is
described by a :class:`CachedBatch`: each row's cache and where its new tokens start.
:class:`CachedAttention` does, for each row on its own, what Hugging Face's
``LlamaAttention`` does between the projections: rotary embedding of the new queries and
keys, appending the new keys and values to the row's cache, and causal scaled dot-product
attention over the row's whole cache. Rows never share a summation, so what a row gets does
not depend on which other rows share the call.

It works on the arrays inside one op (a few NumPy/CuPy calls per row and layer) because a
decode step is dominated by per-op overhead otherwise; the projections around it stay
modules, so hooks see them.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context

__all__ = ["ROW_WISE_DECODE", "CachedAttention", "CachedBatch", "SequenceCache", "array_module"]

# Whether decode steps (one token per row) project row by row, batch-invariant, in this context;
# ``LlamaGenerator`` sets it from its ``batch_invariant``.
ROW_WISE_DECODE: contextvars.ContextVar[bool] = contextvars.ContextVar("llama_row_wise_decode", default=True)


def array_module(array: Any) -> Any:
    """NumPy for a host array, CuPy for a device (``cuda``) array."""
    if isinstance(array, np.ndarray):
        return np
    import cupy

    return cupy

_MIN_CAPACITY = 16


@dataclass
class SequenceCache:
    """The keys and values of one sequence, for every layer.

    Attributes:
        length: How many tokens are cached (the position of the next token).
        keys: One ``(num_key_value_heads, capacity, head_dim)`` array per layer (empty until used).
        values: Like ``keys``.
        token_ids: The cached tokens, in order.
    """

    length: int = 0
    keys: list[Any] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)

    def release(self) -> None:
        """Drop the arrays; the sequence is empty again."""
        self.keys, self.values, self.token_ids, self.length = [], [], [], 0

    def append(self, layer: int, k: Any, v: Any, start: int) -> tuple[Any, Any]:
        """Write new keys and values ``(heads, T, head_dim)`` of ``layer`` at ``start``.

        Returns:
            Views of the layer's keys and values up to ``start + T``.
        """
        while len(self.keys) <= layer:
            self.keys.append(None)
            self.values.append(None)
        end = start + k.shape[1]
        keys, values = self.keys[layer], self.values[layer]
        if keys is None or keys.shape[1] < end or keys.dtype != k.dtype or type(keys) is not type(k):
            keys, values = self._grown(keys, values, k, end, start)
            self.keys[layer], self.values[layer] = keys, values
        keys[:, start:end] = k
        values[:, start:end] = v
        return keys[:, :end], values[:, :end]

    @staticmethod
    def _grown(keys: Any, values: Any, like: Any, end: int, start: int) -> tuple[Any, Any]:
        xp = array_module(like)
        capacity = max(_MIN_CAPACITY, end)
        if keys is not None:
            capacity = max(capacity, 2 * keys.shape[1])
        shape = (like.shape[0], capacity, like.shape[2])
        new_keys, new_values = xp.empty(shape, like.dtype), xp.empty(shape, like.dtype)
        if keys is not None and start:
            new_keys[:, :start] = xp.asarray(keys[:, :start], dtype=like.dtype)
            new_values[:, :start] = xp.asarray(values[:, :start], dtype=like.dtype)
        return new_keys, new_values


@dataclass
class CachedBatch:
    """The rows of one forward pass over cached sequences.

    Attributes:
        caches: One :class:`SequenceCache` per row.
        starts: Each row's first new position (its cache length before this pass).
    """

    caches: Sequence[SequenceCache]
    starts: Sequence[int]


class CachedAttention(ArrayFunction):
    """Rotary embedding, cache append and causal attention, row by row (inference only).

    ``forward(q (B, T, nh*hd), k (B, T, nkv*hd), v (B, T, nkv*hd), cos (B, T, hd), sin, batch,
    layer, heads, kv_heads, scale) -> (B, T, nh*hd)``.
    """

    @staticmethod
    def forward(ctx: Context, q: Any, k: Any, v: Any, cos: Any, sin: Any, batch: CachedBatch, layer: int,
                heads: int, kv_heads: int, scale: float) -> Any:
        xp = array_module(q)
        B, T, width = q.shape  # noqa: N806
        hd = width // heads
        group = heads // kv_heads
        q = q.reshape(B, T, heads, hd)
        k = k.reshape(B, T, kv_heads, hd)
        v = v.reshape(B, T, kv_heads, hd)
        out = xp.empty((B, T, heads, hd), q.dtype)
        for row in range(B):
            c, s = cos[row][:, None, :], sin[row][:, None, :]  # (T, 1, hd)
            qr = _rotate(q[row], c, s).transpose(1, 0, 2)  # (nh, T, hd)
            kr = _rotate(k[row], c, s).transpose(1, 0, 2)  # (nkv, T, hd)
            start = batch.starts[row]
            keys, values = batch.caches[row].append(layer, kr, v[row].transpose(1, 0, 2), start)
            out[row] = _attend(xp, qr, keys, values, group, scale, start).transpose(1, 0, 2)
        return out.reshape(B, T, width)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        raise RuntimeError("llama's cached attention is for inference only: call it under mininn.no_grad()")


def _rotate(x: Any, cos: Any, sin: Any) -> Any:
    """``x * cos + rotate_half(x) * sin`` (Hugging Face's ``apply_rotary_pos_emb``), same roundings."""
    half = x.shape[-1] // 2
    out = x * cos
    out[..., :half] -= x[..., half:] * sin[..., :half]
    out[..., half:] += x[..., :half] * sin[..., half:]
    return out


def _attend(xp: Any, q: Any, keys: Any, values: Any, group: int, scale: float, start: int) -> Any:
    """Causal attention of ``q`` (nh, T, hd) over ``keys``/``values`` (nkv, L, hd): (nh, T, hd).

    Query head ``h`` reads key/value head ``h // group`` (``repeat_kv``'s order).
    """
    nh, T, hd = q.shape  # noqa: N806
    nkv, L = keys.shape[0], keys.shape[1]  # noqa: N806
    qg = q.reshape(nkv, group * T, hd)  # (nkv, g*T, hd)
    scores = qg @ keys.transpose(0, 2, 1)  # (nkv, g*T, L)
    scores *= scale
    if T > 1:  # query t (position start + t) sees keys 0 .. start + t
        future = xp.arange(L)[None, :] > (start + xp.arange(T))[:, None]  # (T, L)
        scores4 = scores.reshape(nkv, group, T, L)  # a view
        scores4 += xp.where(future, scores.dtype.type(-xp.inf), scores.dtype.type(0))
    scores -= scores.max(axis=-1, keepdims=True)
    xp.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    return (scores @ values).reshape(nh, T, hd)
