"""Base ``ArrayFunction`` classes for op families whose forward and backward differ only in their maths.

Each base saves what its backward needs and hands it to two static methods, ``fn`` (the
forward maths) and ``grad`` (the backward maths); a factory builds the op from those two,
so that an op is one line: ``Exp = _one_input("Exp", np.exp, lambda g, out: g * out)``.
The op's name is its class name, and so its graph node's: ``ExpBackward0``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from mininn._functions._util import unbroadcast
from mininn.autograd.graph import ArrayFunction, Context


def _quiet(on: bool) -> contextlib.AbstractContextManager[Any]:
    """NumPy's divide-by-zero and invalid-value warnings off where ``on``: torch gives inf and nan
    silently."""
    return np.errstate(divide="ignore", invalid="ignore") if on else contextlib.nullcontext()


def _op(name: str, base: type[ArrayFunction], **attrs: Any) -> type[ArrayFunction]:
    return type(name, (base,), {"__module__": __name__, **attrs})


class _OneInput(ArrayFunction):
    """A one-input op (``exp``, ``inv``, ...): ``fn`` computes it and ``grad(g, saved)`` its gradient,
    where ``saved`` is the output (``saves_output``) or the input. ``quiet``: see :func:`_quiet`."""

    saves_output = True
    quiet = False

    @staticmethod
    def fn(a: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def grad(g: Any, saved: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx: Context, a: Any) -> Any:
        with _quiet(cls.quiet):
            out = cls.fn(a)
        ctx.save_for_backward(out if cls.saves_output else a)
        return out

    @classmethod
    def backward(cls, ctx: Context, g: Any) -> Any:
        (saved,) = ctx.saved_tensors
        with _quiet(cls.quiet):
            return cls.grad(g, saved)


def _one_input(name: str, fn: Callable[[Any], Any], grad: Callable[[Any, Any], Any], *,
                 saves_output: bool = True, quiet: bool = False) -> type[ArrayFunction]:
    """The op ``name`` (its graph node is ``<name>Backward0``): ``fn`` and ``grad(g, out or input)``."""
    return _op(name, _OneInput, fn=staticmethod(fn), grad=staticmethod(grad), saves_output=saves_output,
               quiet=quiet)


class _Binary(ArrayFunction):
    """A two-input elementwise op that broadcasts: ``fn(a, b)`` computes it and ``grads(g, a, b, out)``
    the gradients of both inputs at the broadcast shape, which ``backward`` sums down to each
    input's own shape. ``quiet``: see :func:`_quiet`."""

    quiet = False

    @staticmethod
    def fn(a: Any, b: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def grads(g: Any, a: Any, b: Any, out: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx: Context, a: Any, b: Any) -> Any:
        with _quiet(cls.quiet):
            out = cls.fn(a, b)
        ctx.save_for_backward(a, b, out)
        return out

    @classmethod
    def backward(cls, ctx: Context, g: Any) -> Any:
        a, b, out = ctx.saved_tensors
        with _quiet(cls.quiet):
            ga, gb = cls.grads(g, a, b, out)
        return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)


def _binary(name: str, fn: Callable[[Any, Any], Any], grads: Callable[[Any, Any, Any, Any], tuple[Any, Any]],
            *, quiet: bool = False) -> type[ArrayFunction]:
    """The broadcasting op ``name``: ``fn(a, b)`` and ``grads(g, a, b, out) -> (grad_a, grad_b)``."""
    return _op(name, _Binary, fn=staticmethod(fn), grads=staticmethod(grads), quiet=quiet)


class _AlongAxis(ArrayFunction):
    """An op along one axis (softmax, a running product, ...): ``fn(a, axis)`` computes it and
    ``grad(g, a, out, axis)`` its gradient; where ``saves_input`` is False only the output is
    kept, and ``grad(g, out, axis)`` is called."""

    saves_input = True

    @staticmethod
    def fn(a: Any, axis: int) -> Any:
        raise NotImplementedError

    @staticmethod
    def grad(g: Any, *saved_and_axis: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx: Context, a: Any, axis: int) -> Any:
        out = cls.fn(a, axis)
        ctx.save_for_backward(*((a, out) if cls.saves_input else (out,)))
        ctx.axis = axis
        return out

    @classmethod
    def backward(cls, ctx: Context, g: Any) -> Any:
        return cls.grad(g, *ctx.saved_tensors, ctx.axis), None


def _along_axis(name: str, fn: Callable[[Any, int], Any], grad: Callable[..., Any], *,
                saves_input: bool = True) -> type[ArrayFunction]:
    """The op ``name`` along one axis: ``fn(a, axis)`` and ``grad(g, [a,] out, axis)``."""
    return _op(name, _AlongAxis, fn=staticmethod(fn), grad=staticmethod(grad), saves_input=saves_input)
