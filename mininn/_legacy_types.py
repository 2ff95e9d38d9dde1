"""torch's legacy tensor types: ``FloatTensor``, ``LongTensor``, ... as old model files use them.

``mininn.FloatTensor(4, 5)`` is an uninitialised float32 tensor of that shape,
``mininn.FloatTensor([1, 2])`` one holding that data (cast to float32), ``mininn.FloatTensor()``
an empty one; ``isinstance(x, mininn.FloatTensor)`` is true for a dense float32 cpu tensor, as in
torch, and ``x.type(mininn.FloatTensor)``/``x.type("torch.FloatTensor")`` cast to it. The classes
are not subclasses of ``Tensor`` (torch's are not either); their metaclass is ``tensortype``.
``mininn.cuda.FloatTensor`` and friends are the same for cuda tensors.

``mininn.Tensor(2, 3)``, ``mininn.Tensor([1, 2])`` and ``mininn.Tensor()`` follow the same rules with
the default dtype (``legacy_tensor_data``, called by ``TensorCore.__init__`` for Python sizes and
sequences only; arrays keep their dtype, as mininn's own code relies on).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._backend import as_device, to_device
from mininn._layout import strided
from mininn._tensor_core import Size, TensorCore
from mininn.autograd.graph import wrap

__all__ = [
    "tensortype", "TENSOR_TYPES", "CUDA_TENSOR_TYPES", "legacy_tensor_data", "parse_tensor_type",
    "set_default_tensor_type",
]

# torch's names, by dtype name
_NAMES = {
    "float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
    "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
}
# torch's C++ names of the dtypes, in its TensorOptions message
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool"}


class tensortype(type):  # noqa: N801 - torch's name
    """The metaclass of the legacy tensor types: calling one builds a tensor, ``isinstance`` checks dtype."""

    dtype: _dtype.dtype
    is_cuda: bool
    is_sparse = False

    def __instancecheck__(cls, obj: Any) -> bool:
        return (isinstance(obj, TensorCore) and not getattr(obj, "is_sparse", False)
                and obj.dtype is cls.dtype and (obj.device.type == "cuda") == cls.is_cuda)

    def __call__(cls, *args: Any, device: Any = None, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"new() got an unexpected keyword argument '{next(iter(kwargs))}'; a legacy "
                            "tensor type takes sizes or data and an optional device")
        dev = as_device(device if device is not None else ("cuda" if cls.is_cuda else "cpu"))
        return _new(cls.dtype, dev, args, alias_any_dtype=False)

    @property
    def layout(cls) -> Any:
        return strided


def _cuda_module_name(is_cuda: bool) -> str:
    return "mininn.cuda" if is_cuda else "mininn"


def _make_type(dtype_name: str, is_cuda: bool) -> tensortype:
    name = _NAMES[dtype_name]
    doc = (f"torch's legacy ``{name}``: ``{name}(*sizes)`` (uninitialised), ``{name}(data)`` or "
           f"``{name}()``, all of dtype {dtype_name}{' on cuda' if is_cuda else ''}.")
    cls = tensortype(name, (), {"__module__": _cuda_module_name(is_cuda), "__doc__": doc, "__slots__": ()})
    cls.dtype = getattr(_dtype, dtype_name) if getattr(_dtype, dtype_name, None) is not None else None
    cls.is_cuda = is_cuda
    return cls


TENSOR_TYPES = {name: _make_type(dt, False) for dt, name in _NAMES.items() if getattr(_dtype, dt, None)}
CUDA_TENSOR_TYPES = {name: _make_type(dt, True) for dt, name in _NAMES.items() if getattr(_dtype, dt, None)}


def _describe(args: tuple[Any, ...]) -> str:
    return ", ".join(type(a).__name__ for a in args)


def _as_sizes(args: tuple[Any, ...]) -> tuple[int, ...] | None:
    """The sizes of ``T(2, 3)``/``T(Size([2, 3]))``, or None when ``args`` hold data."""
    if len(args) == 1 and isinstance(args[0], Size):
        return tuple(args[0])
    if args and all(type(a) is int for a in args):
        return args
    if len(args) > 1:
        for pos, a in enumerate(args, 1):
            if type(a) is not int:
                raise TypeError(
                    f"new(): argument 'size' failed to unpack the object at pos {pos} with error \"type must "
                    f"be tuple of ints,but got {type(a).__name__}\""
                )
    return None


def _from_tensor(dt: _dtype.dtype | None, tensor: TensorCore) -> Any:
    """``T(tensor)``: the same data (an alias), when the dtypes agree."""
    if dt is not None and tensor.dtype is not dt:
        def opts(name: str) -> str:
            return (f"TensorOptions(dtype={_CPP_NAMES.get(name, name)}, device=cpu, layout=Strided, "
                    "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))")

        raise TypeError(f"expected {opts(dt.name)} (got {opts(tensor.dtype.name)})")
    return wrap(tensor.detach()._data)


def _new(dt: _dtype.dtype | None, dev: Any, args: tuple[Any, ...], alias_any_dtype: bool) -> Any:
    """A legacy constructor's tensor of dtype ``dt`` (None: the default dtype) on ``dev``."""
    if len(args) == 1 and isinstance(args[0], TensorCore):
        return _from_tensor(None if alias_any_dtype else dt, args[0])
    array = legacy_tensor_data(args, dt)
    return wrap(array if dev.type == "cpu" else to_device(array, dev))


