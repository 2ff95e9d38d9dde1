"""Connectionist Temporal Classification: ``ctc_loss``.

The forward (alpha) and backward (beta) recursions run in log space over the
extended label sequence ``blank, l1, blank, l2, ..., blank`` (length ``2S+1``),
one time step per iteration and vectorised over the batch and the sequence.
Both recursions include the emission at ``t``, so ``alpha + beta`` counts it
twice; the state posteriors subtract it once. The gradient with respect to
``log_probs`` is torch's: ``exp(log_probs) - posterior`` per class, which is
the exact gradient once it flows back through the ``log_softmax`` that
produced ``log_probs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import check_float
from mininn.nn.functional.loss import _reduction
from mininn.tensor import Tensor

__all__ = ["ctc_loss"]

_WHERE = "(while checking arguments for ctc_loss_allocate_outputs)"
_NEG_INF = -np.inf


def _logsumexp(*arrays: Any) -> Any:
    m = np.maximum.reduce(arrays)
    safe = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore"):
        return np.log(sum(np.exp(a - safe) for a in arrays)) + safe


def _shift(a: Any, k: int) -> Any:
    """``a`` moved ``k`` places along the last axis, ``-inf`` filling in (k > 0: right)."""
    out = np.full_like(a, _NEG_INF)
    if k > 0:
        out[..., k:] = a[..., :-k]
    else:
        out[..., :k] = a[..., -k:]
    return out


def _alpha(lp_ext: Any, skip: Any, has_label: Any) -> Any:
    """log alpha ``(T, N, L)``: paths ending at state ``s`` at time ``t``."""
    t_max = lp_ext.shape[0]
    alpha = np.full(lp_ext.shape, _NEG_INF)
    alpha[0, :, 0] = lp_ext[0, :, 0]
    alpha[0, :, 1] = np.where(has_label, lp_ext[0, :, 1], _NEG_INF)
    for t in range(1, t_max):
        prev = alpha[t - 1]
        two_back = np.where(skip, _shift(prev, 2), _NEG_INF)
        alpha[t] = _logsumexp(prev, _shift(prev, 1), two_back) + lp_ext[t]
    return alpha


def _beta(lp_ext: Any, skip_ahead: Any, in_len: Any, tgt_len: Any) -> Any:
    """log beta ``(T, N, L)``: paths from state ``s`` at time ``t`` to the end."""
    t_max, n, length = lp_ext.shape
    beta = np.full(lp_ext.shape, _NEG_INF)
    s = np.arange(length)
    last = 2 * tgt_len[:, None]
    final = (s == last) | ((s == last - 1) & (tgt_len[:, None] > 0))
    nxt = np.full((n, length), _NEG_INF)
    for t in range(t_max - 1, -1, -1):
        rec = _logsumexp(nxt, _shift(nxt, -1), np.where(skip_ahead, _shift(nxt, -2), _NEG_INF)) + lp_ext[t]
        start = np.where(final, lp_ext[t], _NEG_INF)
        row = np.where((t == in_len - 1)[:, None], start, np.where((t < in_len - 1)[:, None], rec, _NEG_INF))
        beta[t] = nxt = row
    return beta


class _CTC(ArrayFunction):
    """Per-sample negative log-likelihoods ``(N)`` of padded targets; grads for ``log_probs``."""

    @staticmethod
    def forward(
        ctx: Context, log_probs: Any, ext: Any, in_len: Any, tgt_len: Any, zero_infinity: bool
    ) -> Any:
        lp = log_probs.astype(np.float64)
        t_max, n, _ = lp.shape
        lp_ext = np.take_along_axis(lp, np.broadcast_to(ext, (t_max, *ext.shape)), axis=2)  # (T, N, L)
        skip = np.zeros(ext.shape, dtype=bool)
        skip[:, 2:] = (ext[:, 2:] != ext[:, :-2]) & (np.arange(2, ext.shape[1]) % 2 == 1)
        alpha = _alpha(lp_ext, skip, tgt_len > 0)
        rows = np.arange(n)
        end = alpha[np.maximum(in_len - 1, 0), rows]  # (N, L)
        last = 2 * tgt_len
        tail = np.where(tgt_len > 0, end[rows, np.maximum(last - 1, 0)], _NEG_INF)
        nll = -_logsumexp(end[rows, last], tail)
        nll = np.where(in_len == 0, np.where(tgt_len == 0, 0.0, np.inf), nll)
        ctx.save_for_backward(lp, lp_ext, ext, skip, alpha, nll, in_len, tgt_len)
        ctx.meta = (log_probs.dtype, zero_infinity)
        if zero_infinity:
            nll = np.where(np.isinf(nll), 0.0, nll)
        return nll.astype(log_probs.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        lp, lp_ext, ext, skip, alpha, nll, in_len, tgt_len = ctx.saved_tensors
        dtype, zero_infinity = ctx.meta
        t_max, n, c = lp.shape
        skip_ahead = np.zeros_like(skip)
        skip_ahead[:, :-2] = skip[:, 2:]
        beta = _beta(lp_ext, skip_ahead, in_len, tgt_len)
        with np.errstate(invalid="ignore"):
            posterior = np.exp(alpha + beta - lp_ext + nll[None, :, None])  # (T, N, L)
        onehot = np.zeros((n, ext.shape[1], c))
        np.put_along_axis(onehot, ext[:, :, None], 1.0, axis=2)
        occupancy = np.matmul(posterior.transpose(1, 0, 2), onehot).transpose(1, 0, 2)  # (T, N, C)
        grad = np.exp(lp) - occupancy
        keep = np.arange(t_max)[:, None] < in_len[None, :]  # (T, N)
        if zero_infinity:
            keep = keep & ~np.isinf(nll)[None, :]
        grad = np.where(keep[:, :, None], grad, 0.0) * g[None, :, None]
        return grad.astype(dtype), None, None, None, None


def _lengths(lengths: Tensor | Sequence[int], name: str) -> Any:
    if isinstance(lengths, Tensor):
        if lengths.dtype.is_floating_point:
            raise RuntimeError(f"{name} must be integral")
        return lengths._data.astype(np.int64).reshape(-1)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def _padded_targets(targets: Tensor, tgt_len: Any, n: int) -> Any:
    """Targets as ``(N, S_max)`` int64, checked with torch's messages."""
    t = targets._data.astype(np.int64)
    if targets.ndim == 1:
        total = int(tgt_len.sum())
        if t.shape[0] != total:
            raise RuntimeError(
                f"Expected tensor to have size {total} at dimension 0, but got size {t.shape[0]} "
                f"for argument #2 'targets' {_WHERE}"
            )
        _check_nonnegative(tgt_len, "target_lengths")
        s_max = int(tgt_len.max(initial=0))
        offsets = np.concatenate([[0], np.cumsum(tgt_len)[:-1]])
        idx = offsets[:, None] + np.arange(s_max)
        inside = np.arange(s_max) < tgt_len[:, None]
        return np.where(inside, t[np.where(inside, idx, 0)] if total else 0, 0)
    if targets.ndim != 2:
        raise RuntimeError(
            f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional tensor for argument #2 "
            f"'targets' {_WHERE}"
        )
    if t.shape[0] != n:
        raise RuntimeError(
            f"Expected tensor to have size {n} at dimension 0, but got size {t.shape[0]} for "
            f"argument #2 'targets' {_WHERE}"
        )
    _check_nonnegative(tgt_len, "target_lengths")
    too_long = tgt_len > t.shape[1]
    if too_long.any():
        raise RuntimeError(
            f"Expected tensor to have size at least {int(tgt_len[too_long][0])} at dimension 1, but "
            f"got size {t.shape[1]} for argument #2 'targets' {_WHERE}"
        )
    return t


