"""Reductions over dimensions: sum, mean, prod, max/min, var/std, logsumexp, all/any.

``dim`` is None (all dims), an int or a sequence of ints; ``keepdim`` keeps
the reduced dims as size 1. ``max(dim=)``/``min(dim=)`` return a
``(values, indices)`` named tuple, as torch does.
"""

# ruff: noqa: A001, A002 - torch's names (input, min, max, sum) shadow builtins

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from mininn import _dtype
from mininn._functions import elementwise
from mininn._functions._bases import _one_input
from mininn._functions._util import _FLOAT, category, torch_type_name
from mininn._functions.conversion import cast
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import ArrayFunction, Context, wrap

_INT64 = np.dtype(np.int64)


class _ValuesIndices(NamedTuple):
    values: Any
    indices: Any

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"mininn.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"


def _values_indices(name: str) -> type[_ValuesIndices]:
    """The named tuple ``return_types.<name>``: ``(values, indices)``."""
    return type(name, (_ValuesIndices,), {"__module__": __name__, "__qualname__": f"return_types.{name}"})


class return_types:  # noqa: N801 - torch's name (torch.return_types.max, ...)
    """The named tuples that ``max``, ``min``, ``sort`` and ``topk`` return."""

    max = _values_indices("max")
    min = _values_indices("min")
    sort = _values_indices("sort")
    topk = _values_indices("topk")
    cummax = _values_indices("cummax")
    cummin = _values_indices("cummin")
    median = _values_indices("median")
    kthvalue = _values_indices("kthvalue")
    mode = _values_indices("mode")

    class aminmax(NamedTuple):  # noqa: N801
        min: Any
        max: Any

        def __repr__(self) -> str:
            return f"mininn.return_types.aminmax(\nmin={self.min!r},\nmax={self.max!r})"


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...] | None:
    """``dim`` as a tuple of non-negative axes (None means all)."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    out = []
    n = ndim if ndim > 1 else 1
    for d in dims:
        if not -n <= d <= n - 1:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
            )
        d = int(d) % n
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    if ndim == 0:
        return None
    return tuple(out)


def expand_reduced(g: Any, shape: tuple[int, ...], axes: tuple[int, ...] | None, keepdim: bool) -> Any:
    """Broadcastable view of a reduced gradient against the input ``shape``."""
    if axes is None:
        return np.broadcast_to(g.reshape((1,) * len(shape)), shape)
    if not keepdim:
        g = np.expand_dims(g, axes)
    return np.broadcast_to(g, shape)


def _count(shape: tuple[int, ...], axes: tuple[int, ...] | None) -> int:
    if axes is None:
        return int(np.prod(shape, dtype=np.int64))
    return int(np.prod([shape[i] for i in axes], dtype=np.int64))


class Sum(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axes: tuple[int, ...] | None, keepdim: bool) -> Any:
        ctx.meta = (a.shape, axes, keepdim)
        return np.asarray(a.sum(axis=axes, keepdims=keepdim))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, axes, keepdim = ctx.meta
        return expand_reduced(g, shape, axes, keepdim), None, None


class Mean(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axes: tuple[int, ...] | None, keepdim: bool) -> Any:
        ctx.meta = (a.shape, axes, keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(a.mean(axis=axes, keepdims=keepdim), dtype=a.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, axes, keepdim = ctx.meta
        n = _count(shape, axes)
        return expand_reduced(g / n, shape, axes, keepdim), None, None


class Prod(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axis: int | None, keepdim: bool) -> Any:
        ctx.save_for_backward(a)
        ctx.meta = (axis, keepdim)
        return np.asarray(np.prod(a, axis=axis, keepdims=keepdim))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        axis, keepdim = ctx.meta
        flat = a.reshape(-1) if axis is None else a
        ax = 0 if axis is None else axis
        # product of all other elements: exclusive cumprods from both sides (zeros safe)
        ones = np.ones_like(np.take(flat, [0], axis=ax))
        left = np.cumprod(np.concatenate([ones, flat], axis=ax), axis=ax)
        left = np.take(left, np.arange(flat.shape[ax]), axis=ax)
        rev = np.flip(flat, axis=ax)
        right = np.cumprod(np.concatenate([ones, rev], axis=ax), axis=ax)
        right = np.flip(np.take(right, np.arange(flat.shape[ax]), axis=ax), axis=ax)
        others = (left * right).reshape(a.shape)
        axes = None if axis is None else (axis,)
        return expand_reduced(g, a.shape, axes, keepdim) * others, None, None


class Extreme(ArrayFunction):
    """amax/amin (and max()/min() over all dims): ties share the gradient evenly."""

    @staticmethod
    def forward(ctx: Context, a: Any, axes: tuple[int, ...] | None, keepdim: bool, is_max: bool) -> Any:
        out = np.asarray(a.max(axis=axes, keepdims=keepdim) if is_max else
                         a.min(axis=axes, keepdims=keepdim))
        ctx.save_for_backward(a, out)
        ctx.meta = (axes, keepdim)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, out = ctx.saved_tensors
        axes, keepdim = ctx.meta
        mask = a == expand_reduced(out, a.shape, axes, keepdim)
        count = mask.sum(axis=axes, keepdims=True)
        share = (mask / count).astype(g.dtype, copy=False)
        return expand_reduced(g, a.shape, axes, keepdim) * share, None, None, None


class ExtremeDim(ArrayFunction):
    """max(dim)/min(dim): values and the index of the first extreme; the index takes the gradient."""

    @staticmethod
    def forward(ctx: Context, a: Any, axis: int, keepdim: bool, is_max: bool) -> Any:
        idx = np.argmax(a, axis=axis) if is_max else np.argmin(a, axis=axis)
        idx = np.expand_dims(idx, axis)
        values = np.take_along_axis(a, idx, axis=axis)
        ctx.meta = (a.shape, axis, keepdim, idx)
        if not keepdim:
            values, idx = values.squeeze(axis), idx.squeeze(axis)
        return values, idx.astype(np.int64, copy=False)

    @staticmethod
    def backward(ctx: Context, g: Any, _g_idx: Any) -> Any:
        shape, axis, keepdim, idx = ctx.meta
        if not keepdim:
            g = np.expand_dims(g, axis)
        out = np.zeros(shape, dtype=g.dtype)
        np.put_along_axis(out, idx, g, axis=axis)
        return out, None, None, None


class Var(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axes: tuple[int, ...] | None, correction: float, keepdim: bool) -> Any:
        ctx.save_for_backward(a)
        ctx.meta = (axes, correction, keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.var(a, axis=axes, ddof=correction, keepdims=keepdim)
        return np.asarray(out, dtype=a.dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        axes, correction, keepdim = ctx.meta
        n = _count(a.shape, axes) - correction
        centered = a - a.mean(axis=axes, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            scale = np.asarray(2 / n if n > 0 else np.inf, dtype=g.dtype)
        return expand_reduced(g, a.shape, axes, keepdim) * (scale * centered), None, None, None


class LogSumExp(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axes: tuple[int, ...] | None, keepdim: bool) -> Any:
        m = a.max(axis=axes, keepdims=True) if a.size else np.zeros((1,) * a.ndim, a.dtype)
        m = np.where(np.isfinite(m), m, 0)
        with np.errstate(divide="ignore"):
            out = np.log(np.exp(a - m).sum(axis=axes, keepdims=True)) + m
        ctx.save_for_backward(a, out)  # kept dims: broadcasts against a in backward
        ctx.meta = (axes, keepdim)
        if keepdim:
            return out
        return out.reshape(()) if axes is None else np.squeeze(out, axis=axes)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, out = ctx.saved_tensors
        axes, keepdim = ctx.meta
        return expand_reduced(g, a.shape, axes, keepdim) * np.exp(a - out), None, None


# ---- public functions (also bound as Tensor methods) -------------------------------------


def sum(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:  # noqa: A001
    """Sum over ``dim`` (all dims by default); integers and bools sum as int64."""
    if dtype is not None:
        x = cast(input, _dtype.as_dtype(dtype).np)
    elif input._data.dtype.kind in "biu":
        x = cast(input, _INT64)
    else:
        x = input
    return Sum.apply(x, None if dim is None else normalize_dims(dim, x._data.ndim), keepdim)


def mean(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """Mean over ``dim`` (all dims by default); needs a floating-point input."""
    x = _with_dtype(input, dtype)
    if category(x._data.dtype) < _FLOAT:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {torch_type_name(x._data.dtype)}"
        )
    return Mean.apply(x, normalize_dims(dim, x._data.ndim), keepdim)


def prod(input: Any, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """Product over one ``dim`` (all elements by default); integers give int64."""
    x = _with_dtype(input, dtype)
    if dtype is None and category(x._data.dtype) < _FLOAT:
        x = cast(x, np.dtype(np.int64))
    axis = None if dim is None else normalize_dims(dim, x._data.ndim)
    axis = None if axis is None else axis[0]
    return Prod.apply(x, axis, keepdim and axis is not None)


def _with_dtype(x: Any, dtype: Any) -> Any:
    return x if dtype is None else cast(x, _dtype.as_dtype(dtype).np)


def max(input: Any, dim: Any = None, keepdim: bool = False, *, other: Any = None) -> Any:  # noqa: A001
    """The largest element, ``(values, indices)`` along ``dim``, or ``maximum(input, other)``."""
    return _extreme(input, _dim_or_other("max", dim, keepdim, other), keepdim, True)


def min(input: Any, dim: Any = None, keepdim: bool = False, *, other: Any = None) -> Any:  # noqa: A001
    """The smallest element, ``(values, indices)`` along ``dim``, or ``minimum(input, other)``."""
    return _extreme(input, _dim_or_other("min", dim, keepdim, other), keepdim, False)


def _dim_or_other(name: str, dim: Any, keepdim: bool, other: Any) -> Any:
    """``dim``, or the tensor ``other`` of torch's ``max(input, other)`` overload (never both)."""
    if other is None:
        return dim
    if dim is not None or keepdim:
        raise TypeError(f"{name}() takes either dim (and keepdim) or other, not both")
    if not isinstance(other, TensorCore):
        raise TypeError(f"{name}(): argument 'other' must be Tensor, not {type(other).__name__}")
    return other


