"""Small helpers of the module system: torch's type names, repr indentation and
``Module.to``'s argument parsing."""

from __future__ import annotations

from typing import Any

from mininn import _dtype
from mininn._backend import as_device
from mininn.tensor import Tensor

__all__ = ["typename", "addindent", "parse_to", "remove_from"]

_LEGACY_TYPE_NAMES = {
    "float32": "FloatTensor",
    "float64": "DoubleTensor",
    "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor",
    "int64": "LongTensor",
    "int32": "IntTensor",
    "int16": "ShortTensor",
    "int8": "CharTensor",
    "uint8": "ByteTensor",
    "bool": "BoolTensor",
}


def typename(obj: Any) -> str:
    """torch.typename with ``mininn``: ``'mininn.FloatTensor'``, ``'int'``, ``'pkg.mod.Cls'``."""
    if isinstance(obj, Tensor):
        name = _LEGACY_TYPE_NAMES.get(obj.dtype.name, obj.dtype.name)
        return f"mininn.cuda.{name}" if obj.device.type == "cuda" else f"mininn.{name}"
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = type(obj).__module__ or ""
        qualname = type(obj).__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def addindent(s_: str, num_spaces: int) -> str:
    lines = s_.split("\n")
    if len(lines) == 1:
        return s_
    first = lines.pop(0)
    rest = [(num_spaces * " ") + line if line.strip() else "" for line in lines]
    return first + "\n" + "\n".join(rest)


def remove_from(name: str, *dicts_or_sets: Any) -> None:
    for d in dicts_or_sets:
        if name in d:
            if isinstance(d, dict):
                del d[name]
            else:
                d.discard(name)


def parse_to(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """``Module.to``'s arguments -> (device or None, dtype or None)."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, int) and not isinstance(a, bool):
            device = f"cuda:{a}"
        elif isinstance(a, bool) or a is None:
            continue  # non_blocking, or an explicit None
        else:
            device = a
    return (None if device is None else as_device(device)), (
        None if dtype is None else _dtype.as_dtype(dtype)
    )
