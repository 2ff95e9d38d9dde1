"""Binary elementwise ops with broadcasting and torch's type promotion.

Each public function here is both ``mininn.<name>(input, other)`` and the
``Tensor.<name>`` method. Operands are coerced first (``coerce``): Python
scalars only lift the category (int tensor + 2.5 -> default float), tensors
promote by torch's rules, then NumPy computes on same-dtype arrays.
"""

# ruff: noqa: A001, A002 - torch's names (input, min, max, sum) shadow builtins

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._functions._util import (
    _FLOAT,
    broadcast_error,
    category,
    cpp_type_name,
    promote_arrays,
    scalar_result_dtype,
    torch_type_name,
    unbroadcast,
)
from mininn._functions.conversion import cast
from mininn._functions.indexing import nonzero
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import ArrayFunction, Context, _check_same_device, wrap

_SCALARS = (bool, int, float, complex)


def _scalar(value: Any) -> Any:
    tp = type(value)
    if tp is float or tp is int or tp is bool:
        return value
    if isinstance(value, (np.generic, *_SCALARS)):
        return value.item() if isinstance(value, np.generic) else value
    return None


def coerce(input: Any, other: Any) -> tuple[Any, Any]:
    """Both operands ready for NumPy: tensors of one dtype, or a tensor and a Python scalar."""
    if isinstance(input, TensorCore) and isinstance(other, TensorCore):
        a, b = input._data, other._data
        if a.dtype == b.dtype:
            return input, other
        dt = promote_arrays(a, b, a.ndim > 0, b.ndim > 0)
        return cast(input, dt), cast(other, dt)
    if isinstance(input, TensorCore):
        return _with_scalar(input, other, False)
    if isinstance(other, TensorCore):
        s, t = _with_scalar(other, input, True)
        return s, t
    raise TypeError(
        f"expected a Tensor operand, got '{type(input).__name__}' and '{type(other).__name__}'"
    )


def _with_scalar(t: Any, value: Any, reflected: bool) -> tuple[Any, Any]:
    s = _scalar(value)
    if s is None:
        if isinstance(value, (np.ndarray, list, tuple)):
            other = wrap(np.asarray(value))
            return coerce(other, t) if reflected else coerce(t, other)
        raise TypeError(
            f"unsupported operand type(s): 'Tensor' and '{type(value).__name__}'"
        )
    dt = scalar_result_dtype(t._data.dtype, s)
    if dt != t._data.dtype:
        t = cast(t, dt)
    return (s, t) if reflected else (t, s)


def _torch_error(err: ValueError, a: Any, b: Any) -> ValueError | RuntimeError:
    """torch's message for operands whose shapes do not broadcast; any other ValueError as it was."""
    if "broadcast" not in str(err):
        return err
    return broadcast_error(np.shape(_raw(a)), np.shape(_raw(b)))


def apply_binary(fn: type[ArrayFunction], a: Any, b: Any) -> Any:
    """``fn.apply(a, b)`` with torch's message when the shapes do not broadcast."""
    try:
        return fn.apply(a, b)
    except ValueError as err:
        raise _torch_error(err, a, b) from None


def _binary(fn: type[ArrayFunction], input: Any, other: Any) -> Any:
    """Coerce the operands, then ``apply_binary``, inlined (the hot path of ``+ - * /``)."""
    if (
        isinstance(input, TensorCore)
        and isinstance(other, TensorCore)
        and input._data.dtype == other._data.dtype
    ):
        a, b = input, other
    else:
        a, b = coerce(input, other)
    try:
        return fn.apply(a, b)
    except ValueError as err:
        raise _torch_error(err, a, b) from None


def _shape(x: Any) -> tuple[int, ...] | None:
    """The shape of an array operand; None for a Python scalar (no gradient)."""
    return getattr(x, "shape", None)


def _reduce(g: Any, shape: tuple[int, ...] | None) -> Any:
    return None if shape is None else unbroadcast(g, shape)


