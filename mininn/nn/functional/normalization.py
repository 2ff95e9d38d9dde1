"""Normalisation: ``batch_norm``, ``instance_norm``, ``layer_norm``, ``group_norm``, ``rms_norm``,
``local_response_norm`` and ``normalize``.

Each is one fused op: statistics, normalisation and the per-channel affine
map in the forward, the closed-form gradient in the backward. Statistics
use the biased variance, as torch's do; ``batch_norm`` and ``instance_norm``
in training also update the running statistics in place (with the unbiased
variance).
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.grad_mode import is_grad_enabled
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import check_float, requires, scalar_name, wrap_dim, xp_of
from mininn.tensor import Tensor

__all__ = [
    "batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "local_response_norm", "normalize",
    "cross_map_lrn2d",
]


# ---- batch norm ------------------------------------------------------------------------------


class _BatchNorm(ArrayFunction):
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
            out = _scale_shift(x, scale, mean, b, bshape)
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


def _scale_shift(x: Any, scale: Any, mean: Any, b: Any, bshape: tuple[int, ...]) -> Any:
    """``(x - mean) * scale + b`` per channel, as one multiply-add with folded constants."""
    shift = -mean * scale if b is None else b - mean * scale
    out = x * scale.reshape(bshape)
    out += shift.reshape(bshape)
    return out


def _batch_norm_eval(input: Tensor, running_mean: Tensor, running_var: Tensor, weight: Tensor | None,
                     bias: Tensor | None, eps: float) -> Tensor | None:
    """Eval-mode ``batch_norm`` with grad mode off, on NumPy floats whose per-channel tensors are all
    ``(C,)`` of the input's dtype; None otherwise (``batch_norm`` then checks and raises). The same
    arithmetic as ``_BatchNorm``'s eval forward, without its argument checks and autograd wrapper."""
    x = input._data
    if type(x) is not np.ndarray or x.ndim < 2 or x.dtype.kind != "f":
        return None
    per_channel = (x.shape[1],)
    arrays = [None if t is None else t._data for t in (running_mean, running_var, weight, bias)]
    for a in arrays:
        if a is not None and (type(a) is not np.ndarray or a.dtype != x.dtype or a.shape != per_channel):
            return None
    mean, var, w, b = arrays
    invstd = np.reciprocal(np.sqrt(var + x.dtype.type(eps)))  # 1 / sqrt, correctly rounded either way
    scale = invstd if w is None else invstd * w
    return Tensor(_scale_shift(x, scale, mean, b, (1, x.shape[1]) + (1,) * (x.ndim - 2)))


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
    if not training and running_mean is not None and running_var is not None and not is_grad_enabled():
        out = _batch_norm_eval(input, running_mean, running_var, weight, bias, float(eps))
        if out is not None:
            return out
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


# ---- instance norm ---------------------------------------------------------------------------------


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample of ``(N, C, *)`` over its spatial dims.

    With ``use_input_stats`` the sample's own statistics normalise and, when
    running buffers are given, they move towards the batch average of the
    per-sample mean and unbiased variance (by ``momentum``); otherwise the
    running statistics normalise, as ``batch_norm`` does in eval.
    """
    if use_input_stats and int(np.prod(input.shape[2:])) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if not use_input_stats and running_mean is None:
        raise RuntimeError(
            "Expected running_mean and running_var to be defined when use_input_stats is false"
        )
    n, c = input.shape[0], input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {n * c} elements not {t.numel() * n}")
    check_float(input, "batch_norm")
    if any(t is not None and t.dtype != input.dtype for t in (weight, bias)):
        if input.dtype.name == "float32":
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    need = (requires(input), requires(weight), requires(bias))
    if not use_input_stats:  # running statistics of another float dtype are cast, as torch accepts them
        dt = input._data.dtype
        return _BatchNorm.apply(input, weight, bias, running_mean._data.astype(dt, copy=False),
                                running_var._data.astype(dt, copy=False), False, 0.0, float(eps), need)
    if running_mean is not None:
        _update_instance_running(input._data, running_mean._data, running_var._data, float(momentum))
    affine = (c,) + (1,) * (input.ndim - 2)
    return _GroupedNorm.apply(input, weight, bias, n * c, affine, float(eps), need)


def _update_instance_running(x: Any, running_mean: Any, running_var: Any, momentum: float) -> None:
    """Move the running statistics towards the batch average of each sample's channel statistics."""
    x3 = x.reshape(x.shape[0], x.shape[1], -1)  # (N, C, spatial)
    mean = x3.mean(axis=2)
    var = ((x3 - mean[:, :, None]) ** 2).sum(axis=2) / x.dtype.type(x3.shape[2] - 1)
    _update_running(running_mean, running_var, mean.mean(axis=0), var.mean(axis=0), momentum)


