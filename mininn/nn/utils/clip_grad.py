"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_`` and their two halves,
``get_total_norm`` and ``clip_grads_with_norm_``, with torch's numerics.

The gradients are scaled or clamped in place (the same ``.grad`` tensors). The
``foreach`` argument is accepted for torch compatibility; NumPy has no fused
multi-tensor kernels, so every setting runs the same loop.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from mininn import _dtype
from mininn.autograd.grad_mode import no_grad
from mininn.tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]

_TensorOrTensors = Tensor | Iterable[Tensor]


def _as_list(tensors: _TensorOrTensors) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters: _TensorOrTensors) -> list[Tensor]:
    return [p.grad for p in _as_list(parameters) if p.grad is not None]


def _vector_norm(x: Any, ord: float) -> Any:  # noqa: A002 - numpy's name
    """torch's ``linalg.vector_norm`` of a flattened array, in its dtype."""
    a = np.abs(np.asarray(x).ravel())
    if ord == np.inf:
        return a.max(initial=0)
    if ord == -np.inf:
        return a.min()
    if ord == 0:
        return a.dtype.type(np.count_nonzero(a))
    return np.sum(a**ord) ** (1.0 / ord)


def get_total_norm(
    tensors: _TensorOrTensors,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The norm of the norms of ``tensors``: their norm as if concatenated into one vector.

    Args:
        tensors: A tensor or an iterable of tensors (typically gradients).
        norm_type: The p of the p-norm; ``inf`` (or ``"inf"``) for the max norm.
        error_if_nonfinite: Raise when the total is ``nan`` or ``inf``.
        foreach: Accepted for torch compatibility; it changes nothing.

    Returns:
        A 0-d tensor (``0.`` of the default dtype for no tensors).

    Raises:
        RuntimeError: the total norm is non-finite and ``error_if_nonfinite`` is set.
    """
    arrays = [t._data for t in _as_list(tensors)]
    if not arrays:
        return Tensor(np.zeros((), dtype=_dtype.get_default_dtype().np))
    norm_type = float(norm_type)
    norms = [_vector_norm(a, norm_type) for a in arrays]
    result_dtype = np.result_type(*[a.dtype for a in arrays])
    total = _vector_norm(np.array(norms, dtype=result_dtype), norm_type)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
            "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
            "anyway, set `error_if_nonfinite=False`"
        )
    return Tensor(np.asarray(total, dtype=result_dtype))


def clip_grads_with_norm_(
    parameters: _TensorOrTensors, max_norm: float, total_norm: Tensor, foreach: bool | None = None
) -> None:
    """Scale every gradient by ``min(1, max_norm / (total_norm + 1e-6))``, in place."""
    grads = _grads(parameters)
    if not grads:
        return
    total = total_norm._data
    coef = np.minimum(total.dtype.type(max_norm) / (total + total.dtype.type(1e-6)), 1.0)
    with no_grad(), np.errstate(invalid="ignore"):  # inf * 0 is nan, silently, as in torch
        for g in grads:
            g.mul_(Tensor(coef.astype(g._data.dtype)))


def clip_grad_norm_(
    parameters: _TensorOrTensors,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Rescale the gradients of ``parameters`` so that their total norm is at most ``max_norm``.

    Args:
        parameters: A tensor or an iterable of tensors whose ``.grad`` is clipped.
        max_norm: The largest allowed total norm.
        norm_type: The p of the p-norm; ``inf`` for the max norm. Default: 2.0.
        error_if_nonfinite: Raise when the total norm is ``nan`` or ``inf``. Default: False.
        foreach: Accepted for torch compatibility; it changes nothing.

    Returns:
        The total norm of the gradients before clipping (a 0-d tensor).
    """
    parameters = _as_list(parameters)  # a generator is read twice below
    total_norm = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(
    parameters: _TensorOrTensors,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (warns as torch does)."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: _TensorOrTensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient of ``parameters`` into ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(min=-clip_value, max=clip_value)
