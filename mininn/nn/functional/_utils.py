"""Helpers shared by the functional kernels: argument tuples, grad checks, array modules."""

from __future__ import annotations

import collections.abc
from types import ModuleType
from typing import Any

import numpy as np

from mininn._backend import array_module, device_of
from mininn._functions._util import wrap_dim  # re-exported: one definition for tensors and kernels
from mininn._functions.inplace import _tracked, check_leaf
from mininn._functions.inplace_view import on_own_copy, rebase
from mininn.autograd import views as _views
from mininn.autograd.grad_mode import _state
from mininn.autograd.graph import ArrayFunction, Context
from mininn.tensor import Tensor

__all__ = [
    "MulMask", "apply_op", "as_strided", "c_name", "check_float", "kernel_dtype_error", "needs_grad",
    "ntuple", "pair", "per_dim", "requires", "run_inplace", "scalar", "scalar_name", "single", "wrap_dim",
    "xp_of",
]


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


def per_dim(value: Any, nd: int) -> tuple[int, ...]:
    """An int or a sequence of ints as ``nd`` ints, one value repeated; a sequence of another
    length comes back as it is, for the caller's own message."""
    if isinstance(value, int):
        return (value,) * nd
    values = tuple(int(v) for v in value)
    return values * nd if len(values) == 1 else values


def _recorded(t: Tensor) -> bool:
    """Whether ``t`` enters the graph (grad mode on): it requires grad, or it is a view whose base
    got a history after it was made, which it takes now, as ``ArrayFunction.apply`` would."""
    return t.requires_grad or (t._view is not None and _views.adopt(t))


def needs_grad(*tensors: Tensor | None) -> bool:
    """Whether a call on ``tensors`` is recorded by autograd right now."""
    if not _state.enabled:
        return False
    return any(t is not None and _recorded(t) for t in tensors)


def requires(t: Tensor | None) -> bool:
    """Whether ``t`` needs a gradient from the op being recorded (grad mode on)."""
    return t is not None and _state.enabled and _recorded(t)


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


def kernel_dtype_error(kernel: str, x: Tensor) -> NotImplementedError:
    """torch's error for a tensor whose dtype the kernel named ``kernel`` does not handle."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_name(x)}'")


def check_float(x: Tensor, kernel: str) -> None:
    """Raise torch's error for an integer tensor fed to a floating-point-only kernel."""
    if not x.dtype.is_floating_point:
        raise kernel_dtype_error(kernel, x)


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


def run_inplace(input: Tensor, compute: Any) -> Tensor:  # noqa: A002 - torch's argument name
    """``inplace=True`` semantics: ``input`` ends up holding ``compute()``'s result and is returned.

    Without autograd recording the result is written into ``input``'s array
    (views see it); while recording, ``input`` takes over the result and its
    graph position, as torch's in-place ops do (written through to the base and
    its other views when ``input`` is a view), and a leaf that requires grad,
    or a view of one, is torch's error.
    """
    if not _tracked(input):
        out = compute()
        input._data[...] = out._data
        return input
    check_leaf(input)
    rebase(input, on_own_copy(input, compute))
    return input


def apply_op(fn: type[ArrayFunction], input: Tensor, inplace: bool, *args: Any) -> Tensor:  # noqa: A002
    """``fn.apply(input, *args)``; with ``inplace``, ``input`` takes the result (see ``run_inplace``)."""
    if inplace:
        return run_inplace(input, lambda: fn.apply(input, *args))
    return fn.apply(input, *args)


class MulMask(ArrayFunction):
    """``x * mask`` for a drawn ``mask`` (dropout's keep-mask, rrelu's slopes); only ``x`` gets a gradient."""

    @staticmethod
    def forward(ctx: Context, x: Any, mask: Any) -> Any:
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (mask,) = ctx.saved_tensors
        return g * mask, None
