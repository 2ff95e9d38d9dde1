"""In-place ops (``add_``, ``mul_``, ``copy_``, ``clamp_``, ...), as torch defines them.

Under ``no_grad``, or when nothing involved requires grad, they write into the
tensor's array, so views (``param.data``, ``t[0]``) see the change, and the
result is cast to the tensor's dtype (a float result into an int tensor is
torch's error). When autograd records them, the op is computed out of place and
the tensor takes over the result and its ``grad_fn``, as torch's rebasing does;
a leaf that requires grad is torch's error. On a view (or a base whose views are
alive) the result is written through the shared memory and the history rebased
(``inplace_view``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mininn._backend import to_device
from mininn._functions import elementwise as E
from mininn._functions import unary as U
from mininn._functions._util import (
    category,
    scalar_result_dtype,
    torch_type_name,
    unbroadcast,
)
from mininn._functions.conversion import ToDevice, cast
from mininn._functions.inplace_view import check_view, on_own_copy, rebase, shares_memory
from mininn._tensor_core import TensorCore
from mininn.autograd.grad_mode import _state, no_grad
from mininn.autograd.graph import ArrayFunction, Context

LEAF_MESSAGE = "a leaf Variable that requires grad is being used in an in-place operation."


def _tracked(self: Any, *others: Any) -> bool:
    if not _state.enabled:
        return False
    if self._requires_grad or self.grad_fn is not None:
        return True
    if self._view is not None and self._view[0].requires_grad:  # a view made under no_grad
        return True
    return any(isinstance(o, TensorCore) and o.requires_grad for o in others)


def check_leaf(self: Any) -> None:
    """torch's errors for an in-place op that autograd records: on a leaf that requires grad,
    and on the views torch refuses (``inplace_view.check_view``)."""
    if _state.enabled:
        if self.grad_fn is None and self._requires_grad:
            raise RuntimeError(LEAF_MESSAGE)
        if self._view is not None:
            check_view(self)


def _check_cast(result_dtype: Any, self: Any) -> None:
    if category(result_dtype) > category(self._data.dtype):
        raise RuntimeError(
            f"result type {torch_type_name(result_dtype)} can't be cast to the desired output "
            f"type {torch_type_name(self._data.dtype)}"
        )


def write(self: Any, values: Any) -> Any:
    """Store ``values`` (broadcast) into ``self``'s array, with torch's messages on failure."""
    try:
        self._data[...] = values
    except ValueError as err:
        if "read-only" in str(err):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location. Please clone() the tensor before performing the "
                "operation."
            ) from None
        raise _shape_error(self, np.shape(values)) from None
    return self


def _shape_error(self: Any, shape: tuple[int, ...]) -> RuntimeError:
    return RuntimeError(
        f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
        f"{list(shape)}"
    )


def _apply(self: Any, op: Callable[..., Any], *args: Any) -> Any:
    """Run the out-of-place ``op(self, *args)`` and make ``self`` hold its result."""
    if _tracked(self, *args):
        check_leaf(self)
        # shares no memory with a live view: computed aside and taken over, nothing written through
        plain = (self._view is None and self._views is None) or not shares_memory(self)
        out = op(self, *args) if plain else on_own_copy(self, lambda: op(self, *args))
        _check_cast(out._data.dtype, self)
        if out._data.shape != self._data.shape:
            raise _shape_error(self, out._data.shape)
        out = cast(out, self._data.dtype)
        if plain:
            self._become(out)
        else:
            rebase(self, out)
        return self

    with no_grad():
        out = op(self, *args)
    _check_cast(out._data.dtype, self)
    return write(self, out._data)


def _binary_fast(self: Any, other: Any, ufunc: Any, op: Callable[..., Any]) -> Any:
    """``self op= other`` straight into ``self``'s array when autograd is not involved."""
    if _tracked(self, other):
        return _apply(self, op, other)
    if isinstance(other, TensorCore):
        o = other._data
        if o.dtype != self._data.dtype:
            return _apply(self, op, other)
    else:
        o = other
        if scalar_result_dtype(self._data.dtype, o) != self._data.dtype:
            return _apply(self, op, other)
    try:
        ufunc(self._data, o, out=self._data, casting="unsafe")
    except ValueError:  # broadcasting or a read-only view: the general path has the messages
        return _apply(self, op, other)
    return self


def add_(self: Any, other: Any, *, alpha: Any = 1) -> Any:
    """``self += alpha * other``."""
    if alpha != 1:
        other = other * alpha
    return _binary_fast(self, other, np.add, E.add)


def sub_(self: Any, other: Any, *, alpha: Any = 1) -> Any:
    """``self -= alpha * other``."""
    if alpha != 1:
        other = other * alpha
    return _binary_fast(self, other, np.subtract, E.sub)


