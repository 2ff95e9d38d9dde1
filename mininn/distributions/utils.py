"""Helpers shared by the distributions: parameter broadcasting and the
probability <-> log-odds conversions (with torch's clamping at the ends)."""

from __future__ import annotations

from functools import cached_property
from numbers import Number
from typing import Any

import numpy as np

import mininn
from mininn.tensor import Tensor

__all__ = [
    "as_value", "broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits", "tiny",
]

# torch's name for a property computed once per instance (validation skips one not yet computed)
lazy_property = cached_property


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Numbers and tensors as tensors of one broadcast shape (numbers take the tensors' dtype)."""
    ref = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = ref.dtype if ref is not None else mininn.get_default_dtype()
    tensors = []
    for v in values:
        if isinstance(v, Tensor):
            tensors.append(v)
        elif isinstance(v, Number):
            tensors.append(mininn.tensor(v, dtype=dtype))
        else:
            raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or "
                             "objects implementing __torch_function__.")
    return mininn.broadcast_tensors(*tensors)


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` kept a machine epsilon away from 0 and 1."""
    eps = float(np.finfo(probs._data.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds of ``probs`` (binary), or their logs (categorical), after ``clamp_probs``."""
    ps = clamp_probs(probs)
    if is_binary:
        return mininn.log(ps) - mininn.log1p(-ps)
    return mininn.log(ps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from log-odds (sigmoid, binary) or from unnormalised logs (softmax)."""
    if is_binary:
        return mininn.sigmoid(logits)
    return mininn.softmax(logits, -1)


def as_value(value: Any, like: Tensor) -> Tensor:
    """``value`` as a tensor of ``like``'s dtype when it is a number (torch.as_tensor in log_prob)."""
    if isinstance(value, Tensor):
        return value
    return mininn.tensor(value, dtype=like.dtype)


def tiny(t: Tensor) -> float:
    """The smallest positive normal number of ``t``'s dtype."""
    return float(np.finfo(t._data.dtype).tiny)