# ---- layer norm and group norm -------------------------------------------------------------------


class _GroupedNorm(ArrayFunction):
    """Normalise ``x`` viewed as ``(rows, cols)`` along ``cols``, then an elementwise affine map.

    ``affine_shape`` is how the weight and bias broadcast against ``x``.
    """

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, rows: int, affine_shape: tuple[int, ...], eps: float,
                need: tuple[bool, bool, bool]) -> Any:
        t = x.dtype.type
        x2 = _as_rows(x, rows)
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
            gxhat = _as_rows(g if w is None else g * w.reshape(affine_shape), rows)
            xh = _as_rows(xhat, rows)
            gx = gxhat - gxhat.mean(axis=1, keepdims=True) - xh * (gxhat * xh).mean(axis=1, keepdims=True)
            gx = (gx * invstd).reshape(g.shape)
        return gx, gw, gb, None, None, None, None


def _as_rows(a: Any, rows: int) -> Any:
    """``a`` viewed as ``(rows, cols)``; an empty batch (``rows == 0``) as ``(0, 1)``, so no mean is empty."""
    return a.reshape(rows, a.size // rows if rows else 1)


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
    check_float(input, kernel)
    if any(t is not None and t.dtype != input.dtype for t in (weight, bias)):
        raise RuntimeError(f"mixed dtype (CPU): expect parameter to have scalar type of {scalar_name(input)}")


def layer_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale by ``weight``, shift by ``bias``."""
    norm = _normalized_shape("layer_norm", input, normalized_shape, weight, bias)
    _check_dtypes(input, weight, bias, "LayerNormKernelImpl")
    rows = int(np.prod(input.shape[: input.ndim - len(norm)]))
    need = (requires(input), requires(weight), requires(bias))
    return _GroupedNorm.apply(input, weight, bias, rows, norm, float(eps), need)


def _normalized_shape(fn: str, input: Tensor, normalized_shape: Any, weight: Tensor | None,
                      bias: Tensor | None) -> tuple[int, ...]:
    """``normalized_shape`` as a tuple, after torch's checks (in torch's order) against the tensors."""
    if isinstance(normalized_shape, int):
        raise TypeError(f"{fn}(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    norm = tuple(int(n) for n in normalized_shape)
    k = len(norm)
    if k == 0:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
            "but got normalized_shape = []"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != norm:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{list(t.shape)} and normalized_shape = {list(norm)}"
            )
    if input.ndim < k or tuple(input.shape[input.ndim - k :]) != norm:
        dims = ", ".join(str(n) for n in norm)
        expected = f"*{dims}" if fn == "rms_norm" else f"*, {dims}"  # torch's two kernels differ here
        raise RuntimeError(
            f"Given normalized_shape={list(norm)}, expected input with shape [{expected}], but got input of "
            f"size{list(input.shape)}"
        )
    return norm


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


# ---- rms norm --------------------------------------------------------------------------------------


class _RMSNorm(ArrayFunction):
    """``x / sqrt(mean(x ** 2) + eps) * w``, the mean over each row of ``x`` seen as ``(rows, cols)``."""

    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, rows: int, eps: float, need: tuple[bool, bool]) -> Any:
        t = x.dtype.type
        x2 = _as_rows(x, rows)
        ms = _row_dots(x2)
        ms *= t(1 / x2.shape[1])
        ms += t(eps)
        invrms = np.sqrt(ms)
        np.reciprocal(invrms, out=invrms)
        xhat = (x2 * invrms).reshape(x.shape)
        if w is not None:
            w = w.astype(x.dtype, copy=False)
        if any(need):
            ctx.save_for_backward(xhat, invrms, w)
            ctx.meta = need
        return xhat if w is None else xhat * w

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        xhat, invrms, w = ctx.saved_tensors
        need = ctx.meta
        lead = tuple(range(g.ndim - (0 if w is None else w.ndim)))
        gw = (g * xhat).sum(axis=lead) if need[1] else None
        gx = None
        if need[0]:
            gxhat = _as_rows(g if w is None else g * w, invrms.shape[0])
            xh = xhat.reshape(gxhat.shape)
            gx = ((gxhat - xh * (gxhat * xh).mean(axis=1, keepdims=True)) * invrms).reshape(g.shape)
        return gx, gw, None, None, None


def rms_norm(input: Tensor, normalized_shape: Any, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """Divide by the root mean square over the trailing ``normalized_shape`` dims, then scale by ``weight``.

    ``eps`` (added to the mean square) defaults to the machine epsilon of ``input``'s dtype.
    """
    norm = _normalized_shape("rms_norm", input, normalized_shape, weight, None)
    check_float(input, "rms_norm")
    if eps is None:
        eps = float(np.finfo(input._data.dtype).eps)
    rows = int(np.prod(input.shape[: input.ndim - len(norm)]))
    return _RMSNorm.apply(input, weight, rows, float(eps), (requires(input), requires(weight)))


# ---- normalize ---------------------------------------------------------------------------------


class _Normalize(ArrayFunction):
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


# ---- local response norm -----------------------------------------------------------------------------


def _channel_window_sum(a: Any, before: int, after: int) -> Any:
    """``out[:, c] = a[:, c - before] + ... + a[:, c + after]`` along dim 1, zero outside the channels."""
    out = np.zeros_like(a)
    c = a.shape[1]
    for o in range(-before, after + 1):
        if abs(o) >= c:
            continue
        if o >= 0:
            out[:, : c - o] += a[:, o:]
        else:
            out[:, -o:] += a[:, : c + o]
    return out


class _LocalResponseNorm(ArrayFunction):
    """``x / (k + alpha / size * sum of x ** 2 over nearby channels) ** beta``."""

    @staticmethod
    def forward(ctx: Context, x: Any, size: int, alpha: float, beta: float, k: float) -> Any:
        t = x.dtype.type
        d = _channel_window_sum(x * x, size // 2, (size - 1) // 2)
        d *= t(alpha / size)
        d += t(k)
        scale = d ** t(-beta)
        ctx.save_for_backward(x, d, scale)
        ctx.meta = (size, alpha, beta)
        return x * scale

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, d, scale = ctx.saved_tensors
        size, alpha, beta = ctx.meta
        t = x.dtype.type
        # channel c reads c - size // 2 .. c + (size - 1) // 2, so x_j reaches the mirrored window
        spread = _channel_window_sum(g * x * scale / d, (size - 1) // 2, size // 2)
        return g * scale - t(2 * alpha * beta / size) * x * spread, None, None, None, None


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Normalise ``(N, C, *)`` across channels: ``x / (k + alpha / size * window sum of x ** 2) ** beta``.

    The window of channel ``c`` covers ``c - size // 2`` to ``c + (size - 1) // 2``.
    """
    if input.ndim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality{' ' * 26}input (got {input.ndim} dimensions)"
        )
    if size <= 0:
        kernel = f"kH: {size} kW: 1" if input.ndim == 3 else f"kT: {size} kH: 1 kW: 1"
        raise RuntimeError(f"kernel size should be greater than zero, but got {kernel}")
    if input.numel() == 0:
        return input
    return _LocalResponseNorm.apply(input, int(size), float(alpha), float(beta), float(k))


