"""Dtype casts, device moves and copies (differentiable like torch's), and the
Tensor conversion methods built on them: ``to``, ``float``, ``new_zeros``, ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mininn import _dtype
from mininn._backend import as_device, device, device_of, to_device
from mininn._functions._util import legacy_type_name
from mininn._layout import preserve_format
from mininn._legacy_types import parse_tensor_type
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import ArrayFunction, Context


class Cast(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, np_dtype: Any) -> Any:
        ctx.in_dtype = a.dtype
        return a.astype(np_dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        if g.dtype.kind == "c" and ctx.in_dtype.kind != "c":
            g = g.real  # real -> complex: the real input gets the real part, as in torch
        return g.astype(ctx.in_dtype), None


class ToDevice(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, dev: device) -> Any:
        ctx.src = device_of(a)
        return to_device(a, dev)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return to_device(g, ctx.src), None


class Clone(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        return a.copy()

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g


def cast(t: Any, np_dtype: Any) -> Any:
    """``t`` converted to ``np_dtype`` (``t`` itself when it already has it)."""
    if t._data.dtype == np_dtype:
        return t
    return Cast.apply(t, np_dtype)


# ---- Tensor conversion methods ------------------------------------------------------------


def to(self, *args: Any, **kwargs: Any) -> Any:
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(other)``."""
    dev, dt, copy = _parse_to_args(args, kwargs)
    out = self
    if dt is not None and dt.np != out._data.dtype:
        out = Cast.apply(out, dt.np)
    if dev is not None and dev != out.device:
        out = ToDevice.apply(out, dev)
    if copy and out is self:
        out = Clone.apply(self)
    return out


def cpu(self, memory_format: Any = preserve_format) -> Any:
    """This tensor on the cpu (itself when it is already there); ``memory_format`` only orders
    strides in torch, the values are the same."""
    return self.to("cpu")


def cuda(self, device: int | str | None = None, non_blocking: bool = False,
         memory_format: Any = preserve_format) -> Any:
    """This tensor on a CUDA device (needs CuPy); mininn's copies are synchronous, so
    ``non_blocking`` changes nothing."""
    if device is None:
        device = "cuda"
    elif isinstance(device, int):
        device = f"cuda:{device}"
    return self.to(device)


def _cast_method(name: str, dt: _dtype.dtype) -> Callable[[Any], Any]:
    """The Tensor method ``name``: a cast to ``dt`` (``to_float``, bound as ``Tensor.float``)."""

    def cast_to(self: Any) -> Any:
        return self.to(dt)

    cast_to.__name__ = cast_to.__qualname__ = name
    cast_to.__doc__ = f"Cast to {dt.name}."
    return cast_to


to_float = _cast_method("to_float", _dtype.float32)
to_double = _cast_method("to_double", _dtype.float64)
to_half = _cast_method("to_half", _dtype.float16)
to_long = _cast_method("to_long", _dtype.int64)
to_int = _cast_method("to_int", _dtype.int32)
to_short = _cast_method("to_short", _dtype.int16)
to_byte = _cast_method("to_byte", _dtype.uint8)
to_char = _cast_method("to_char", _dtype.int8)
to_bool = _cast_method("to_bool", _dtype.bool)


def to_bfloat16(self) -> Any:
    """Cast to bfloat16 (needs ml_dtypes)."""
    if _dtype.bfloat16 is None:
        raise RuntimeError("bfloat16 needs the ml_dtypes package (pip install ml_dtypes)")
    return self.to(_dtype.bfloat16)


def tensor_type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
    """The type name (``"torch.FloatTensor"`` in torch's spelling) or a cast to ``dtype``.

    ``dtype`` may be a dtype, a legacy type (``FloatTensor``, ``cuda.LongTensor``) or its name.
    """
    if dtype is None:
        name = legacy_type_name(self._data.dtype)
        return name.replace("torch.", "torch.cuda.", 1) if self.device.type == "cuda" else name
    dt, device_type = parse_tensor_type(dtype)
    return self.to(dt) if device_type is None else self.to(device_type, dt)


def type_as(self, other: Any) -> Any:
    """Cast to ``other``'s dtype."""
    return self.to(other.dtype)


def _parse_to_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, bool]:
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    copy = bool(kwargs.pop("copy", False))
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, TensorCore):
            dev, dt = a.device, a.dtype
        elif isinstance(a, _dtype.dtype):
            dt = a
        elif isinstance(a, (str, device)):
            if isinstance(a, str) and a.removeprefix("mininn.") in _dtype._BY_NAME:
                dt = _dtype.as_dtype(a)
            else:
                dev = a
        elif isinstance(a, bool):
            continue  # non_blocking / copy positional flags
        elif isinstance(a, int):
            dev = f"cuda:{a}"  # torch: an int is an accelerator index
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return (
        None if dev is None else as_device(dev),
        None if dt is None else _dtype.as_dtype(dt),
        copy,
    )
