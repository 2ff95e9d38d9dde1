"""Normalisation: ``batch_norm``, ``layer_norm``, ``group_norm`` and ``normalize``.

Each is one fused op: statistics, normalisation and the per-channel affine
map in the forward, the closed-form gradient in the backward. Statistics
use the biased variance, as torch's do; ``batch_norm`` in training also
updates the running statistics in place (with the unbiased variance).
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.function import Context, Function
from mininn.nn.functional._utils import requires, scalar_name, wrap_dim, xp_of
from mininn.tensor import Tensor

__all__ = ["batch_norm", "layer_norm", "group_norm", "normalize"]


# ---- batch norm ------------------------------------------------------------------------------


class _BatchNorm(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, running_mean: Any, running_var: Any,
                training: bool, momentum: float, eps: float, need: tuple[bool, bool, bool]) -> Any:
        axes = (0,) + tuple(range(2, x.ndim))
        bshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        t = x.dtype.type
        if training:
            mean = x.mean(axis=axes)
            xc = x - mean.reshape(bshape)
            var = (xc * xc).mean(axis=axes)
            if running_mean is not None:
                n = x.size // x.shape[1]
                _update_running(running_mean, running_var, mean, var * t(n / max(n - 1, 1)), momentum)
        else:
            mean, var = running_mean, running_var
            xc = None
        invstd = t(1) / np.sqrt(var + t(eps))
        scale = invstd if w is None else invstd * w
        if xc is None:  # eval: one multiply-add with folded constants
            shift = -mean * scale if b is None else b - mean * scale
            out = x * scale.reshape(bshape)
            out += shift.reshape(bshape)
        else:
            out = xc * scale.reshape(bshape)
            if b is not None:
                out += b.reshape(bshape)
        if any(need):
            xhat = (x - mean.reshape(bshape) if xc is None else xc) * invstd.reshape(bshape)
            ctx.save_for_backward(xhat, invstd, w)
            ctx.meta = (axes, bshape, training, need)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        xhat, invstd, w = ctx.saved_tensors
        axes, bshape, training, need = ctx.meta
        gb = g.sum(axis=axes)
        gxhat_sum = (g * xhat).sum(axis=axes)
        gx = None
        if need[0]:
            scale = invstd if w is None else invstd * w
            if training:
                n = g.size // g.shape[1]
                t = g.dtype.type
                gx = g - (gb / t(n)).reshape(bshape) - xhat * (gxhat_sum / t(n)).reshape(bshape)
                gx *= scale.reshape(bshape)
            else:
                gx = g * scale.reshape(bshape)
        gw = gxhat_sum if need[1] else None
        return gx, gw, (gb if need[2] else None), None, None, None, None, None, None


def _update_running(running_mean: Any, running_var: Any, mean: Any, unbiased_var: Any,
                    momentum: float) -> None:
    keep = running_mean.dtype.type(1.0 - momentum)
    m = running_mean.dtype.type(momentum)
    running_mean *= keep
    running_mean += m * mean.astype(running_mean.dtype, copy=False)
    running_var *= keep
    running_var += m * unbiased_var.astype(running_var.dtype, copy=False)


def _check_channels(name: str, t: Tensor | None, channels: int) -> None:
    if t is not None and t.numel() != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) of ``(N, C, *)`` by batch or running statistics.

    In training the batch's biased variance normalises and, when running
    buffers are given, ``running = (1 - momentum) * running + momentum * batch_stat``
    updates them in place (the variance unbiased). Otherwise the running
    statistics normalise.
    """
    if training:
        size = input.shape
        if int(np.prod(size)) // max(size[1] if len(size) > 1 else 1, 1) == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    channels = input.shape[1] if input.ndim > 1 else 0
    _check_channels("running_mean", running_mean, channels)
    _check_channels("running_var", running_var, channels)
    _check_channels("weight", weight, channels)
    _check_channels("bias", bias, channels)
    for t in (running_mean, running_var, weight, bias):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    need = (requires(input), requires(weight), requires(bias))
    return _BatchNorm.apply(
        input, weight, bias,
        None if running_mean is None else running_mean._data,
        None if running_var is None else running_var._data,
        training, float(momentum), float(eps), need,
    )


# ---- layer norm and group norm -------------------------------------------------------------------


class _GroupedNorm(Function):
    """Normalise ``x`` viewed as ``(rows, cols)`` along ``cols``, then an elementwise affine map.

    ``affine_shape`` is how the weight and bias broadcast against ``x``.
    """

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, rows: int, affine_shape: tuple[int, ...], eps: float,
                need: tuple[bool, bool, bool]) -> Any:
        t = x.dtype.type
        x2 = x.reshape(rows, -1)
        xhat = x2 - _row_means(x2)  # the one new array: centred, then normalised and mapped in place
        var = _row_dots(xhat)
        var *= t(1 / x2.shape[1])
        var += t(eps)
        invstd = np.sqrt(var)
        np.reciprocal(invstd, out=invstd)
        xhat *= invstd
        xhat = xhat.reshape(x.shape)
        if any(need):
            ctx.save_for_backward(xhat, invstd, w)
            ctx.meta = (rows, affine_shape, None if b is None else b.shape, need)
            out = xhat if w is None else xhat * w.reshape(affine_shape)
            return out if b is None else out + b.reshape(affine_shape)
        if w is not None:
            xhat *= w.reshape(affine_shape)
        if b is not None:
            xhat += b.reshape(affine_shape)
        return xhat

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        xhat, invstd, w = ctx.saved_tensors
        rows, affine_shape, b_shape, need = ctx.meta
        reduce_axes = _affine_reduce_axes(g.shape, affine_shape)
        gw = (g * xhat).sum(axis=reduce_axes).reshape(w.shape) if need[1] else None
        gb = g.sum(axis=reduce_axes).reshape(b_shape) if need[2] else None
        gx = None
        if need[0]:
            gxhat = (g if w is None else g * w.reshape(affine_shape)).reshape(rows, -1)
            xh = xhat.reshape(rows, -1)
            gx = gxhat - gxhat.mean(axis=1, keepdims=True) - xh * (gxhat * xh).mean(axis=1, keepdims=True)
            gx = (gx * invstd).reshape(g.shape)
        return gx, gw, gb, None, None, None, None


