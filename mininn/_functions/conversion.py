"""Dtype casts, device moves and copies (differentiable like torch's), and the
Tensor conversion methods built on them: ``to``, ``float``, ``new_zeros``, ...
"""

from __future__ import annotations

from typing import Any

from mininn import _dtype
from mininn._backend import as_device, device, device_of, to_device
from mininn._functions._util import legacy_type_name, tensor_module
from mininn.autograd.function import Context, Function

_t = tensor_module()  # mininn.tensor, which imports this module


class Cast(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, np_dtype: Any) -> Any:
        ctx.in_dtype = a.dtype
        return a.astype(np_dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        if g.dtype.kind == "c" and ctx.in_dtype.kind != "c":
            g = g.real  # real -> complex: the real input gets the real part, as in torch
        return g.astype(ctx.in_dtype), None


class ToDevice(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dev: device) -> Any:
        ctx.src = device_of(a)
        return to_device(a, dev)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return to_device(g, ctx.src), None


class Clone(Function):
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


def cpu(self) -> Any:
    """This tensor on the cpu (itself when it is already there)."""
    return self.to("cpu")


def cuda(self, device: int | str | None = None) -> Any:
    """This tensor on a CUDA device (needs CuPy)."""
    if device is None:
        device = "cuda"
    elif isinstance(device, int):
        device = f"cuda:{device}"
    return self.to(device)


def to_float(self) -> Any:
    """Cast to float32."""
    return self.to(_dtype.float32)


def to_double(self) -> Any:
    """Cast to float64."""
    return self.to(_dtype.float64)


def to_half(self) -> Any:
    """Cast to float16."""
    return self.to(_dtype.float16)


def to_bfloat16(self) -> Any:
    """Cast to bfloat16 (needs ml_dtypes)."""
    if _dtype.bfloat16 is None:
        raise RuntimeError("bfloat16 needs the ml_dtypes package (pip install ml_dtypes)")
    return self.to(_dtype.bfloat16)


def to_long(self) -> Any:
    """Cast to int64."""
    return self.to(_dtype.int64)


def to_int(self) -> Any:
    """Cast to int32."""
    return self.to(_dtype.int32)


def to_short(self) -> Any:
    """Cast to int16."""
    return self.to(_dtype.int16)


def to_byte(self) -> Any:
    """Cast to uint8."""
    return self.to(_dtype.uint8)


def to_char(self) -> Any:
    """Cast to int8."""
    return self.to(_dtype.int8)


def to_bool(self) -> Any:
    """Cast to bool."""
    return self.to(_dtype.bool)


def tensor_type(self, dtype: Any = None) -> Any:
    """The type name (``"torch.FloatTensor"`` in torch's spelling) or a cast to ``dtype``."""
    if dtype is None:
        return legacy_type_name(self._data.dtype)
    return self.to(_dtype.as_dtype(dtype))


def type_as(self, other: Any) -> Any:
    """Cast to ``other``'s dtype."""
    return self.to(other.dtype)


def new_tensor(self, data: Any, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Any:
    """A new tensor from ``data`` with this tensor's dtype and device by default."""
    from mininn._factories import tensor

    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Any:
    """Zeros with this tensor's dtype and device by default."""
    return _new(self, size, 0, dtype, device, requires_grad)


def new_ones(self, *size: Any, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Any:
    """Ones with this tensor's dtype and device by default."""
    return _new(self, size, 1, dtype, device, requires_grad)


def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Any:
    """``fill_value`` everywhere, with this tensor's dtype and device by default."""
    return _new(self, (size,), fill_value, dtype, device, requires_grad)


def new_empty(self, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Any:
    """An uninitialised tensor with this tensor's dtype and device by default."""
    return _new(self, size, 0, dtype, device, requires_grad)


def _new(self, size: Any, fill: Any, dtype: Any, device: Any, requires_grad: bool) -> Any:
    from mininn._factories import full
    from mininn._functions.shape import shape_args

    return full(shape_args(size), fill, dtype=dtype or self.dtype,
                device=device or self.device, requires_grad=requires_grad)


def _parse_to_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, bool]:
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    copy = bool(kwargs.pop("copy", False))
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, _t.Tensor):
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