def _extreme(input: Any, dim: Any, keepdim: bool, is_max: bool) -> Any:
    name = "max" if is_max else "min"
    if isinstance(dim, TensorCore):
        return elementwise.maximum(input, dim) if is_max else elementwise.minimum(input, dim)
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        return Extreme.apply(input, None, False, is_max)
    (axis,) = normalize_dims(dim, input._data.ndim) or (None,)
    if axis is None:  # a 0-d tensor
        return getattr(return_types, name)(input.clone(), wrap(np.zeros((), np.int64)))
    _check_reducible(input, axis, name)
    values, indices = ExtremeDim.apply(input, axis, keepdim, is_max)
    return getattr(return_types, name)(values, indices)


def _check_reducible(input: Any, axis: int, name: str) -> None:
    if input._data.shape[axis] == 0:
        raise IndexError(
            f"{name}(): Expected reduction dim {axis} to have non-zero size."
        )


def amax(input: Any, dim: Any = (), keepdim: bool = False) -> Any:
    """The largest values over ``dim`` (all dims for ``()``); ties share the gradient."""
    return _amax_amin(input, dim, keepdim, True)


def amin(input: Any, dim: Any = (), keepdim: bool = False) -> Any:
    """The smallest values over ``dim`` (all dims for ``()``); ties share the gradient."""
    return _amax_amin(input, dim, keepdim, False)