def _row_means(x2: Any) -> Any:
    """``(rows, 1)`` means of a ``(rows, cols)`` array."""
    return x2.mean(axis=1, keepdims=True)


def _row_dots(x2: Any) -> Any:
    """``(rows, 1)`` sums of squares in one pass, with no ``x * x`` temporary.

    ``einsum`` rather than a BLAS dot: a BLAS call per norm is a thread rendezvous when BLAS
    runs several threads, which costs far more than the sum on a busy machine.
    """
    return xp_of(x2).einsum("ij,ij->i", x2, x2).reshape(-1, 1)


def _affine_reduce_axes(shape: tuple[int, ...], affine_shape: tuple[int, ...]) -> tuple[int, ...]:
    lead = len(shape) - len(affine_shape)
    return tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(affine_shape) if n == 1 and shape[lead + i] != 1
    )


def _check_dtypes(input: Tensor, weight: Tensor | None, bias: Tensor | None, kernel: str) -> None:
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_name(input)}'")
    if any(t is not None and t.dtype != input.dtype for t in (weight, bias)):
        raise RuntimeError(f"mixed dtype (CPU): expect parameter to have scalar type of {scalar_name(input)}")


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale by ``weight``, shift by ``bias``."""
    if isinstance(normalized_shape, int):
        raise TypeError(
            "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int"
        )
    norm = tuple(int(n) for n in normalized_shape)
    k = len(norm)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k :]) != norm:
        expected = ", ".join(["*"] + [str(n) for n in norm])
        raise RuntimeError(
            f"Given normalized_shape={list(norm)}, expected input with shape [{expected}], but got input of "
            f"size{list(input.shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != norm:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{list(t.shape)} and normalized_shape = {list(norm)}"
            )
    _check_dtypes(input, weight, bias, "LayerNormKernelImpl")
    rows = int(np.prod(input.shape[: input.ndim - k]))
    need = (requires(input), requires(weight), requires(bias))
    return _GroupedNorm.apply(input, weight, bias, rows, norm, float(eps), need)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise ``(N, C, *)`` over each group of ``C / num_groups`` channels and the spatial dims."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    channels = input.shape[1]
    if channels % num_groups != 0:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{list(input.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != channels):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in input, but got "
                f"{name} of shape {list(t.shape)} and input of shape {list(input.shape)}"
            )
    _check_dtypes(input, weight, bias, "GroupNormKernelImpl")
    affine = (channels,) + (1,) * (input.ndim - 2)
    need = (requires(input), requires(weight), requires(bias))
    return _GroupedNorm.apply(input, weight, bias, input.shape[0] * num_groups, affine, float(eps), need)


# ---- normalize ---------------------------------------------------------------------------------


class _Normalize(Function):
    @staticmethod
    def forward(ctx: Context, x: Any, p: float, dim: int, eps: float) -> Any:
        t = x.dtype.type
        a = abs(x)
        if p == 2:
            norm = np.sqrt((x * x).sum(axis=dim, keepdims=True))
        elif p == np.inf:
            norm = a.max(axis=dim, keepdims=True)
        else:
            norm = (a ** t(p)).sum(axis=dim, keepdims=True) ** t(1 / p)
        denom = np.maximum(norm, t(eps))
        ctx.save_for_backward(x, norm, denom)
        ctx.meta = (p, dim, eps)
        return x / denom

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, norm, denom = ctx.saved_tensors
        p, dim, eps = ctx.meta
        t = x.dtype.type
        gx = g / denom
        # d(norm)/dx, only where the norm (not eps) is the denominator
        dot = (g * x).sum(axis=dim, keepdims=True) / (denom * denom)
        active = norm > eps
        if p == 2:
            dnorm = x / np.where(active, norm, t(1))
        elif p == np.inf:
            a = abs(x)
            hit = a == norm
            dnorm = np.sign(x) * hit / np.maximum(hit.sum(axis=dim, keepdims=True), 1)
        else:
            safe = np.where(active, norm, t(1))
            ratio = np.where(x == 0, t(1), abs(x) / safe)  # 0 ** (p - 1) is inf for p < 1; sign(0) wins
            dnorm = np.sign(x) * ratio ** t(p - 1)
        return gx - dot * np.where(active, dnorm, t(0)), None, None, None


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``x / max(||x||_p, eps)`` along ``dim``."""
    return _Normalize.apply(input, float(p), wrap_dim(dim, input.ndim), float(eps))