def legacy_tensor_data(args: tuple[Any, ...], dt: _dtype.dtype | None = None) -> np.ndarray:
    """The array of ``Tensor(*args)`` in torch's legacy rules: sizes (uninitialised) or data (cast).

    ``dt`` None means the default dtype. No args: an empty 1-D array. A float or other non-sequence
    alone is torch's ``TypeError``.
    """
    np_dtype = (dt or _dtype.get_default_dtype()).np
    if not args:
        return np.empty((0,), dtype=np_dtype)
    sizes = _as_sizes(args)
    if sizes is not None:
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}")
        return np.empty(sizes, dtype=np_dtype)
    (data,) = args
    if not isinstance(data, (list, tuple, np.ndarray)) and not hasattr(data, "__array__"):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    try:
        array = np.asarray(data)
    except ValueError as err:
        raise ValueError(f"new(): could not make a tensor of {_describe(args)}: {err}") from None
    if np_dtype.kind in "iu" and array.dtype.kind == "f":
        array = array.astype(np.int64)  # torch truncates, then wraps into the narrower type
    return array.astype(np_dtype)


def parse_tensor_type(value: Any) -> tuple[_dtype.dtype, str | None]:
    """The dtype and device type (``"cuda"``, or None for unchanged) that ``x.type(value)`` asks for.

    ``value`` is a dtype, a legacy type (``FloatTensor``, ``Tensor``) or its name
    (``"torch.FloatTensor"``, ``"torch.cuda.LongTensor"``, ``"mininn.FloatTensor"``).
    """
    if isinstance(value, tensortype):
        return value.dtype, "cuda" if value.is_cuda else "cpu"
    if isinstance(value, type) and issubclass(value, TensorCore):
        return _dtype.get_default_dtype(), None
    if isinstance(value, str):
        name = value.removeprefix("torch.").removeprefix("mininn.")
        is_cuda = name.startswith("cuda.")
        cls = TENSOR_TYPES.get(name.removeprefix("cuda."))
        if cls is None:
            if name in ("Tensor", "cuda.Tensor"):
                return _dtype.get_default_dtype(), "cuda" if is_cuda else "cpu"
            raise ValueError(f"invalid type: '{value}'")
        return cls.dtype, "cuda" if is_cuda else "cpu"
    return _dtype.as_dtype(value), None


def set_default_tensor_type(t: Any) -> None:
    """Deprecated in torch: set the default dtype from a floating legacy type (or its name)."""
    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    if not isinstance(t, (str, tensortype)):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    dt, dev = parse_tensor_type(t)
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if dev == "cuda":
        raise NotImplementedError("set_default_tensor_type(cuda type): mininn has no default device; move "
                                  "tensors with .to('cuda') instead")
    _dtype.set_default_dtype(dt)


def _install() -> None:
    """Let ``Tensor(2, 3)``/``Tensor([1, 2])`` (``TensorCore.__init__``) build with these rules."""
    from mininn import _tensor_core

    _tensor_core.legacy_tensor_data = legacy_tensor_data


_install()