def _amax_amin(input: Any, dim: Any, keepdim: bool, is_max: bool) -> Any:
    axes = normalize_dims(dim, input._data.ndim)
    if axes == ():
        axes = None
    return Extreme.apply(input, axes, keepdim, is_max)


def argmax(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """Index of the first largest element (in the flattened tensor when ``dim`` is None)."""
    return _arg(input, dim, keepdim, np.argmax)


def argmin(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """Index of the first smallest element (in the flattened tensor when ``dim`` is None)."""
    return _arg(input, dim, keepdim, np.argmin)


def _arg(input: Any, dim: int | None, keepdim: bool, fn: Any) -> Any:
    a = input._data
    if dim is None:
        out = np.asarray(fn(a.reshape(-1)), dtype=np.int64)
        return wrap(out.reshape((1,) * a.ndim) if keepdim else out)
    axes = normalize_dims(dim, a.ndim)
    if axes is None:
        return wrap(np.zeros((), np.int64))
    return wrap(np.asarray(fn(a, axis=axes[0], keepdims=keepdim), dtype=np.int64))


def var(input: Any, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
        correction: Any = None) -> Any:
    """Variance over ``dim`` with Bessel's correction by default (``correction=1``)."""
    if isinstance(dim, bool):  # var(unbiased)
        dim, unbiased = None, dim
    if category(input._data.dtype) < _FLOAT:
        raise RuntimeError(
            "std and var only support floating point and complex dtypes"
        )
    if correction is None:
        correction = 0 if unbiased is False else 1
    axes = normalize_dims(dim, input._data.ndim)
    return Var.apply(input, axes, correction, keepdim)


def std(input: Any, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
        correction: Any = None) -> Any:
    """Standard deviation: ``sqrt(var(...))`` with the same arguments (a zero gradient where it is 0)."""
    return StdFromVar.apply(var(input, dim, unbiased, keepdim, correction=correction))


# ``sqrt`` of a variance; where the variance is 0 the gradient is 0, as torch's std gives
StdFromVar = _one_input(
    "StdFromVar", np.sqrt, lambda g, out: np.where(out == 0, 0, g / (2 * out)).astype(g.dtype, copy=False),
    quiet=True,
)


_REQUIRED: Any = object()


def logsumexp(input: Any, dim: Any = _REQUIRED, keepdim: bool = False) -> Any:
    """``log(sum(exp(x)))`` over ``dim``, computed without overflow."""
    if dim is _REQUIRED:
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    x = input
    if category(x._data.dtype) < _FLOAT:
        x = cast(x, _dtype.get_default_dtype().np)
    axes = normalize_dims(dim, x._data.ndim)
    if axes == ():
        axes = None
    return LogSumExp.apply(x, axes, keepdim)


def all(input: Any, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Whether every element (along ``dim``) is non-zero, as a bool tensor."""
    axes = normalize_dims(dim, input._data.ndim)
    return wrap(np.asarray(np.all(input._data, axis=axes, keepdims=keepdim)))


def any(input: Any, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Whether any element (along ``dim``) is non-zero, as a bool tensor."""
    axes = normalize_dims(dim, input._data.ndim)
    return wrap(np.asarray(np.any(input._data, axis=axes, keepdims=keepdim)))


def count_nonzero(input: Any, *dims: Any, dim: Any = None) -> Any:
    """How many elements (along ``dim``) are non-zero, as int64 (``x.count_nonzero(0, 1)`` too)."""
    if dims:
        if dim is not None:
            raise TypeError("count_nonzero() got multiple values for argument 'dim'")
        dim = dims[0] if len(dims) == 1 else dims
    axes = normalize_dims(dim, input._data.ndim)
    return wrap(np.asarray(np.count_nonzero(input._data, axis=axes), dtype=np.int64))