def mul_(self: Any, other: Any) -> Any:
    """``self *= other``."""
    return _binary_fast(self, other, np.multiply, E.mul)


def div_(self: Any, other: Any, *, rounding_mode: str | None = None) -> Any:
    """``self /= other`` (an integer tensor cannot hold the float result)."""
    if rounding_mode is not None or category(self._data.dtype) < 2:
        return _apply(self, lambda s, o: E.div(s, o, rounding_mode=rounding_mode), other)
    return _binary_fast(self, other, np.divide, E.div)


def pow_(self: Any, exponent: Any) -> Any:
    """``self **= exponent``."""
    return _apply(self, E.pow, exponent)


def addcmul_(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    """``self += value * tensor1 * tensor2``."""
    return _apply(self, lambda s, a, b: s + E.mul(E.mul(a, b), value), tensor1, tensor2)


def addcdiv_(self: Any, tensor1: Any, tensor2: Any, *, value: Any = 1) -> Any:
    """``self += value * tensor1 / tensor2``."""
    return _apply(self, lambda s, a, b: s + E.mul(E.div(a, b), value), tensor1, tensor2)


def lerp_(self: Any, end: Any, weight: Any) -> Any:
    """``self += weight * (end - self)``."""
    return _apply(self, lambda s, e, w: s + E.mul(E.sub(e, s), w), end, weight)


def clamp_(input: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """Clamp in place."""
    return _apply(input, lambda s, lo, hi: E.clamp(s, lo, hi), min, max)


clip_ = clamp_


def masked_fill_(self: Any, mask: Any, value: Any) -> Any:
    """Write ``value`` where ``mask`` is True."""
    return _apply(self, E.masked_fill, mask, value)


def _unary_inplace(fn: Callable[[Any], Any], name: str) -> Callable[[Any], Any]:
    def op(input: Any) -> Any:  # noqa: A002 - torch's name (torch.exp_(input=t))
        return _apply(input, fn)

    op.__name__ = name
    op.__doc__ = f"``{name[:-1]}`` in place."
    return op


sqrt_ = _unary_inplace(U.sqrt, "sqrt_")
exp_ = _unary_inplace(U.exp, "exp_")
log_ = _unary_inplace(U.log, "log_")
abs_ = _unary_inplace(U.abs, "abs_")
neg_ = _unary_inplace(E.neg, "neg_")
relu_ = _unary_inplace(U.relu, "relu_")
sigmoid_ = _unary_inplace(U.sigmoid, "sigmoid_")
tanh_ = _unary_inplace(U.tanh, "tanh_")
reciprocal_ = _unary_inplace(U.reciprocal, "reciprocal_")


class Fill(ArrayFunction):
    """Every element set to ``value``: no gradient reaches the overwritten tensor."""

    @staticmethod
    def forward(ctx: Context, a: Any, value: Any) -> Any:
        ctx.value_is_array = hasattr(value, "shape")
        return np.full_like(a, value)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return np.zeros_like(g), (g.sum() if ctx.value_is_array else None)


def zero_(input: Any) -> Any:  # noqa: A002 - torch's name
    """Fill with zeros."""
    return fill_(input, 0)


def fill_(input: Any, value: Any) -> Any:  # noqa: A002 - torch's name
    """Fill with ``value`` (a number or a 0-d tensor)."""
    if isinstance(value, TensorCore) and value._data.ndim != 0:
        raise RuntimeError(
            "fill_ only supports 0-dimension value tensor but got tensor with "
            f"{value._data.ndim} dimensions."
        )
    if _tracked(input, value):
        check_leaf(input)
        if isinstance(value, TensorCore):
            value = cast(value, input._data.dtype)
        rebase(input, Fill.apply(input, value))
        return input
    return write(input, value._data if isinstance(value, TensorCore) else value)


def copy_(self: Any, other: Any, non_blocking: bool = False) -> Any:
    """Copy ``other`` into ``self`` (broadcast, cast to ``self``'s dtype and device)."""
    if not isinstance(other, TensorCore):
        raise TypeError(
            f"copy_(): argument 'src' (position 1) must be Tensor, not {type(other).__name__}"
        )
    if _tracked(self, other):
        check_leaf(self)

        if other.device != self.device:
            other = ToDevice.apply(other, self.device)
        rebase(self, Copy.apply(self, other))
        return self
    return write(self, to_device(other._data, self.device))


class Copy(ArrayFunction):
    """``src`` broadcast and cast into ``a``'s shape and dtype; ``a`` gets no gradient."""

    @staticmethod
    def forward(ctx: Context, a: Any, src: Any) -> Any:
        out = np.empty_like(a)
        out[...] = src
        ctx.src_meta = (src.shape, src.dtype)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, dtype = ctx.src_meta
        return np.zeros_like(g), unbroadcast(g, shape).astype(dtype, copy=False)
