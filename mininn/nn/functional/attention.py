"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``.

The core is one fused ``ArrayFunction`` over stacked heads: ``softmax(q k^T * scale
+ bias) v`` as two batched matmuls with a hand-written backward, so a
``(N, H, L, D)`` problem is a handful of BLAS calls and no Python loop over
batch or heads. Masks become one additive float array (0 to attend, ``-inf``
to block) before the core sees them.

Fully masked rows follow torch: ``scaled_dot_product_attention`` (and
``MultiheadAttention`` with ``need_weights=False``) return zeros for them,
while the ``need_weights=True`` path of ``MultiheadAttention`` returns NaN.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from mininn._backend import device_of, to_device
from mininn._factories import default_generator
from mininn._functions._util import unbroadcast
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import c_name
from mininn.nn.functional.linear import linear
from mininn.tensor import Tensor

__all__ = ["canonical_mask", "multi_head_attention_forward", "scaled_dot_product_attention"]

# ---- the fused core ------------------------------------------------------------------
def _softmax_last_(scores: Any, safe: bool) -> Any:
    """Softmax over the last axis, in place; ``safe`` turns fully masked rows into zeros."""
    peak = scores.max(axis=-1, keepdims=True)
    if safe:
        peak[~np.isfinite(peak)] = 0
    with np.errstate(invalid="ignore"):  # -inf - -inf: a fully masked row becomes NaN
        scores -= peak
    np.exp(scores, out=scores)
    total = scores.sum(axis=-1, keepdims=True)
    if safe:
        total[total == 0] = 1
    scores /= total
    return scores


def _causal_bias(n_query: int, n_key: int, dtype: Any, like: Any) -> Any:
    """0 where query ``i`` may see key ``j <= i`` (top-left aligned), ``-inf`` elsewhere."""
    allowed = np.tri(n_query, n_key, dtype=bool)
    bias = np.where(allowed, 0.0, -np.inf).astype(dtype)
    return to_device(bias, device_of(like))


class _Attention(ArrayFunction):
    """``softmax(q @ k^T * scale + bias) @ v`` over any leading (batch, head) dims."""

    @staticmethod
    def forward(
        ctx: Context, q: Any, k: Any, v: Any, bias: Any, scale: float, causal: bool,
        dropout_p: float, safe: bool, with_probs: bool,
    ) -> Any:
        # q: (*, L, E)  k: (*, S, E)  v: (*, S, Ev)  bias: broadcastable to (*, L, S)
        scores = np.matmul(q * q.dtype.type(scale), np.swapaxes(k, -1, -2))
        if bias is not None:
            if np.broadcast_shapes(scores.shape, bias.shape) == scores.shape:
                scores += bias
            else:
                scores = scores + bias
        if causal:
            scores += _causal_bias(q.shape[-2], k.shape[-2], scores.dtype, scores)
        probs = _softmax_last_(scores, safe)
        keep = None
        if dropout_p > 0.0:
            keep = _dropout_mask(probs, dropout_p)
        dropped = probs if keep is None else probs * keep
        out = np.matmul(dropped, v)
        ctx.save_for_backward(q, k, v, probs, keep)
        ctx.meta = (scale, None if bias is None else bias.shape)
        return (out, dropped) if with_probs else out

    @staticmethod
    def backward(ctx: Context, g_out: Any, g_probs: Any = None) -> Any:
        q, k, v, probs, keep = ctx.saved_tensors
        scale, bias_shape = ctx.meta
        dropped = probs if keep is None else probs * keep
        d_dropped = np.matmul(g_out, np.swapaxes(v, -1, -2))
        if g_probs is not None:
            d_dropped = d_dropped + g_probs
        dv = np.matmul(np.swapaxes(dropped, -1, -2), g_out)
        dp = d_dropped if keep is None else d_dropped * keep
        ds = probs * (dp - (dp * probs).sum(axis=-1, keepdims=True))
        dq = np.matmul(ds, k) * q.dtype.type(scale)
        dk = np.matmul(np.swapaxes(ds, -1, -2), q) * q.dtype.type(scale)
        d_bias = None if bias_shape is None else unbroadcast(ds, bias_shape)
        return (
            unbroadcast(dq, q.shape), unbroadcast(dk, k.shape), unbroadcast(dv, v.shape),
            d_bias, None, None, None, None, None,
        )


