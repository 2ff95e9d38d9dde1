# ruff: noqa: A001, A002  (torch names the first argument `input`)
"""``linear_cross_entropy`` (a linear layer fused with ``cross_entropy``) and its
``LinearCrossEntropyOptions`` (torch 2.13).

Without options the loss is the reference ``cross_entropy(linear(...))``.
With options, the configurations torch's chunked kernel supports (class-index
targets, no label smoothing, a 2-D weight) run through ``_ChunkedLinearCE``:
the rows go through in chunks, so no more than ``(chunk, C)`` logits exist at
once, and backward recomputes each chunk's logits. Other configurations fall
back to the reference path with torch's warning.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any, Literal

import numpy as np

from mininn import _dtype
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional.linear import linear
from mininn.nn.functional.loss import _reduction, cross_entropy
from mininn.tensor import Tensor

__all__ = ["LinearCrossEntropyOptions", "linear_cross_entropy"]

_ACC_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """How the chunked ``linear_cross_entropy`` splits the batch into row chunks.

    Args:
        allow_retain_graph: Accepted for torch compatibility; mininn's chunked
            backward recomputes its chunks and always allows a second backward. Default: False.
        batch_chunk_size: Rows per chunk, positive, or None (one chunk). Default: None.
        chunking_method: ``"auto"`` (default, ``"aspect_ratio:2"`` unless
            ``batch_chunk_size`` is given), ``"aspect_ratio"`` (chunks whose logits
            are about the input's size), ``"aspect_ratio:N"`` (``N`` times smaller) or None.
        acc_policy: ``"auto"`` (default), ``"accurate"``, ``"balanced"`` or ``"compact"``;
            validated, then unused (mininn accumulates in the input's dtype).
        acc_dtype: Accumulation dtype (a floating dtype) or None; validated, then unused.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: Any = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if name != "aspect_ratio" or not factor.isdigit() or int(factor) <= 0:
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        floats = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)
        if self.acc_dtype is not None and self.acc_dtype not in floats:
            raise ValueError(
                "acc_dtype must be one of {None, mininn.float16, mininn.bfloat16, mininn.float32, "
                f"mininn.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                "automatically."
            )

    def chunk_rows(self, n: int, in_features: int, n_classes: int) -> int:
        """Rows per chunk for an ``(n, in_features)`` input and ``n_classes`` classes (torch's rule)."""
        method = self.chunking_method
        if method == "auto":  # torch's CPU pick; an explicit batch_chunk_size wins over it
            method = None if self.batch_chunk_size is not None else "aspect_ratio:2"
        size = n if self.batch_chunk_size is None else min(self.batch_chunk_size, n)
        if method is not None:
            factor = int(method.partition(":")[2] or 1)
            wanted = -(-n // -(-n_classes // in_features))
            computed = min((1 << (wanted - 1).bit_length()) // factor, n)
            if self.batch_chunk_size is not None and self.batch_chunk_size != computed:
                raise ValueError(
                    f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method ('{method}') give "
                    f"different chunk sizes ({self.batch_chunk_size} vs {computed}); pass only one."
                )
            size = computed
        return max(size, 1)


class _ChunkedLinearCE(ArrayFunction):
    """``-w[t] * log_softmax(x @ W.T + b)[t]`` per row, computed ``rows`` rows at a time."""

    @staticmethod
    def forward(
        ctx: Context, x: Any, w: Any, b: Any, target: Any, class_weight: Any, ignore_index: int,
        reduction: str, rows: int,
    ) -> Any:
        valid = target != ignore_index
        index = np.where(valid, target, 0)
        w_target = valid.astype(x.dtype) if class_weight is None else class_weight[index] * valid
        losses = np.empty(x.shape[0], dtype=x.dtype)
        for start in range(0, x.shape[0], rows):
            part = slice(start, start + rows)
            logp = _log_softmax(_logits(x[part], w, b))
            losses[part] = -np.take_along_axis(logp, index[part, None], axis=1)[:, 0] * w_target[part]
        ctx.save_for_backward(x, w, b, index, w_target)
        ctx.meta = (reduction, rows)
        if reduction == "none":
            return losses
        total = losses.sum()
        if reduction == "sum":
            return total
        with np.errstate(invalid="ignore", divide="ignore"):
            return (total / w_target.sum()).astype(x.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, w, b, index, w_target = ctx.saved_tensors
        reduction, rows = ctx.meta
        if reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                g = g / w_target.sum()
        scale = np.broadcast_to(g, w_target.shape) * w_target  # (N)
        gx, gw = np.empty_like(x), np.zeros_like(w)
        gb = None if b is None else np.zeros_like(b)
        for start in range(0, x.shape[0], rows):
            part = slice(start, start + rows)
            grad = np.exp(_log_softmax(_logits(x[part], w, b)))  # softmax - onehot, times each row's scale
            np.put_along_axis(grad, index[part, None], np.take_along_axis(grad, index[part, None], 1) - 1, 1)
            grad *= scale[part, None].astype(x.dtype, copy=False)
            gx[part] = (w.T @ grad.T).T  # this order is several times faster than grad @ w in BLAS
            gw += grad.T @ x[part]
            if gb is not None:
                gb += grad.sum(axis=0)
        return gx, gw, gb, None, None, None, None, None


def _logits(x: Any, w: Any, b: Any) -> Any:
    out = x @ w.T
    return out if b is None else out + b


def _log_softmax(z: Any) -> Any:
    shifted = z - z.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _chunked(
    input: Tensor, linear_weight: Tensor, target: Tensor, linear_bias: Tensor | None, weight: Tensor | None,
    reduction: str, ignore_index: int, options: LinearCrossEntropyOptions,
) -> Tensor:
    """The chunked kernel on ``(N, in)`` rows, with the reference path's target checks."""
    batched = input.ndim == 2
    x = input if batched else input.unsqueeze(0)
    t = (target if batched else target.reshape(1))._data
    n, n_classes = x.shape[0], linear_weight.shape[0]
    if t.ndim != 1 or t.shape[0] != n:
        raise ValueError(f"Expected input batch_size ({n}) to match target batch_size ({t.shape[0]}).")
    if weight is not None and weight.numel() != n_classes:
        raise RuntimeError(
            f"weight tensor should be defined either for all {n_classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )
    bad = (t != ignore_index) & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise RuntimeError(f"index {int(t[bad][0])} is out of bounds for dimension 1 with size {n_classes}")
    class_weight = None if weight is None else weight._data.astype(x._data.dtype, copy=False)
    rows = options.chunk_rows(n, x.shape[1], n_classes)
    out = _ChunkedLinearCE.apply(x, linear_weight, linear_bias, t, class_weight, ignore_index, reduction,
                                 rows)
    return out.reshape(()) if not batched and reduction == "none" else out


def _chunkable(
    target: Tensor, linear_weight: Tensor, linear_bias: Tensor | None, reduction: str, label_smoothing: float
) -> bool:
    """torch's chunked path: index targets, no smoothing, a 2-D weight; otherwise warn and fall back."""
    if (
        reduction in ("mean", "sum", "none") and label_smoothing == 0 and target.dtype.name == "int64"
        and linear_weight.ndim == 2
    ):
        return True
    bias_shape = None if linear_bias is None else tuple(linear_bias.shape)
    warnings.warn(
        "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
        "label_smoothing == 0, target.dtype == int64, out_features == (). Got "
        f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype!r}, "
        f"out_features={tuple(linear_weight.shape[1:-1])}, tracing=False, linear_bias.shape={bias_shape}.",
        stacklevel=3,
    )
    return False


def _check_shapes(input: Tensor, linear_weight: Tensor) -> None:
    if input.ndim not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    in_features = linear_weight.shape[-1]
    if input.shape[-1] != in_features:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{input.shape[-1]} and {in_features}, respectively"
        )
    if linear_weight.ndim > 2 and input.ndim == 1:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
            f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}"
        )


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options: LinearCrossEntropyOptions | None = None,
) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``.

    Args:
        input: ``(in_features)`` or ``(N, in_features)``.
        linear_weight: ``(C, in_features)``, or ``(C, d1, ..., dK, in_features)``
            for a K-dimensional loss (batched input only).
        target: Class indices ``()``, ``(N)``, ``(N, d1, ..., dK)`` or class
            probabilities of the logits' shape.
        linear_bias: Optional ``(C)`` or ``(C, d1, ..., dK)``.
        weight: Optional ``(C)`` weight of each class.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
        ignore_index: For index targets, a target value that adds nothing
            (None means -100); not allowed with probability targets.
        label_smoothing: In ``[0, 1]``. Default: 0.0.
        options: ``LinearCrossEntropyOptions`` to run the row-chunked kernel (the
            same value with at most ``(chunk, C)`` logits at a time); configurations
            it does not support warn and take the reference path.
    """
    _check_shapes(input, linear_weight)
    if ignore_index is not None and target.dtype.is_floating_point:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if options is not None and _chunkable(target, linear_weight, linear_bias, reduction, label_smoothing):
        ignore = -100 if ignore_index is None else ignore_index
        reduction = _reduction(reduction)
        return _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore, options)
    n_rows = math.prod(linear_weight.shape[:-1])
    flat_bias = None if linear_bias is None else linear_bias.reshape(n_rows)
    logits = linear(input, linear_weight.reshape(n_rows, linear_weight.shape[-1]), flat_bias)
    if linear_weight.ndim > 2:
        logits = logits.reshape(input.shape[0], *linear_weight.shape[:-1])  # (N, C, d1, ..., dK)
    return cross_entropy(
        logits, target, weight=weight, ignore_index=-100 if ignore_index is None else ignore_index,
        reduction=reduction, label_smoothing=label_smoothing,
    )