def _check_nonnegative(values: Any, name: str) -> None:
    if (values < 0).any():
        raise RuntimeError(
            f"Expected {name} to have value at least 0, but got value {int(values[values < 0][0])} {_WHERE}"
        )


def _extended(padded: Any, blank: int) -> Any:
    """``blank, l1, blank, l2, ..., blank`` per row: ``(N, 2 * S_max + 1)``."""
    n, s_max = padded.shape
    ext = np.full((n, 2 * s_max + 1), blank, dtype=np.int64)
    ext[:, 1::2] = padded
    return ext


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """Negative log-likelihood of label sequences under per-frame class log-probabilities.

    Args:
        log_probs: ``(T, N, C)`` or unbatched ``(T, C)`` log-probabilities (``log_softmax``).
        targets: Padded ``(N, S)`` or concatenated ``(sum(target_lengths))`` class
            indices; never ``blank``.
        input_lengths: ``(N)`` frames of each sample, at most ``T``.
        target_lengths: ``(N)`` labels of each sample.
        blank: The blank class. Default: 0.
        reduction: ``"none"``, ``"mean"`` (default; each loss divided by its target
            length, then averaged) or ``"sum"``.
        zero_infinity: Turn infinite losses (impossible alignments) and their
            gradients into zeros. Default: False.
    """
    reduction = _reduction(reduction)
    check_float(log_probs, "ctc_loss_cpu")
    in_len = _lengths(input_lengths, "input_lengths")
    tgt_len = _lengths(target_lengths, "target_lengths")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.ndim == 1 else targets
    if log_probs.ndim != 3:
        raise RuntimeError(
            f"Expected 3-dimensional tensor, but got {log_probs.ndim}-dimensional tensor for argument #1 "
            f"'log_probs' {_WHERE}"
        )
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if in_len.shape[0] != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tgt_len.shape[0] != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    padded = _padded_targets(targets, tgt_len, n)
    _check_nonnegative(in_len, "input_lengths")
    if (in_len > t_max).any():
        raise RuntimeError(
            f"Expected input_lengths to have value at most {t_max}, but got value "
            f"{int(in_len[in_len > t_max][0])} {_WHERE}"
        )
    losses = _CTC.apply(log_probs, _extended(padded, blank), in_len, tgt_len, zero_infinity)
    if reduction == "mean":
        divisor = Tensor(np.maximum(tgt_len, 1).astype(losses._data.dtype))
        return (losses / divisor).mean()
    if reduction == "sum":
        return losses.sum()
    return losses.reshape(()) if unbatched else losses