def _dropout_mask(probs: Any, p: float) -> Any:
    """Torch's dropout noise: ``bernoulli(1 - p) / (1 - p)`` in ``probs``' dtype."""
    if p >= 1.0:
        return np.zeros_like(probs)
    draw = default_generator.rng.random(probs.shape, dtype=np.float32) >= p
    keep = draw.astype(probs.dtype) / probs.dtype.type(1 - p)
    return to_device(keep, device_of(probs))


# ---- head layout ---------------------------------------------------------------------
class _SplitHeads(ArrayFunction):
    """``(L, N, c*E)`` (or ``(N, L, c*E)``) -> ``c`` arrays ``(N, H, L, D)``, as views."""

    @staticmethod
    def forward(ctx: Context, x: Any, chunks: int, heads: int, batch_first: bool) -> Any:
        a, b, width = x.shape
        d = width // (chunks * heads)
        order = (2, 0, 3, 1, 4) if batch_first else (2, 1, 3, 0, 4)
        y = x.reshape(a, b, chunks, heads, d).transpose(order)  # (c, N, H, L, D)
        ctx.meta = (x.shape, order)
        return tuple(y[i] for i in range(chunks)) if chunks > 1 else y[0]

    @staticmethod
    def backward(ctx: Context, *grads: Any) -> Any:
        shape, order = ctx.meta
        stacked = np.stack(grads)  # (c, N, H, L, D)
        inverse = tuple(np.argsort(order))
        return stacked.transpose(inverse).reshape(shape), None, None, None


class _MergeHeads(ArrayFunction):
    """``(N, H, L, D)`` -> ``(L, N, H*D)`` (or ``(N, L, H*D)``), contiguous."""

    @staticmethod
    def forward(ctx: Context, x: Any, batch_first: bool) -> Any:
        n, h, seq, d = x.shape
        order = (0, 2, 1, 3) if batch_first else (2, 0, 1, 3)
        y = np.ascontiguousarray(x.transpose(order))
        ctx.meta = (x.shape, order)
        return y.reshape(y.shape[0], y.shape[1], h * d)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, order = ctx.meta
        n, h, seq, d = shape
        transposed = tuple(shape[i] for i in order)
        return g.reshape(transposed).transpose(tuple(np.argsort(order))), None


class _AppendAlongSeq(ArrayFunction):
    """Concatenate one broadcast row (``row``, or zeros when None) after ``x`` along ``axis``."""

    @staticmethod
    def forward(ctx: Context, x: Any, row: Any, axis: int) -> Any:
        shape = list(x.shape)
        shape[axis] = 1
        extra = np.zeros(shape, x.dtype) if row is None else np.broadcast_to(row, shape)
        ctx.meta = (x.shape[axis], None if row is None else row.shape, axis)
        return np.concatenate([x, to_device(extra, device_of(x))], axis=axis)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        n, row_shape, axis = ctx.meta
        gx = np.take(g, np.arange(n), axis=axis)
        g_row = None
        if row_shape is not None:
            g_row = unbroadcast(np.take(g, [n], axis=axis), row_shape)
        return gx, g_row, None


class _RepeatHeads(ArrayFunction):
    """``repeat_interleave(repeats, dim=-3)`` for grouped-query attention."""

    @staticmethod
    def forward(ctx: Context, x: Any, repeats: int) -> Any:
        ctx.meta = (x.shape, repeats)
        return np.repeat(x, repeats, axis=-3)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, repeats = ctx.meta
        lead, heads = shape[:-3], shape[-3]
        grouped = g.reshape(lead + (heads, repeats) + shape[-2:])
        return grouped.sum(axis=-3), None


# ---- masks ---------------------------------------------------------------------------
def canonical_mask(
    mask: Tensor | None, mask_name: str, other_type: Any, other_name: str, target_type: Any,
    check_other: bool = True,
) -> Tensor | None:
    """torch's ``_canonical_mask``: a bool mask (True = blocked) becomes an additive float
    mask of ``target_type`` (0 or ``-inf``); a float mask passes through.

    Raises:
        AssertionError: ``mask`` is neither bool nor floating.
    """
    if mask is None:
        return None
    if mask.dtype.name != "bool" and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and other_type != mask.dtype:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type "
            "for both instead.",
            stacklevel=3,
        )
    if mask.dtype.name == "bool":
        return Tensor(np.where(mask._data, -np.inf, 0.0).astype(target_type.np))
    return mask


