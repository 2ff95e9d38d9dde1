"""Small helpers of the module system: torch's type names, repr indentation,
``Module.to``'s argument parsing, and the ``weight``/``bias`` pair that layers
create and initialise alike."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from mininn import _dtype
from mininn._backend import as_device, device
from mininn._factories import empty
from mininn.nn import init
from mininn.nn.parameter import Parameter
from mininn.tensor import Tensor

if TYPE_CHECKING:
    from mininn.nn.modules.module import Module

__all__ = [
    "typename",
    "addindent",
    "parse_to",
    "remove_from",
    "register_weight_and_bias",
    "reset_kaiming_uniform",
    "changed_settings",
    "check_optional_batch_dim",
]

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


_TO_SIGNATURES = (
    "\n * (mininn.device device = None, mininn.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, mininn.memory_format memory_format = None)"
    "\n * (mininn.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "mininn.memory_format memory_format = None)"
    "\n * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "mininn.memory_format memory_format = None)\n"
)


def _arg_type(value: Any) -> str:
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, (_dtype.dtype, device)):
        return f"mininn.{type(value).__name__}"
    return type(value).__name__


def _is_device(value: Any) -> bool:
    return isinstance(value, (str, device)) or (isinstance(value, int) and not isinstance(value, bool))


def _match_to(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any] | None:
    """torch's three ``to`` overloads; (device, dtype) of the one that fits, else None."""
    flags = {k: v for k, v in kwargs.items() if k in ("non_blocking", "memory_format")}
    rest = {k: v for k, v in kwargs.items() if k not in flags}
    head = args[:1]
    tail = args[1:]
    if head and isinstance(head[0], (Tensor, _dtype.dtype)):
        if rest or len(tail) > 1 or not all(isinstance(t, bool) for t in tail):
            return None
        if isinstance(head[0], Tensor):
            return head[0].device, head[0].dtype
        return None, head[0]
    names = ("device", "dtype", "non_blocking")
    if len(args) > len(names) or any(k not in names for k in rest):
        return None
    bound = dict(zip(names, args))
    if any(k in bound for k in rest):
        return None
    bound.update(rest)
    dev, dt, nb = bound.get("device"), bound.get("dtype"), bound.get("non_blocking", False)
    if not (dev is None or _is_device(dev)) or not (dt is None or isinstance(dt, _dtype.dtype)):
        return None
    if not isinstance(nb, bool):
        return None
    return dev, dt


def parse_to(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """``Module.to``'s arguments -> (device or None, dtype or None), as torch parses them.

    Raises:
        RuntimeError: ``copy`` was passed (torch refuses it for modules).
        TypeError: no overload fits; torch's message lists the three signatures.
    """
    if "copy" in kwargs:
        raise RuntimeError(".to() does not accept copy argument")
    matched = _match_to(args, kwargs)
    if matched is None:
        got = ", ".join([_arg_type(a) for a in args] + [f"{k}={_arg_type(v)}" for k, v in kwargs.items()])
        raise TypeError(
            f"to() received an invalid combination of arguments - got ({got}), but expected one of:"
            + _TO_SIGNATURES
        )
    dev, dt = matched
    if isinstance(dev, int):
        dev = f"cuda:{dev}"
    return (None if dev is None else as_device(dev)), dt


def register_weight_and_bias(
    module: Module, weight_shape: Any, bias_shape: Any, bias: bool, device: Any, dtype: Any
) -> None:
    """Uninitialised ``weight`` and (with ``bias``) ``bias`` Parameters, else a ``None`` bias slot."""
    module.weight = Parameter(empty(weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(empty(bias_shape, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def reset_kaiming_uniform(weight: Parameter, bias: Parameter | None) -> None:
    """torch's initialisation of ``Linear`` and ``ConvNd``: ``weight`` from
    ``kaiming_uniform_(a=sqrt(5))``, ``bias`` from U(+-1/sqrt(fan_in))."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


def changed_settings(module: Module, **defaults: Any) -> str:
    """``", name=value"`` for each of ``module``'s settings that is not its default, in order.

    Bool defaults are compared with ``is not``, others with ``!=``, as torch's reprs do.
    """
    s = ""
    for name, default in defaults.items():
        value = getattr(module, name)
        if (value is not default) if isinstance(default, bool) else (value != default):
            s += f", {name}={value}"
    return s


def check_optional_batch_dim(input: Tensor, ndim: int) -> None:  # noqa: A002 - torch's argument name
    """torch's check of an unbatched ``ndim``-D input or its batched ``(ndim + 1)``-D form."""
    if input.dim() not in (ndim, ndim + 1):
        raise ValueError(f"expected {ndim}D or {ndim + 1}D input (got {input.dim()}D input)")
