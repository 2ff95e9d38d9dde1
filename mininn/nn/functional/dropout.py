"""Dropout: ``dropout`` zeroes elements with probability ``p`` in training and scales the rest by
``1/(1-p)``; ``dropout1d/2d/3d`` zero whole channels; ``alpha_dropout`` and
``feature_alpha_dropout`` keep SELU's zero mean and unit variance instead.

Each mask (or, for the alpha forms, multiplier and offset) is drawn once over the
noise shape (the input's, or ``(N, C, 1, ...)`` for channels) and broadcast.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

import math
import warnings
from typing import Any

from mininn import _factories
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import MulMask, apply_op, xp_of
from mininn.tensor import Tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

# SELU's negative saturation value, -scale * alpha: where alpha dropout sends dropped units
_ALPHA = 1.7580993408473766


def _scaled_mask(x: Any, p: float) -> Any:
    """Keep-mask times ``1/(1-p)`` in ``x``'s dtype, drawn from the global generator."""
    gen = _factories.default_generator
    with gen._lock:
        draws = gen.rng.random(x.shape, dtype="float32" if x.dtype.itemsize <= 4 else "float64")
    xp = xp_of(x)
    keep = xp.asarray(draws >= p)
    mask = keep.astype(x.dtype)
    mask *= x.dtype.type(1.0 / (1.0 - p))
    return mask


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Randomly zero elements of ``input`` with probability ``p`` while ``training``.

    Survivors are scaled by ``1/(1-p)`` so the expectation is unchanged; outside
    training (or with ``p == 0``) the input is returned as is. Reproducible
    under ``mininn.manual_seed``.
    """
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        mask = xp_of(input._data).zeros(input.shape, dtype=input._data.dtype)
    else:
        mask = _scaled_mask(input._data, p)
    return _apply(input, inplace, mask)


# ---- channel-wise and alpha dropout ----------------------------------------------------------


class _Affine(ArrayFunction):
    """``x * mult + add`` with ``mult``, ``add`` broadcast over ``x`` (the noise is not differentiated)."""

    @staticmethod
    def forward(ctx: Context, x: Any, mult: Any, add: Any) -> Any:
        ctx.save_for_backward(mult)
        return x * mult + add

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (mult,) = ctx.saved_tensors
        return g * mult, None, None


def _keep(x: Any, shape: tuple[int, ...], p: float) -> Any:
    """A 0/1 keep-mask of ``shape`` in ``x``'s dtype, each entry kept with probability ``1 - p``."""
    gen = _factories.default_generator
    with gen._lock:
        draws = gen.rng.random(shape, dtype="float32" if x.dtype.itemsize <= 4 else "float64")
    return xp_of(x).asarray(draws >= p).astype(x.dtype)


def _channel_shape(shape: tuple[int, ...], batched: bool) -> tuple[int, ...]:
    """``(N, C, 1, ...)`` (or ``(C, 1, ...)`` without a batch dim): one draw per channel."""
    lead = 2 if batched else 1
    if len(shape) + (not batched) < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(shape[:lead]) + (1,) * (len(shape) - lead)


def _apply(input: Tensor, inplace: bool, mult: Any, add: Any = None) -> Tensor:
    if add is None:
        return apply_op(MulMask, input, inplace, Tensor(mult))
    return apply_op(_Affine, input, inplace, Tensor(mult), Tensor(add))


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched: bool) -> Tensor:
    if not training or p == 0.0:
        return input
    x = input._data
    shape = _channel_shape(tuple(input.shape), batched)
    if p == 1.0:
        return _apply(input, inplace, xp_of(x).zeros(shape, dtype=x.dtype))
    mask = _keep(x, shape, p)
    mask *= x.dtype.type(1.0 / (1.0 - p))
    return _apply(input, inplace, mask)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p`` while training;
    survivors are scaled by ``1/(1-p)``.

    Raises:
        RuntimeError: the input is not 2-D or 3-D.
    """
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d "
            "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, "
            "and an optional batch dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def _deprecated_dims(name: str, ndim: int, spatial: int) -> None:
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an error in a "
        f"future release. To retain the behavior and silence this warning, please use dropout instead. Note "
        f"that {name} exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a "
        f"channel dimension, and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
        stacklevel=3,
    )


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels (dim 1) of an ``(N, C, H, W)`` input with probability ``p`` while training.

    As in torch, a 3-D input is read as ``(N, C, L)`` (with a warning) and other
    ranks are deprecated (with a warning).
    """
    _check_p(p)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
            "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
            "will change in a future release to interpret the input as one without a batch dimension, i.e. "
            "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
            "dropout1d instead.",
            stacklevel=2,
        )
    elif input.ndim != 4:
        _deprecated_dims("dropout2d", input.ndim, 2)
    return _feature_dropout(input, p, training, inplace, batched=True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``
    while training (other ranks are deprecated, with a warning)."""
    _check_p(p)
    if input.ndim not in (4, 5):
        _deprecated_dims("dropout3d", input.ndim, 3)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 5)


def _alpha(input: Tensor, p: float, training: bool, inplace: bool, shape: tuple[int, ...] | None) -> Tensor:
    """Alpha dropout over ``shape`` (None: per element): kept units become ``a * x + a * alpha * p``,
    dropped ones ``-a * alpha * (1 - p)``, with ``a = 1 / sqrt((alpha^2 p + 1)(1 - p))``."""
    if not training or p == 0.0:
        return input
    x = input._data
    xp = xp_of(x)
    if shape is None:
        shape = tuple(input.shape)
    if p == 1.0:
        return _apply(input, inplace, xp.zeros(shape, dtype=x.dtype))
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    keep = _keep(x, shape, p)
    add = (keep - x.dtype.type(1)) * x.dtype.type(_ALPHA * a) + x.dtype.type(_ALPHA * a * p)
    return _apply(input, inplace, keep * x.dtype.type(a), add)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped units take SELU's saturation value and an affine map keeps
    the mean and variance of the input. Identity outside training."""
    _check_p(p)
    return _alpha(input, p, training, inplace, None)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """``alpha_dropout`` with one draw per channel (dim 1) of an ``(N, C, ...)`` input."""
    _check_p(p)
    if training and p != 0.0:
        return _alpha(input, p, training, inplace, _channel_shape(tuple(input.shape), True))
    return input
