# ruff: noqa: A001, A002  (torch names the first argument `input`)
"""Loss functions: ``mse_loss``, ``l1_loss``, ``nll_loss``, ``cross_entropy``,
``binary_cross_entropy`` and ``binary_cross_entropy_with_logits``.

Each loss is one or two fused ``ArrayFunction``s on raw arrays (forward and a
hand-written backward), so a loss costs a few vectorised NumPy passes. Shapes,
defaults, reductions, dtype rules and error messages follow torch 2.13.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from mininn._dtype import get_default_dtype
from mininn._functions._util import broadcast_error, unbroadcast
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import check_float, kernel_dtype_error, scalar_name
from mininn.nn.functional.activation import log_softmax
from mininn.tensor import Tensor

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cross_entropy",
    "l1_loss",
    "mse_loss",
    "nll_loss",
]

# ---- reductions ----------------------------------------------------------------------
def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """torch's ``_Reduction.legacy_get_string``, with its deprecation warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
        stacklevel=3,
    )
    return ret


def _reduction(reduction: str, size_average: bool | None = None, reduce: bool | None = None) -> str:
    """Validate ``reduction`` (torch's ``_Reduction.get_enum``) after the legacy arguments."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction == "elementwise_mean":
        warnings.warn(
            "reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.",
            stacklevel=3,
        )
        return "mean"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(losses: Any, reduction: str, denominator: Any = None) -> Any:
    if reduction == "none":
        return losses
    total = losses.sum()
    if reduction == "sum":
        return total
    n = losses.size if denominator is None else denominator
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / n).astype(losses.dtype)


def _expand_grad(g: Any, shape: tuple[int, ...], reduction: str, denominator: Any = None) -> Any:
    """The gradient of each element of the unreduced losses."""
    if reduction == "none":
        return g
    if reduction == "mean":
        n = int(np.prod(shape)) if denominator is None else denominator
        with np.errstate(invalid="ignore", divide="ignore"):
            g = (g / n).astype(g.dtype)
    return np.broadcast_to(g, shape)


def _warn_target_size(input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({_size(target)}) that is different to the input size "
            f"({_size(input)}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=3,
        )


def _check_broadcast(a: Tensor, b: Tensor) -> None:
    """torch's error, naming ``a`` and ``b`` as tensors a and b, where the shapes do not broadcast."""
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise broadcast_error(tuple(a.shape), tuple(b.shape)) from None


def _size(t: Tensor) -> str:
    """The shape as messages print it: ``mininn.Size([3, 4])`` where torch prints ``torch.Size``."""
    return repr(t.shape)


def _float_operands(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """torch promotes an integer operand to the other's floating dtype."""
    if not target.dtype.is_floating_point and input.dtype.is_floating_point:
        target = target.to(input.dtype)
    elif not input.dtype.is_floating_point and target.dtype.is_floating_point:
        input = input.to(target.dtype)
    return input, target


def _check_float_kernel(name: str, input: Tensor, target: Tensor) -> None:
    """torch's error for a floating-point-only kernel given integer operands only."""
    if not input.dtype.is_floating_point and not target.dtype.is_floating_point:
        raise kernel_dtype_error(name, input)


def _in_input_dtype(input: Tensor, target: Tensor, allow_int: bool = False) -> Tensor:
    """``target`` in ``input``'s dtype, for losses whose result keeps the input's dtype."""
    if not input.dtype.is_floating_point and not allow_int:
        result = target if target.dtype.is_floating_point else Tensor(np.zeros(0, get_default_dtype().np))
        raise RuntimeError(
            f"result type {scalar_name(result)} can't be cast to the desired output type {scalar_name(input)}"
        )
    return target if target.dtype == input.dtype else target.to(input.dtype)


def _elementwise_weight(input: Tensor, weight: Tensor | None) -> Any:
    """The array of an optional per-element ``weight``, which torch requires in ``input``'s shape."""
    if weight is None:
        return None
    if weight.shape != input.shape:
        raise ValueError("Weights and input must have the same size.")
    return weight._data


def _check_float_mean(input: Tensor, reduction: str) -> None:
    if reduction == "mean" and not input.dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {scalar_name(input)}"
        )


