"""Fused pointwise ops with three operands: ``lerp``, ``addcmul``, ``addcdiv``.

Built from the elementwise ops (gradients come from theirs), with torch's
checks on dtypes and broadcasting.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions import elementwise as E
from mininn._functions._util import broadcast_error
from mininn._tensor_core import TensorCore

_C_NAMES = {"float16": "c10::Half", "float32": "float", "float64": "double"}


def _check_lerp(input: Any, other: Any, name: str) -> None:
    if isinstance(other, TensorCore) and other._data.dtype != input._data.dtype:
        theirs = _C_NAMES.get(other.dtype.name, other.dtype.name)
        raise RuntimeError(
            f"expected dtype {_C_NAMES.get(input.dtype.name, input.dtype.name)} for `{name}` but got "
            f"dtype {theirs}"
        )


def _check_broadcast(*tensors: Any) -> None:
    shapes = [t._data.shape for t in tensors if isinstance(t, TensorCore)]
    for i in range(1, len(shapes)):
        try:
            np.broadcast_shapes(*shapes[: i + 1])
        except ValueError:
            raise broadcast_error(np.broadcast_shapes(*shapes[:i]), shapes[i]) from None


def lerp(input: Any, end: Any, weight: Any) -> Any:
    """``input + weight * (end - input)`` (``weight`` a number or a tensor)."""
    _check_lerp(input, end, "end")
    _check_lerp(input, weight, "weight")
    _check_broadcast(input, end, weight)
    return E.add(input, E.mul(E.sub(end, input), weight))


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    """``input + value * tensor1 * tensor2``."""
    _check_broadcast(input, tensor1, tensor2)
    prod = E.mul(tensor1, tensor2)
    return E.add(input, prod if value == 1 else E.mul(prod, value))


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    """``input + value * tensor1 / tensor2``."""
    _check_broadcast(input, tensor1, tensor2)
    quot = E.div(tensor1, tensor2)
    return E.add(input, quot if value == 1 else E.mul(quot, value))


def clamp_min(input: Any, min: Any) -> Any:  # noqa: A002 - torch's name
    """``clamp(input, min=min)``."""
    return E.clamp(input, min=min)


def clamp_max(input: Any, max: Any) -> Any:  # noqa: A002 - torch's name
    """``clamp(input, max=max)``."""
    return E.clamp(input, max=max)


def rsub(input: Any, other: Any, alpha: Any = 1) -> Any:
    """``other - alpha * input``."""
    return E.sub(other, input, alpha=alpha)
