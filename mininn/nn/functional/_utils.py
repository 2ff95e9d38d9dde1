"""Helpers shared by the functional kernels: argument tuples, grad checks, array modules."""

from __future__ import annotations

import collections.abc
from types import ModuleType
from typing import Any

import numpy as np

from mininn._backend import array_module, device_of
from mininn.autograd.grad_mode import _state
from mininn.tensor import Tensor

__all__ = ["ntuple", "single", "pair", "needs_grad", "xp_of", "as_strided", "check_float", "scalar",
           "requires", "c_name", "scalar_name", "wrap_dim", "run_inplace"]


def ntuple(n: int, name: str = "") -> Any:
    """``ntuple(2)(3) == (3, 3)``; an iterable passes through as a tuple (torch's ``_ntuple``)."""

    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return (x,) * n

    parse.__name__ = name or f"_ntuple_{n}"
    return parse


single = ntuple(1, "_single")
pair = ntuple(2, "_pair")


def needs_grad(*tensors: Tensor | None) -> bool:
    """Whether a call on ``tensors`` is recorded by autograd right now."""
    if not _state.enabled:
        return False
    return any(t is not None and t.requires_grad for t in tensors)


def requires(t: Tensor | None) -> bool:
    """Whether ``t`` needs a gradient from the op being recorded (grad mode on)."""
    return t is not None and _state.enabled and t.requires_grad


def xp_of(array: Any) -> ModuleType:
    """NumPy for a cpu array, CuPy for a cuda one."""
    if isinstance(array, np.ndarray):
        return np
    return array_module(device_of(array))


def as_strided(array: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
    """A read-only strided view of ``array`` (no copy)."""
    if isinstance(array, np.ndarray):
        return np.lib.stride_tricks.as_strided(array, shape, strides, writeable=False)
    return xp_of(array).lib.stride_tricks.as_strided(array, shape, strides)


def check_float(x: Tensor, what: str) -> None:
    """Raise torch's error for an integer tensor fed to a floating-point kernel."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f'"{what}" not implemented for \'{scalar_name(x)}\'')


def scalar(value: float, like: Any) -> Any:
    """``value`` as a scalar of ``like``'s dtype, so float32 math stays float32."""
    return like.dtype.type(value)


_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int"}
_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                 "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                 "bool": "Bool"}


def c_name(t: Tensor) -> str:
    """torch's C++ name of ``t``'s dtype (``float``, ``double``) as its messages print it."""
    return _C_NAMES.get(t.dtype.name, t.dtype.name)


def scalar_name(t: Tensor) -> str:
    """torch's ScalarType name of ``t``'s dtype (``Float``, ``Double``)."""
    return _SCALAR_NAMES.get(t.dtype.name, t.dtype.name)


def wrap_dim(dim: int, ndim: int) -> int:
    """``dim`` as a non-negative axis of an ``ndim``-dim tensor (a scalar counts as 1-dim)."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def run_inplace(input: Tensor, compute: Any) -> Tensor:  # noqa: A002 - torch's argument name
    """``inplace=True`` semantics: ``input`` ends up holding ``compute()``'s result and is returned.

    Without autograd recording the result is written into ``input``'s array
    (views see it); while recording, ``input`` takes over the result and its
    graph position, as torch's in-place ops do, and a leaf that requires grad
    is torch's error.
    """
    if not needs_grad(input):
        out = compute()
        input._data[...] = out._data
        return input
    if input.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    input._become(compute())
    return input