# ---- mse / l1 ------------------------------------------------------------------------
class _PointwiseLoss(ArrayFunction):
    """``(x - t)**2`` or ``|x - t|`` with broadcasting, an optional weight and a reduction."""

    @staticmethod
    def forward(ctx: Context, x: Any, t: Any, weight: Any, kind: str, reduction: str) -> Any:
        diff = x - t
        losses = diff * diff if kind == "mse" else abs(diff)
        if weight is not None:
            losses = losses * weight
        ctx.save_for_backward(diff, weight)
        ctx.meta = (x.shape, t.shape, kind, reduction)
        return _reduce(losses, reduction, None if weight is None else weight.sum())

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        diff, weight = ctx.saved_tensors
        x_shape, t_shape, kind, reduction = ctx.meta
        denominator = None if weight is None else weight.sum()
        g = _expand_grad(g, diff.shape, reduction, denominator)
        local = 2 * diff if kind == "mse" else np.sign(diff)
        grad = g * local
        if weight is not None:
            grad = grad * weight
        return unbroadcast(grad, x_shape), unbroadcast(-grad, t_shape), None, None, None


def _pointwise(
    kind: str, input: Tensor, target: Tensor, size_average: bool | None, reduce: bool | None,
    reduction: str, weight: Tensor | None,
) -> Tensor:
    _warn_target_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if kind == "mse":
        _check_float_kernel("mse_cpu", input, target)
    elif not target.dtype.is_floating_point:
        _check_float_mean(input, reduction)
    input, target = _float_operands(input, target)
    return _PointwiseLoss.apply(input, target, _elementwise_weight(input, weight), kind, reduction)


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean squared error ``(input - target)**2``, reduced.

    Args:
        input: Predictions of any shape.
        target: Targets, broadcastable to ``input`` (a warning if the shapes differ).
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
        weight: Optional per-element weights of ``input``'s shape; ``"mean"``
            then divides by ``weight.sum()``.
    """
    return _pointwise("mse", input, target, size_average, reduce, reduction, weight)


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """Mean absolute error ``|input - target|``, reduced (see ``mse_loss`` for the arguments)."""
    return _pointwise("l1", input, target, size_average, reduce, reduction, weight)


# ---- log-softmax, nll and cross-entropy ----------------------------------------------
class _NLLLoss(ArrayFunction):
    """Picks ``-logp[n, target[n], ...]``, weighted, skipping ``ignore_index``."""

    @staticmethod
    def forward(ctx: Context, logp: Any, index: Any, weight: Any, reduction: str) -> Any:
        # logp: (N, C, *); index: (N, *) safe class indices; weight: (N, *) (0 where ignored)
        picked = np.take_along_axis(logp, index[:, None], axis=1)[:, 0]
        losses = -picked * weight
        ctx.save_for_backward(index, weight)
        ctx.meta = (logp.shape, logp.dtype, reduction)
        return _reduce(losses, reduction, weight.sum())

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        index, weight = ctx.saved_tensors
        shape, dtype, reduction = ctx.meta
        g = _expand_grad(g, weight.shape, reduction, weight.sum())
        grad = np.zeros(shape, dtype)
        np.put_along_axis(grad, index[:, None], (-g * weight)[:, None], axis=1)
        return grad, None, None, None


def _check_nll_shapes(input: Tensor, target: Tensor, n_classes: int, weight: Tensor | None) -> None:
    """torch's shape checks of ``nll_loss_nd`` and the kernels under it, in its order."""
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if input.ndim != 1:
        if target.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if input.shape[0] != target.shape[0]:
            raise ValueError(
                f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                f"({target.shape[0]})."
            )
    if target.dtype.name not in ("int64", "uint8"):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {scalar_name(target)}"
        )
    if input.ndim <= 2 and target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim == 4 and target.ndim != 3:
        raise RuntimeError(
            "only batches of spatial targets supported (3D tensors) but got targets of "
            f"dimension: {target.ndim}"
        )
    if input.ndim == 4 and target.shape[1:] != input.shape[2:]:
        raise RuntimeError(
            f"size mismatch (got input: {list(input.shape)} , target: {list(target.shape)}"
        )
    if input.ndim == 3 or input.ndim > 4:
        if tuple(target.shape[1:]) != tuple(input.shape[2:]):
            expected = [input.shape[0], *input.shape[2:]]
            raise RuntimeError(f"Expected target size {expected}, got {list(target.shape)}")
    if weight is not None and weight.numel() != n_classes:
        raise RuntimeError(
            f"weight tensor should be defined either for all {n_classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )


def _class_weights(
    target: Any, n_classes: int, weight: Tensor | None, ignore_index: int, dtype: Any
) -> tuple[Any, Any]:
    """Safe indices (ignored -> 0) and per-element weights (0 where ignored), bounds-checked."""
    target = target.astype(np.int64, copy=False)
    valid = target != ignore_index
    bad = valid & ((target < 0) | (target >= n_classes))
    if bad.any():
        raise IndexError(f"Target {int(target[bad].reshape(-1)[0])} is out of bounds.")
    index = np.where(valid, target, 0)
    if weight is None:
        w = valid.astype(dtype)
    else:
        w = weight._data.astype(dtype, copy=False)[index] * valid
    return index, w


def _nll(
    logp: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str
) -> tuple[Tensor, Any, Any]:
    """The nll loss and the (index, weight) arrays it used, in batched (N, C, *) form."""
    n_classes = logp.shape[0] if logp.ndim == 1 else logp.shape[1]
    _check_nll_shapes(logp, target, n_classes, weight)
    batched = logp if logp.ndim > 1 else logp.reshape(1, n_classes)
    t = target._data.reshape(1) if logp.ndim == 1 and target.ndim == 0 else target._data
    index, w = _class_weights(t, n_classes, weight, ignore_index, logp._data.dtype)
    out = _NLLLoss.apply(batched, index, w, reduction)
    if reduction == "none" and out.shape != target.shape:
        out = out.reshape(target.shape)
    return out, index, w


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities.

    Args:
        input: Log-probabilities ``(C)``, ``(N, C)`` or ``(N, C, d1, ...)``.
        target: Class indices (int64) ``()``, ``(N)`` or ``(N, d1, ...)``.
        weight: Optional ``(C)`` weight of each class.
        size_average, reduce: Deprecated; use ``reduction``.
        ignore_index: Targets with this value add nothing (nor to the mean's
            denominator). Default: -100.
        reduction: ``"none"``, ``"mean"`` (weighted mean, default) or ``"sum"``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    return _nll(input, target, weight, ignore_index, reduction)[0]


class _SoftTargetLoss(ArrayFunction):
    """``-(logp * coef).sum(class_dim)``; ``coef`` holds target probabilities times weights."""

    @staticmethod
    def forward(ctx: Context, logp: Any, coef: Any, weight: Any, dim: int) -> Any:
        if weight is not None:
            coef = coef * weight
        ctx.save_for_backward(logp, coef, weight)
        ctx.dim = dim
        return -(logp * coef).sum(axis=dim)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        logp, coef, weight = ctx.saved_tensors
        g = np.expand_dims(g, ctx.dim)
        grad_coef = -g * logp
        if weight is not None:
            grad_coef = grad_coef * weight
        return -g * coef, grad_coef, None, None


def _weight_view(weight: Tensor | None, ndim: int, class_dim: int, dtype: Any) -> Any:
    """``weight`` shaped to broadcast along ``class_dim`` of an ``ndim``-d input."""
    if weight is None:
        return None
    shape = [1] * ndim
    shape[class_dim] = weight.numel()
    return weight._data.astype(dtype, copy=False).reshape(shape)


def _cross_entropy_probs(
    input: Tensor, target: Tensor, weight: Tensor | None, reduction: str, label_smoothing: float
) -> Tensor:
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    w = _weight_view(weight, input.ndim, class_dim, input._data.dtype)
    per = _SoftTargetLoss.apply(logp, target, w, class_dim)
    if reduction == "none":
        return per
    total = per.sum()
    if reduction == "sum":
        return total
    count = input.numel() // n_classes if n_classes else 0
    return total / count if count else total * float("nan")


def _cross_entropy_smoothed(
    input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str,
    label_smoothing: float,
) -> Tensor:
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    nll, index, w_target = _nll(logp, target, weight, ignore_index, reduction)
    valid = np.expand_dims(target._data != ignore_index, class_dim)
    coef = valid.astype(input._data.dtype)
    w = _weight_view(weight, input.ndim, class_dim, input._data.dtype)
    smooth = _SoftTargetLoss.apply(logp, Tensor(coef), w, class_dim)
    if reduction == "sum":
        smooth = smooth.sum()
    elif reduction == "mean":
        denominator = w_target.sum() if weight is not None else valid.sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            smooth = smooth.sum() / float(denominator)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """Cross-entropy between logits and class indices or class probabilities.

    Args:
        input: Unnormalized logits ``(C)``, ``(N, C)`` or ``(N, C, d1, ...)``.
        target: Class indices (int64, the shape of ``input`` without the class
            dim) or class probabilities (floating, the shape of ``input``).
        weight: Optional ``(C)`` weight of each class.
        size_average, reduce: Deprecated; use ``reduction``.
        ignore_index: For index targets, a target value that adds nothing.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
        label_smoothing: In ``[0, 1]``; mixes the target with the uniform
            distribution. Default: 0.0.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if input.shape == target.shape:
        if not target.dtype.is_floating_point:
            raise RuntimeError(
                "Expected floating point type for target with class probabilities, got "
                f"{scalar_name(target)}"
            )
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        _check_label_smoothing(label_smoothing)
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    if label_smoothing > 0.0:
        _check_label_smoothing(label_smoothing)
        return _cross_entropy_smoothed(
            input, target, weight, ignore_index, reduction, label_smoothing
        )
    if input.ndim == 0:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    logp = log_softmax(input, 0 if input.ndim == 1 else 1)
    return _nll(logp, target, weight, ignore_index, reduction)[0]


def _check_label_smoothing(label_smoothing: float) -> None:
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}"
        )


# ---- binary cross-entropy ------------------------------------------------------------
class _BCEWithLogits(ArrayFunction):
    """``(1 - t) * x - (1 + (pos_weight - 1) * t) * log_sigmoid(x)``, weighted and reduced."""

    @staticmethod
    def forward(ctx: Context, x: Any, t: Any, weight: Any, pos_weight: Any, reduction: str) -> Any:
        log_sig = np.minimum(x, 0) - np.log1p(np.exp(-abs(x)))
        log_weight = 1 if pos_weight is None else (pos_weight - 1) * t + 1
        losses = (1 - t) * x - log_weight * log_sig
        if weight is not None:
            losses = losses * weight
        ctx.save_for_backward(x, t, weight, pos_weight, log_sig)
        ctx.reduction = reduction
        return _reduce(losses, reduction)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, t, weight, pos_weight, log_sig = ctx.saved_tensors
        g = _expand_grad(g, np.broadcast_shapes(x.shape, t.shape), ctx.reduction)
        if weight is not None:
            g = g * weight
        sig_neg = np.exp(log_sig - x)  # sigmoid(-x)
        log_weight = 1 if pos_weight is None else (pos_weight - 1) * t + 1
        grad_x = g * ((1 - t) - log_weight * sig_neg)
        grad_t = g * (-x - (0 if pos_weight is None else (pos_weight - 1) * log_sig))
        return (
            unbroadcast(grad_x.astype(x.dtype, copy=False), x.shape),
            unbroadcast(grad_t.astype(t.dtype, copy=False), t.shape),
            None, None, None,
        )


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """Binary cross-entropy of logits, computed stably through ``log_sigmoid``.

    Args:
        input: Logits of any shape.
        target: Probabilities of the same shape.
        weight: Optional weight broadcast to the losses.
        size_average, reduce: Deprecated; use ``reduction``.
        reduction: ``"none"``, ``"mean"`` (default) or ``"sum"``.
        pos_weight: Optional weight of positive examples, broadcast along the
            last (class) dimension.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({_size(target)}) must be the same as input size ({_size(input)})"
        )
    check_float(input, "log_sigmoid_cpu")
    if not target.dtype.is_floating_point:
        raise RuntimeError(
            f"result type {scalar_name(input)} can't be cast to the desired output type {scalar_name(target)}"
        )
    input = input if input.dtype == target.dtype else input.to(target.dtype)  # torch: target's dtype
    w = None if weight is None else weight._data.astype(input._data.dtype, copy=False)
    pw = None if pos_weight is None else pos_weight._data.astype(input._data.dtype, copy=False)
    return _BCEWithLogits.apply(input, target, w, pw, reduction)


