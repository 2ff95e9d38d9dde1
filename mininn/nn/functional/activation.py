"""Activation functions: elementwise nonlinearities, softmax and log-softmax.

Each op is one ``ArrayFunction`` with an analytic backward. ``inplace=True``
makes the input hold the result, as torch's in-place ops do: written into
its array when autograd records nothing (inference), rebased onto the new
graph node while recording.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from mininn import _factories
from mininn._functions._util import unbroadcast
from mininn._functions.softmax import log_softmax as _core_log_softmax
from mininn._functions.softmax import softmax as _core_softmax
from mininn._functions.unary import gelu_array, normal_cdf_array
from mininn._functions.unary import sigmoid as _core_sigmoid
from mininn._functions.unary import tanh as _core_tanh
from mininn._tensor_core import TensorCore
from mininn.autograd.grad_mode import _state
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import (
    MulMask,
    apply_op,
    check_float,
    kernel_dtype_error,
    needs_grad,
    xp_of,
)
from mininn.tensor import Tensor

__all__ = [
    "relu",
    "relu6",
    "hardtanh",
    "leaky_relu",
    "prelu",
    "rrelu",
    "threshold",
    "elu",
    "selu",
    "celu",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "softplus",
    "logsigmoid",
    "softmax",
    "log_softmax",
    "relu_",
    "elu_",
    "celu_",
    "selu_",
    "leaky_relu_",
    "hardtanh_",
    "rrelu_",
    "threshold_",
]

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_BETA = math.sqrt(2.0 / math.pi)
_TANH_KAPPA = 0.044715
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _stable_sigmoid(x: Any) -> Any:
    one = x.dtype.type(1)
    e = np.exp(-abs(x))
    return np.where(x >= 0, one, e) / (one + e)


class _Pointwise(ArrayFunction):
    """A one-input activation given by its maths alone: ``compute(x)`` returns the output followed
    by what the gradient needs, ``grad(g, *saved)`` the gradient of the input."""

    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        raise NotImplementedError

    @staticmethod
    def grad(g: Any, *saved: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx: Context, x: Any) -> Any:
        out, *saved = cls.compute(x)
        ctx.save_for_backward(*saved)
        return out

    @classmethod
    def backward(cls, ctx: Context, g: Any) -> Any:
        return cls.grad(g, *ctx.saved_tensors)


def _finish(input: Tensor, fn: type[ArrayFunction], inplace: bool, *args: Any) -> Tensor:
    """Run ``fn`` on ``input``; with ``inplace``, ``input`` takes the result (torch's in-place op).

    Without autograd recording, an op with a raw in-place kernel writes straight into the
    input's array: one pass and no temporary.
    """
    if inplace:
        kernel = _IN_PLACE.get(fn)
        if kernel is not None and not needs_grad(input):
            kernel(input._data, *args)
            return input
    return apply_op(fn, input, inplace, *args)


# ---- piecewise-linear ----------------------------------------------------------------------


# one zero scalar per dtype: making ``dtype.type(0)`` on every call costs as much as a small relu
_ZEROS: dict[Any, Any] = {}


def _zero(dtype: Any) -> Any:
    z = _ZEROS.get(dtype)
    if z is None:
        z = _ZEROS[dtype] = dtype.type(0)
    return z


def _relu_array(x: Any) -> Any:
    return np.maximum(x, _zero(x.dtype))


class _Relu(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        out = _relu_array(x)
        return out, out

    @staticmethod
    def grad(g: Any, out: Any) -> Any:
        return g * (out > 0)


def _relu_(x: Any) -> None:
    np.maximum(x, _zero(x.dtype), out=x)


def _hardtanh_(x: Any, lo: float, hi: float) -> None:
    np.clip(x, x.dtype.type(lo), x.dtype.type(hi), out=x)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)`` elementwise."""
    if inplace:
        return _finish(input, _Relu, inplace)
    if not _state.enabled and isinstance(input, TensorCore):
        return Tensor(_relu_array(input._data))  # nothing to record: _Relu's arithmetic alone
    return _Relu.apply(input)


class _Hardtanh(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, lo: float, hi: float) -> Any:
        ctx.save_for_backward(x)
        ctx.bounds = (lo, hi)
        return np.clip(x, x.dtype.type(lo), x.dtype.type(hi))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (x,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        return g * ((x > lo) & (x < hi)), None, None


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Clamp to ``[min_val, max_val]``; the gradient is zero outside the open interval."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _finish(input, _Hardtanh, inplace, min_val, max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``."""
    return _finish(input, _Hardtanh, inplace, 0.0, 6.0)


class _LeakyRelu(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, slope: float) -> Any:
        ctx.save_for_backward(x)
        ctx.slope = slope
        return np.where(x > 0, x, x * x.dtype.type(slope))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (x,) = ctx.saved_tensors
        return np.where(x > 0, g, g * g.dtype.type(ctx.slope)), None


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` for positive ``x``, else ``negative_slope * x``."""
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)):
        raise TypeError(
            "leaky_relu(): argument 'negative_slope' (position 2) must be Number, not "
            f"{type(negative_slope).__name__}"
        )
    return _finish(input, _LeakyRelu, inplace, float(negative_slope))


class _Threshold(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, threshold: float, value: float) -> Any:
        below = x <= threshold
        ctx.save_for_backward(below)
        return np.where(below, x.dtype.type(value), x)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (below,) = ctx.saved_tensors
        return np.where(below, g.dtype.type(0), g), None, None


def _threshold_(x: Any, threshold: float, value: float) -> None:
    x[x <= threshold] = value


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``."""
    return _finish(input, _Threshold, inplace, threshold, value)


def _rrelu_noise(x: Any, lower: float, upper: float, generator: Any = None) -> Any:
    """Slopes drawn from U(lower, upper) where ``x <= 0``, 1 elsewhere, in ``x``'s dtype."""
    gen = generator or _factories.default_generator
    with gen._lock:
        draws = gen.rng.uniform(lower, upper, x.shape)
    xp = xp_of(x)
    return xp.where(x > 0, x.dtype.type(1), xp.asarray(draws).astype(x.dtype))


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False, *, _generator: Any = None) -> Tensor:
    """Randomized leaky ReLU: negative slopes drawn from U(lower, upper) per element in training,
    their mean ``(lower + upper) / 2`` otherwise."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        check_float(input, "leaky_relu_cpu")
        return _finish(input, _LeakyRelu, inplace, (lower + upper) / 2)
    check_float(input, "rrelu_with_noise_out_cpu")
    noise = Tensor(_rrelu_noise(input._data, float(lower), float(upper), _generator))
    return apply_op(MulMask, input, inplace, noise)


class _Prelu(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, w: Any) -> Any:
        wb = _prelu_weight_view(w, x.ndim)
        ctx.save_for_backward(x, wb)
        ctx.w_shape = w.shape
        return np.where(x > 0, x, x * wb)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, wb = ctx.saved_tensors
        pos = x > 0
        gx = np.where(pos, g, g * wb)
        gw = unbroadcast(np.where(pos, 0, g * x), wb.shape).reshape(ctx.w_shape)
        return gx, gw


def _prelu_weight_view(w: Any, ndim: int) -> Any:
    """The weight shaped to broadcast along the channel dim (dim 1) of an ``ndim`` input."""
    if ndim < 2:
        return w.reshape(())
    return w.reshape((1, -1) + (1,) * (ndim - 2))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` for positive ``x``, else ``weight * x`` with one weight per channel (dim 1)."""
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{weight.numel()} and channel size = {channels}."
        )
    return _Prelu.apply(input, weight)


# ---- smooth ----------------------------------------------------------------------------------


class _Elu(ArrayFunction):
    """``scale * x`` for positive ``x``, else ``scale * alpha * (exp(input_scale * x) - 1)``.

    The backward follows torch's two formulas: from the input (``alpha * exp(x * s)``) or, after an
    in-place call, from the result (``(y + alpha) * s``); ``s`` is the backward's input scale, which
    torch rounds through float32 for CELU.
    """

    @staticmethod
    def forward(ctx: Context, x: Any, alpha: float, scale: float, input_scale: float, grad_scale: float,
                from_result: bool) -> Any:
        t = x.dtype.type
        neg = t(scale * alpha) * np.expm1(np.minimum(x, t(0)) * t(input_scale))
        ctx.save_for_backward(x, neg if from_result else None)
        ctx.params = (scale * alpha, scale, grad_scale)
        return np.where(x > 0, x * t(scale) if scale != 1.0 else x, neg)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x, neg = ctx.saved_tensors
        coef, scale, s = ctx.params
        t = x.dtype.type
        if neg is None:
            slope = t(coef * s) * np.exp(np.minimum(x, t(0)) * t(s))
        else:
            slope = (neg + t(coef)) * t(s)
        gx = np.where(x > 0, g * t(scale) if scale != 1.0 else g, g * slope)
        return gx, None, None, None, None, None


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` for positive ``x``, else ``alpha * (exp(x) - 1)``."""
    check_float(input, "elu_cpu")
    return _finish(input, _Elu, inplace, float(alpha), 1.0, 1.0, 1.0, inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with SELU's fixed ``alpha`` and ``scale`` (self-normalising)."""
    check_float(input, "elu_cpu")
    return _finish(input, _Elu, inplace, _SELU_ALPHA, _SELU_SCALE, 1.0, 1.0, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` for positive ``x``, else ``alpha * (exp(x / alpha) - 1)``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    check_float(input, "elu_cpu")
    grad_scale = 1.0 / float(np.float32(alpha))
    return _finish(input, _Elu, inplace, float(alpha), 1.0, 1.0 / float(alpha), grad_scale, inplace)


class _Gelu(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        return gelu_array(x), x

    @staticmethod
    def grad(g: Any, x: Any) -> Any:
        pdf = np.exp(x * x * x.dtype.type(-0.5)) * x.dtype.type(_INV_SQRT_2PI)
        return g * (normal_cdf_array(x) + x * pdf)


class _GeluTanh(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        t = x.dtype.type
        th = np.tanh(t(_TANH_BETA) * (x + t(_TANH_KAPPA) * x * x * x))
        return t(0.5) * x * (t(1) + th), x, th

    @staticmethod
    def grad(g: Any, x: Any, th: Any) -> Any:
        t = x.dtype.type
        left = t(0.5) * (t(1) + th)
        right = t(0.5) * x * (t(1) - th * th) * t(_TANH_BETA) * (t(1) + t(3 * _TANH_KAPPA) * x * x)
        return g * (left + right)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)``; ``approximate='tanh'`` uses the tanh formula."""
    if approximate in ("none", "tanh") and not input.dtype.is_floating_point:
        raise kernel_dtype_error("GeluKernelImpl", input)
    if approximate == "none":
        return _Gelu.apply(input)
    if approximate == "tanh":
        return _GeluTanh.apply(input)
    raise RuntimeError("approximate argument must be either none or tanh.")


class _Silu(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        s = _stable_sigmoid(x)
        return x * s, x, s

    @staticmethod
    def grad(g: Any, x: Any, s: Any) -> Any:
        one = x.dtype.type(1)
        return g * s * (one + x * (one - s))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    return _finish(input, _Silu, inplace)


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``, computed without overflow (the Tensor op)."""
    return _core_sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent (the Tensor op)."""
    return _core_tanh(input)


class _Softplus(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, beta: float, threshold: float) -> Any:
        t = x.dtype.type
        z = x * t(beta)
        ctx.save_for_backward(z)
        ctx.params = (beta, threshold)
        smooth = (np.maximum(z, t(0)) + np.log1p(np.exp(-abs(z)))) / t(beta)
        return np.where(z > threshold, x, smooth)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (z,) = ctx.saved_tensors
        _, threshold = ctx.params
        return np.where(z > threshold, g, g * _stable_sigmoid(z)), None, None


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``; linear where ``beta * x > threshold``."""
    return _Softplus.apply(input, float(beta), float(threshold))


class _LogSigmoid(_Pointwise):
    @staticmethod
    def compute(x: Any) -> tuple[Any, ...]:
        return np.minimum(x, x.dtype.type(0)) - np.log1p(np.exp(-abs(x))), x

    @staticmethod
    def grad(g: Any, x: Any) -> Any:
        return g * _stable_sigmoid(-x)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, computed without overflow."""
    return _LogSigmoid.apply(input)


# raw kernels that overwrite their argument, for ``inplace=True`` outside autograd
_IN_PLACE: dict[type[ArrayFunction], Any] = {_Relu: _relu_, _Hardtanh: _hardtanh_, _Threshold: _threshold_}


# ---- in-place forms (torch's ``F.relu_`` ...) -----------------------------------------------


def relu_(input: Tensor) -> Tensor:
    """``relu`` written into ``input``."""
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``elu`` written into ``input``."""
    return elu(input, alpha, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``celu`` written into ``input``."""
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """``selu`` written into ``input``."""
    return selu(input, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu`` written into ``input``."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``hardtanh`` written into ``input``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator: Any = None) -> Tensor:
    """``rrelu`` written into ``input`` (slopes drawn from ``generator`` when given)."""
    return rrelu(input, lower, upper, training, inplace=True, _generator=generator)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``threshold`` written into ``input``."""
    return _finish(input, _Threshold, True, threshold, value)


# ---- softmax ---------------------------------------------------------------------------------


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return _core_softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``x - log(sum(exp(x)))`` along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return _core_log_softmax(input, dim, dtype)