class Add(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.shapes = (getattr(a, "shape", None), getattr(b, "shape", None))
        return a + b

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        sa, sb = ctx.shapes
        return _reduce(g, sa), _reduce(g, sb)


class Sub(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.shapes = (getattr(a, "shape", None), getattr(b, "shape", None))
        return a - b

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        sa, sb = ctx.shapes
        return _reduce(g, sa), (None if sb is None else unbroadcast(-g, sb))


class Mul(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        if g.dtype.kind == "c":  # torch's convention: the gradient is g times the conjugate
            a, b = np.conj(a), np.conj(b)
        need_a, need_b = ctx.needs_input_grad
        ga = unbroadcast(g * b, a.shape) if need_a else None
        gb = unbroadcast(g * a, b.shape) if need_b else None
        return ga, gb


class Div(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        with np.errstate(divide="ignore", invalid="ignore"):  # inf and nan, as in torch
            return a / b

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        if g.dtype.kind == "c":
            a, b = np.conj(a), np.conj(b)
        need_a, need_b = ctx.needs_input_grad
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = unbroadcast(g / b, a.shape) if need_a else None
            gb = unbroadcast(-g * a / (b * b), b.shape) if need_b else None
        return ga, gb


class Neg(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        return -a

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return -g


class Pow(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        out = a**b
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b, out = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        if need_a:
            # torch: d/da a**b = b * a**(b-1), and 0 where b == 0
            with np.errstate(divide="ignore", invalid="ignore"):
                ga = np.where(b == 0, 0, g * b * a ** (b - 1)).astype(g.dtype, copy=False)
            ga = unbroadcast(ga, _shape(a))
        if need_b:
            # torch: d/db a**b = a**b * log(a), and 0 where a == 0 and b >= 0
            with np.errstate(divide="ignore", invalid="ignore"):
                gb = g * out * np.log(a)
                gb = np.where((a == 0) & (b >= 0), 0, gb).astype(g.dtype, copy=False)
            gb = unbroadcast(gb, _shape(b))
        return ga, gb


class Remainder(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return np.remainder(a, b)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        ga = _reduce(g, _shape(a))
        gb = None
        if _shape(b) is not None:
            gb = unbroadcast(-g * np.floor_divide(a, b), b.shape)
        return ga, gb


class _Extremum(ArrayFunction):
    """The elementwise max or min of two arrays: ``pick`` chooses, ``a_wins(a, b)`` tells where
    ``a`` is chosen. The winner takes the gradient and a tie splits it in half, as in torch."""

    pick: Any  # a NumPy ufunc of two arrays
    a_wins: Any

    @classmethod
    def forward(cls, ctx: Context, a: Any, b: Any) -> Any:
        ctx.save_for_backward(a, b)
        return cls.pick(a, b)

    @classmethod
    def backward(cls, ctx: Context, g: Any) -> Any:
        a, b = ctx.saved_tensors
        wa = (cls.a_wins(a, b) + 0.5 * (a == b)).astype(g.dtype, copy=False)
        return unbroadcast(g * wa, a.shape), unbroadcast(g * (1 - wa), b.shape)


class Maximum(_Extremum):
    pick = np.maximum
    a_wins = np.greater


class Minimum(_Extremum):
    pick = np.minimum
    a_wins = np.less


class Where(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, cond: Any, a: Any, b: Any) -> Any:
        ctx.meta = (cond, _shape(a), _shape(b))
        return np.where(cond, a, b)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        cond, sa, sb = ctx.meta
        zero = np.zeros((), dtype=g.dtype)
        ga = None if sa is None else unbroadcast(np.where(cond, g, zero), sa)
        gb = None if sb is None else unbroadcast(np.where(cond, zero, g), sb)
        return None, ga, gb


class Clamp(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, lo: Any, hi: Any) -> Any:
        out = np.clip(a, lo, hi)
        if lo is not None and hi is not None and lo > hi:
            out = np.full_like(a, hi)  # torch: min > max gives max everywhere
        ctx.save_for_backward(a)
        ctx.bounds = (lo, hi)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (a,) = ctx.saved_tensors
        lo, hi = ctx.bounds
        keep = np.ones(a.shape, dtype=bool)
        if lo is not None:
            keep &= a >= lo
        if hi is not None:
            keep &= a <= hi
        return g * keep, None, None


# ---- public functions (also bound as Tensor methods) -------------------------------------


def add(input: Any, other: Any, *, alpha: Any = 1) -> Any:
    """``input + alpha * other`` with broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    return _binary(Add, input, other)


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Any:
    """``input - alpha * other`` with broadcasting."""
    if alpha != 1:
        other = mul(other, alpha)
    bool_a, bool_b = _is_bool_tensor(input), _is_bool_tensor(other)
    if bool_a and bool_b:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if bool_a or bool_b:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    a, b = coerce(input, other)
    return apply_binary(Sub, a, b)


def subtract(input: Any, other: Any, alpha: Any = 1) -> Any:
    """``sub`` (torch's ``subtract`` also takes ``alpha`` positionally after a number ``other``)."""
    return sub(input, other, alpha=alpha)


def _is_bool_tensor(x: Any) -> bool:
    return isinstance(x, TensorCore) and x._data.dtype.kind == "b"


def mul(input: Any, other: Any) -> Any:
    """``input * other`` with broadcasting."""
    return _binary(Mul, input, other)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Any:
    """True division (ints give the default float), or ``"floor"``/``"trunc"`` rounding."""
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        q = div(input, other)
        out = wrap(np.trunc(q._data))
        a, b = coerce(input, other)
        dt = a._data.dtype if isinstance(a, TensorCore) else b._data.dtype
        return wrap(out._data.astype(dt)) if category(dt) < _FLOAT else out
    if rounding_mode is not None:
        raise RuntimeError(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
            f"'{rounding_mode}'"
        )
    a, b = coerce(input, other)
    a, b = _to_float(a), _to_float(b)
    return apply_binary(Div, a, b)


true_divide = div


def _to_float(x: Any) -> Any:
    if isinstance(x, TensorCore) and category(x._data.dtype) < _FLOAT:
        return cast(x, _dtype.get_default_dtype().np)
    return x


def floor_divide(input: Any, other: Any) -> Any:
    """``input // other`` (rounds toward negative infinity, like Python and torch)."""
    a, b = coerce(input, other)
    _check_int_zero_division(a, b)
    ra = a._data if isinstance(a, TensorCore) else a
    rb = b._data if isinstance(b, TensorCore) else b
    return wrap(np.asarray(np.floor_divide(ra, rb)))


def _check_int_zero_division(a: Any, b: Any) -> None:
    """torch raises on integer division by zero where NumPy warns and gives 0."""
    dt = a._data.dtype if isinstance(a, TensorCore) else b._data.dtype
    if category(dt) < _FLOAT and np.any(_raw(b) == 0):
        raise RuntimeError("ZeroDivisionError")


def remainder(input: Any, other: Any) -> Any:
    """Python's ``%``: the result has the sign of ``other``."""
    a, b = coerce(input, other)
    _check_int_zero_division(a, b)
    return apply_binary(Remainder, a, b)


def pow(input: Any, exponent: Any) -> Any:  # noqa: A001 - torch's name
    """``input ** exponent`` with broadcasting."""
    a, b = coerce(input, exponent)
    ra = a._data if isinstance(a, TensorCore) else np.asarray(a)
    rb = b._data if isinstance(b, TensorCore) else np.asarray(b)
    if ra.dtype.kind in "iu" and rb.dtype.kind in "iu" and np.any(rb < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return apply_binary(Pow, a, b)


def neg(input: Any) -> Any:
    """``-input``."""
    if input._data.dtype.kind == "b":
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
            "invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return Neg.apply(input)


def maximum(input: Any, other: Any) -> Any:
    """Elementwise maximum; a tie splits the gradient in half, as in torch."""
    a, b = coerce(input, other)
    return apply_binary(Maximum, *_both_tensors(a, b))


def minimum(input: Any, other: Any) -> Any:
    """Elementwise minimum; a tie splits the gradient in half, as in torch."""
    a, b = coerce(input, other)
    return apply_binary(Minimum, *_both_tensors(a, b))


def _both_tensors(a: Any, b: Any) -> tuple[Any, Any]:
    if not isinstance(a, TensorCore):
        a = wrap(np.asarray(a, dtype=b._data.dtype))
    if not isinstance(b, TensorCore):
        b = wrap(np.asarray(b, dtype=a._data.dtype))
    return a, b


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """``input`` where ``condition`` holds, else ``other``; ``where(cond)`` is ``nonzero(as_tuple=True)``."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if condition._data.dtype.kind != "b":
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{torch_type_name(condition._data.dtype)}"
        )
    if not isinstance(input, TensorCore) and not isinstance(other, TensorCore):
        input = wrap(np.asarray(input, dtype=_scalar_dtype(input)))
    a, b = coerce(input, other)
    return Where.apply(condition._data, a, b)


def _scalar_dtype(value: Any) -> np.dtype:
    if type(value) is float:
        return _dtype.get_default_dtype().np
    return np.asarray(value).dtype


def clamp(input: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - torch's names
    """Limit values to ``[min, max]``; the gradient passes where ``min <= x <= max``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, TensorCore) or isinstance(max, TensorCore):
        out = input
        if min is not None:
            out = where(wrap(out._data < _raw(min)), min, out)
        if max is not None:
            out = where(wrap(out._data > _raw(max)), max, out)
        return out
    for bound in (min, max):
        if bound is not None:
            input, _ = _with_scalar(input, bound, False)
    return Clamp.apply(input, _scalar(min), _scalar(max))


clip = clamp


def _raw(x: Any) -> Any:
    return x._data if isinstance(x, TensorCore) else x


def fill_value(value: Any, dtype: np.dtype, name: str) -> Any:
    """What a fill op (``masked_fill_``, ``index_fill_``) writes: a number or a 0-d tensor, as ``dtype``."""
    if not isinstance(value, TensorCore):
        return np.asarray(value, dtype=dtype)
    if value._data.ndim != 0:
        raise RuntimeError(
            f"{name} only supports a 0-dimensional value tensor, but got tensor with "
            f"{value._data.ndim} dimension(s)."
        )
    return cast(value, dtype)


def masked_fill(input: Any, mask: Any, value: Any) -> Any:
    """``value`` where ``mask`` is True; ``value`` may be a scalar or a 0-d tensor."""
    if mask._data.dtype.kind != "b":
        raise RuntimeError(
            "masked_fill_ only supports boolean masks, but got mask with dtype "
            f"{cpp_type_name(mask._data.dtype)}"
        )
    value = fill_value(value, input._data.dtype, "masked_fill_")
    if mask._data.shape != input._data.shape:
        shape = np.broadcast_shapes(mask._data.shape, input._data.shape) if _fits(
            mask._data.shape, input._data.shape) else None
        if shape != input._data.shape:
            raise broadcast_error(mask._data.shape, input._data.shape)
    return Where.apply(mask._data, value, input)


def _fits(sa: tuple[int, ...], sb: tuple[int, ...]) -> bool:
    try:
        np.broadcast_shapes(sa, sb)
    except ValueError:
        return False
    return True


# ---- comparisons and logic (no gradient) --------------------------------------------------


def _compare(input: Any, other: Any, op: Any) -> Any:
    a = input._data
    if isinstance(other, TensorCore):
        b = other._data
        if type(b) is not type(a):
            _check_same_device([input, other])
    else:
        b = other
    return wrap(np.asarray(op(a, b)))


def _comparison(op: Any, name: str, doc: str) -> Callable[[Any, Any], Any]:
    """The public function ``name``: NumPy's ``op`` on the two operands, a bool tensor (no grad)."""

    def compare(input: Any, other: Any) -> Any:
        return _compare(input, other, op)

    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = doc
    return compare


eq = _comparison(np.equal, "eq", "Elementwise ``==`` as a bool tensor.")
ne = _comparison(np.not_equal, "ne", "Elementwise ``!=`` as a bool tensor.")
lt = _comparison(np.less, "lt", "Elementwise ``<`` as a bool tensor.")
le = _comparison(np.less_equal, "le", "Elementwise ``<=`` as a bool tensor.")
gt = _comparison(np.greater, "gt", "Elementwise ``>`` as a bool tensor.")
ge = _comparison(np.greater_equal, "ge", "Elementwise ``>=`` as a bool tensor.")
logical_and = _comparison(np.logical_and, "logical_and", "Elementwise logical and, as a bool tensor.")
logical_or = _comparison(np.logical_or, "logical_or", "Elementwise logical or, as a bool tensor.")
logical_xor = _comparison(np.logical_xor, "logical_xor", "Elementwise logical xor, as a bool tensor.")


def logical_not(input: Any) -> Any:
    """Elementwise logical not, as a bool tensor."""
    return wrap(np.logical_not(input._data))


def bitwise_not(input: Any) -> Any:
    """``~input``: logical not for bool tensors, bitwise not for integers."""
    if category(input._data.dtype) == _FLOAT:
        raise TypeError(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors"
        )
    return wrap(np.invert(input._data))


def _bitwise(op: Any, name: str) -> Any:
    def fn(input: Any, other: Any) -> Any:
        a, b = coerce(input, other)
        for x in (a, b):
            if isinstance(x, TensorCore) and category(x._data.dtype) == _FLOAT:
                raise NotImplementedError(
                    f"\"{name}_cpu\" not implemented for '{torch_type_name(x._data.dtype)}'"
                )
        return wrap(np.asarray(op(_raw(a), _raw(b))))

    return fn


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


def isfinite(input: Any) -> Any:
    """True where the value is neither inf nor nan."""
    return wrap(np.isfinite(input._data))


def isnan(input: Any) -> Any:
    """True where the value is nan."""
    return wrap(np.isnan(input._data))


def isinf(input: Any) -> Any:
    """True where the value is +inf or -inf."""
    return wrap(np.isinf(input._data))


def allclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether ``|input - other| <= atol + rtol * |other|`` everywhere."""
    return bool(np.allclose(input._data, other._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def isclose(input: Any, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Any:
    """Elementwise ``allclose``, as a bool tensor."""
    return wrap(np.isclose(input._data, _raw(other), rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input: Any, other: Any) -> bool:
    """True when both tensors have the same shape and elements."""
    return input._data.shape == other._data.shape and bool(np.all(input._data == other._data))