def _array(mask: Tensor | None, dtype: Any) -> Any:
    """A canonical (float) mask as an array of the scores' dtype."""
    return None if mask is None else mask._data.astype(dtype, copy=False)


def _broadcast_message(a: tuple[int, ...], b: tuple[int, ...]) -> str | None:
    """torch's message for shapes that do not broadcast (checked from the last dim)."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return (
                f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) at "
                f"non-singleton dimension {i}"
            )
    return None


# ---- scaled_dot_product_attention ----------------------------------------------------
def _check_sdpa(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None,
                dropout_p: float) -> None:
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(
            f"dropout probability has to be between 0 and 1, but got {dropout_p:g}"
        )
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
            f"{query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead."
        )
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{c_name(query)} key.dtype: {c_name(key)} and value.dtype: {c_name(value)} instead."
        )
    if attn_mask is not None and attn_mask.dtype.name != "bool" and (
        not attn_mask.dtype.is_floating_point and attn_mask.dtype != query.dtype
    ):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
            f"attn_mask.dtype: {c_name(attn_mask)} and  query.dtype: {c_name(query)} instead."
        )
    if query.shape[-1] != key.shape[-1]:
        batch = int(np.prod(query.shape[:-2]))
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, "
            f"{query.shape[-1]}] but got: [{batch}, {key.shape[-1]}]."
        )


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """``softmax(query @ key^T * scale + mask) @ value`` over leading batch/head dims.

    Args:
        query: ``(*, L, E)``.
        key: ``(*, S, E)``; leading dims broadcast against ``query``'s.
        value: ``(*, S, Ev)``.
        attn_mask: Bool (True = may attend) or float (added to the scores),
            broadcastable to ``(*, L, S)``.
        dropout_p: Dropout on the attention weights (applied whenever > 0).
        is_causal: Let query ``i`` attend keys ``j <= i`` only (combined with
            ``attn_mask`` when both are given).
        scale: Score scale; default ``1 / sqrt(E)``.
        enable_gqa: Repeat key/value heads (dim -3) to match query heads.

    Returns:
        ``(*, L, Ev)``. Rows with no key to attend come out as zeros.
    """
    _check_sdpa(query, key, value, attn_mask, dropout_p)
    if enable_gqa and key.ndim >= 3 and query.shape[-3] != key.shape[-3]:
        key = _RepeatHeads.apply(key, query.shape[-3] // key.shape[-3])
        value = _RepeatHeads.apply(value, query.shape[-3] // value.shape[-3])
    scores_shape = np.broadcast_shapes(query.shape[:-2], key.shape[:-2]) + (
        query.shape[-2], key.shape[-2])
    bias: Any = None
    if attn_mask is not None:
        message = _broadcast_message(scores_shape, tuple(attn_mask.shape))
        if message:
            raise RuntimeError(message)
        if attn_mask.dtype.name == "bool":
            bias = np.where(attn_mask._data, 0.0, -np.inf).astype(query._data.dtype)
        else:
            bias = attn_mask if attn_mask.dtype == query.dtype else attn_mask.to(query.dtype)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    return _Attention.apply(query, key, value, bias, scale, is_causal, dropout_p, True, False)


# ---- multi_head_attention_forward ----------------------------------------------------
def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                     attn_mask: Tensor | None, num_heads: int) -> bool:
    """torch's ``_mha_shape_check``: whether the input is batched, with its messages."""
    if query.ndim not in (2, 3):
        raise AssertionError(
            "query should be unbatched 2D or batched 3D tensor but received "
            f"{query.ndim}-D query tensor"
        )
    batched = query.ndim == 3
    which = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(
            f"For {which} `query`, expected `key` and `value` to be {query.ndim}-D but found "
            f"{key.ndim}-D and {value.ndim}-D tensors respectively"
        )
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(
            f"For {which} `query`, expected `key_padding_mask` to be `None` or {query.ndim - 1}-D but "
            f"found {key_padding_mask.ndim}-D tensor instead"
        )
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(
                f"For {which} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.ndim}-D tensor instead"
            )
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape!r}")
    return batched