class _BCE(ArrayFunction):
    """``-w * (t * log(x) + (1 - t) * log(1 - x))`` with logs clamped at -100 (torch)."""

    @staticmethod
    def forward(ctx: Context, x: Any, t: Any, weight: Any, reduction: str) -> Any:
        with np.errstate(divide="ignore"):
            log_x = np.maximum(np.log(x), -100)
            log_1mx = np.maximum(np.log1p(-x), -100)
        losses = -(t * log_x + (1 - t) * log_1mx)
        if weight is not None:
            losses = losses * weight
        ctx.save_for_backward(x, t, weight)
        ctx.reduction = reduction
        return _reduce(losses.astype(x.dtype, copy=False), reduction)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, t, weight = ctx.saved_tensors
        g = _expand_grad(g, x.shape, ctx.reduction)
        if weight is not None:
            g = g * weight
        grad_x = g * (x - t) / np.maximum((1 - x) * x, 1e-12)
        with np.errstate(divide="ignore"):
            grad_t = g * (np.log1p(-x) - np.log(x))  # -logit(x), unclamped as in torch
        return grad_x.astype(x.dtype, copy=False), grad_t.astype(t.dtype, copy=False), None, None


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Binary cross-entropy of probabilities in ``[0, 1]`` (see the logits version).

    Raises:
        ValueError: ``target`` and ``input`` differ in size.
        RuntimeError: An input lies outside ``[0, 1]``.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({_size(target)}) that is different to the input size "
            f"({_size(input)}) is deprecated. Please ensure they have the same size."
        )
    _check_float_kernel("binary_cross_entropy", input, target)
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {scalar_name(target)} but expected {scalar_name(input)}")
    x = input._data
    if ((x < 0) | (x > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    w = None
    if weight is not None:
        w = np.broadcast_to(weight._data.astype(x.dtype, copy=False), x.shape)
    return _BCE.apply(input, target, w, reduction)