class _CrossMapLRN2d(ArrayFunction):
    """The legacy cross-map LRN of ``CrossMapLRN2d`` with torch's own forward and backward formulas.

    Channel ``c`` sums the squares of channels ``c - p + 1 .. c + p - 1`` (``p = (size - 1) // 2 + 1``)
    and, once that window has left it, of channel 0 as well. The backward is torch's, which spreads
    the gradient over ``c - p .. c + size - 1 - p``: it is not the exact derivative of the forward.
    """

    @staticmethod
    def forward(ctx: Context, x: Any, size: int, alpha: float, beta: float, k: float) -> Any:
        t = x.dtype.type
        p = (size - 1) // 2 + 1
        sq = x * x
        s = _channel_window_sum(sq, p - 1, p - 1)
        s[:, p:] += sq[:, :1]
        s *= t(alpha / size)
        s += t(k)
        out = x * s ** t(-beta)
        ctx.save_for_backward(x, s, out)
        ctx.meta = (size, alpha, beta)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, s, out = ctx.saved_tensors
        size, alpha, beta = ctx.meta
        t = x.dtype.type
        p = (size - 1) // 2 + 1
        spread = _channel_window_sum(g * out / s, p, size - 1 - p)
        return g * s ** t(-beta) - t(2 * alpha * beta / size) * x * spread, None, None, None, None


def cross_map_lrn2d(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                    k: float = 1.0) -> Tensor:
    """The op of ``CrossMapLRN2d`` on ``(N, C, H, W)`` (torch has no functional form of it)."""
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    if input.shape[1] == 0:
        raise IndexError(
            f"select(): index 0 out of range for tensor of size {list(input.shape)} at dimension 1"
        )
    return _CrossMapLRN2d.apply(input, int(size), float(alpha), float(beta), float(k))