def _project(query: Tensor, key: Tensor, value: Tensor, in_proj_weight: Tensor | None,
             in_proj_bias: Tensor | None, separate: tuple[Tensor, ...] | None, embed_dim: int,
             packed_ok: bool) -> tuple[Tensor | None, ...]:
    """The input projections: ``(packed, None, None)`` for self-attention (one GEMM whose
    output holds q, k and v side by side) when ``packed_ok``, else ``(q, k, v)``."""
    e = embed_dim
    b = in_proj_bias
    if separate is None:
        w = in_proj_weight
        if w is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:
            packed = linear(query, w, b)
            if packed_ok:
                return packed, None, None
            return packed[..., :e], packed[..., e : 2 * e], packed[..., 2 * e :]
        wq, wk, wv = w[:e], w[e : 2 * e], w[2 * e :]
    else:
        wq, wk, wv = separate
    bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e : 2 * e], b[2 * e :])
    return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)


def _check_mha_args(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int,
                    num_heads: int, use_separate_proj_weight: bool) -> int:
    embed_dim = query.shape[-1]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]!r} do not match value's "
                f"{value.shape[:2]!r}"
            )
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape!r} does not match value shape {value.shape!r}")
    return head_dim


def _attn_bias(attn_mask: Any, kpm: Any, bsz: int, heads: int, tgt: int, src: int,
               n_appended: int) -> Any:
    """Merge the canonical masks into one additive ``(N, H|1, L, S)`` array."""
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if attn_mask.shape != (tgt, src):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is mininn.Size({list(attn_mask.shape)}), but "
                    f"should be {(tgt, src)}."
                )
            attn_mask = attn_mask[None, None]
        else:
            if attn_mask.shape != (bsz * heads, tgt, src):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is mininn.Size({list(attn_mask.shape)}), but "
                    f"should be {(bsz * heads, tgt, src)}."
                )
            attn_mask = attn_mask.reshape(bsz, heads, tgt, src)
        attn_mask = _pad_columns(attn_mask, n_appended)
    if kpm is not None:
        kpm = _pad_columns(kpm, n_appended)
        if kpm.shape[0] != bsz:
            raise AssertionError(
                f"Expected key_padded_mask.shape[0] to be {bsz}, but got {kpm.shape[0]}"
            )
        if kpm.shape[1] != src + n_appended:
            raise AssertionError(
                f"Expected key_padded_mask.shape[1] to be {src + n_appended}, but got "
                f"{kpm.shape[1]}"
            )
        kpm = kpm[:, None, None, :]
        return kpm if attn_mask is None else attn_mask + kpm
    return attn_mask


def _pad_columns(mask: Any, n: int) -> Any:
    """Append ``n`` zero (= attend) columns, as torch pads for bias_k and zero attention."""
    if n == 0:
        return mask
    pad = [(0, 0)] * (mask.ndim - 1) + [(0, n)]
    return np.pad(mask, pad)


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention on sequence-first inputs, as ``torch.nn.functional``'s.

    Shapes: ``query (L, N, E)`` or ``(L, E)``; ``key``/``value`` ``(S, N, E_k)``;
    ``key_padding_mask (N, S)`` (True or ``-inf`` = ignore that key);
    ``attn_mask (L, S)`` or ``(N * num_heads, L, S)``.

    Returns:
        ``(attn_output (L, N, E), attn_weights)``; the weights are ``(N, L, S)``
        averaged over heads, ``(N, num_heads, L, S)`` per head, or None when
        ``need_weights`` is False.
    """
    return _mha(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
        bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
        key_padding_mask, need_weights, attn_mask, use_separate_proj_weight,
        (q_proj_weight, k_proj_weight, v_proj_weight), static_k, static_v,
        average_attn_weights, is_causal, batch_first=False,
    )


def _mha(
    query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
    in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
    bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
    out_proj_bias: Tensor | None, training: bool, key_padding_mask: Tensor | None,
    need_weights: bool, attn_mask: Tensor | None, use_separate_proj_weight: bool,
    proj_weights: tuple[Tensor | None, ...], static_k: Tensor | None, static_v: Tensor | None,
    average_attn_weights: bool, is_causal: bool, batch_first: bool,
) -> tuple[Tensor, Tensor | None]:
    """``multi_head_attention_forward`` that also accepts batch-first ``(N, L, E)`` inputs."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        batch_first = False
        query, key, value, key_padding_mask = _add_batch_dim(query, key, value, key_padding_mask)
    seq_axis = 1 if batch_first else 0
    bsz, tgt_len = query.shape[1 - seq_axis], query.shape[seq_axis]
    key_padding_mask = canonical_mask(
        key_padding_mask, "key_padding_mask", None if attn_mask is None else attn_mask.dtype,
        "attn_mask", query.dtype)
    attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask."
        )
    use_causal_flag = is_causal and key_padding_mask is None and not need_weights
    if use_causal_flag:
        attn_mask = None
    head_dim = _check_mha_args(query, key, value, embed_dim_to_check, num_heads,
                               use_separate_proj_weight)
    embed_dim = query.shape[-1]
    dtype = query._data.dtype
    packed_ok = bias_k is None and static_k is None and static_v is None
    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias,
                       _separate_weights(use_separate_proj_weight, proj_weights), embed_dim,
                       packed_ok)
    kpm = _array(key_padding_mask, dtype)
    mask = _array(attn_mask, dtype)
    k, v, appended = _append_bias_kv(k, v, bias_k, bias_v, static_k, static_v, seq_axis)
    qh, kh, vh = _heads(q, k, v, num_heads, batch_first)
    kh = _static(static_k, kh, bsz, num_heads, head_dim, "k")
    vh = _static(static_v, vh, bsz, num_heads, head_dim, "v")
    if add_zero_attn:
        kh = _AppendAlongSeq.apply(kh, None, 2)
        vh = _AppendAlongSeq.apply(vh, None, 2)
        appended += 1
    src_len = kh.shape[2] - appended
    bias = _attn_bias(mask, kpm, bsz, num_heads, tgt_len, src_len, appended)
    p = dropout_p if training else 0.0
    scale = 1.0 / math.sqrt(head_dim)
    result = _Attention.apply(qh, kh, vh, bias, scale, use_causal_flag, p, not need_weights,
                              need_weights)
    out_heads, weights = result if need_weights else (result, None)
    out = linear(_MergeHeads.apply(out_heads, batch_first), out_proj_weight, out_proj_bias)
    if weights is not None and average_attn_weights:
        weights = weights.mean(dim=1)
    if not is_batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights


def _add_batch_dim(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None
                   ) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """Unbatched ``(L, E)`` inputs as a batch of one, keeping ``query is key is value``."""
    same_kv, same_qk = key is value, query is key
    query = query.unsqueeze(1)
    key = query if same_qk else key.unsqueeze(1)
    value = key if same_kv else value.unsqueeze(1)
    if key_padding_mask is not None:
        key_padding_mask = key_padding_mask.unsqueeze(0)
    return query, key, value, key_padding_mask


def _append_bias_kv(k: Tensor, v: Tensor, bias_k: Tensor | None, bias_v: Tensor | None,
                    static_k: Tensor | None, static_v: Tensor | None,
                    seq_axis: int) -> tuple[Tensor, Tensor, int]:
    """Append the learned ``bias_k``/``bias_v`` to every sequence; returns how many keys."""
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        return _AppendAlongSeq.apply(k, bias_k, seq_axis), _AppendAlongSeq.apply(v, bias_v, seq_axis), 1
    if bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    if bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    return k, v, 0


def _separate_weights(use: bool, weights: tuple[Tensor | None, ...]) -> tuple[Tensor, ...] | None:
    if not use:
        return None
    for name, w in zip("qkv", weights):
        if w is None:
            raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
    return weights  # type: ignore[return-value]


def _heads(q: Tensor, k: Tensor | None, v: Tensor | None, heads: int,
           batch_first: bool) -> tuple[Tensor, Tensor, Tensor]:
    """Projected ``(L, N, E)`` tensors as ``(N, H, L, D)`` heads."""
    if k is None:
        return _SplitHeads.apply(q, 3, heads, batch_first)
    return (
        _SplitHeads.apply(q, 1, heads, batch_first),
        _SplitHeads.apply(k, 1, heads, batch_first),
        _SplitHeads.apply(v, 1, heads, batch_first),
    )


def _static(static: Tensor | None, computed: Tensor, bsz: int, heads: int, head_dim: int,
            name: str) -> Tensor:
    """``static_k``/``static_v`` ``(N * H, S, D)`` in place of the projected heads."""
    if static is None:
        return computed
    if static.shape[0] != bsz * heads:
        raise AssertionError(
            f"expecting static_{name}.size(0) of {bsz * heads}, but got {static.shape[0]}"
        )
    if static.shape[2] != head_dim:
        raise AssertionError(
            f"expecting static_{name}.size(2) of {head_dim}, but got {static.shape[2]}"
        )
    return static.reshape(bsz, heads, static.shape[1], head_dim)

