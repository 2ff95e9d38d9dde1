"""``torch.jit`` on mininn: TorchScript's decorators and helpers, with the code run eagerly, as Python.

Model files mark code for TorchScript (``@torch.jit.script`` on a helper,
``@torch.jit.ignore`` on a method, ``torch.jit.Final`` constants,
``torch.jit.annotate``, ``if torch.jit.is_scripting():``). In torch, that code
also runs as ordinary Python whenever it is not scripted; mininn always runs it
so:

- ``script``, ``ignore``, ``unused``, ``export``, ``script_method``,
  ``interface``, ``script_if_tracing`` return what they are given, unchanged
  (``script(module)`` is the module itself, with the same state dict and hooks).
- ``trace`` and ``trace_module`` run the example inputs once (errors surface
  there, as in torch) and return the function or module unchanged.
- ``is_scripting()`` and ``is_tracing()`` are ``False``; ``annotate(type, value)``
  is ``value``; ``fork`` runs the call at once and ``wait`` returns its result.
- ``ScriptModule`` is an ``nn.Module`` (old-style ``@script_method`` models run),
  ``Attribute(value, type)`` is torch's named tuple, unwrapped by ``ScriptModule``.
- ``freeze`` and ``optimize_for_inference`` return the module (in eval mode).
- ``load`` and ``save`` refuse: a TorchScript archive holds compiled TorchScript,
  not Python, and mininn cannot run it. Save a state dict instead
  (``torch.save(model.state_dict(), "weights.pt")``) and serve it with the
  ``model.py`` that defines the model.

torch 2.13 warns that TorchScript is deprecated whenever ``script``/``trace``/
``fork`` are called; mininn does not, as nothing here is compiled.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import os
import types
import typing
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, NamedTuple, TypeVar

from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = [
    "Attribute",
    "Error",
    "Final",
    "Future",
    "ScriptModule",
    "ScriptWarning",
    "TorchScriptError",
    "TracerWarning",
    "TracingCheckError",
    "annotate",
    "enable_onednn_fusion",
    "export",
    "fork",
    "freeze",
    "fuser",
    "ignore",
    "interface",
    "is_scripting",
    "is_tracing",
    "isinstance",
    "load",
    "onednn_fusion_enabled",
    "optimize_for_inference",
    "optimized_execution",
    "save",
    "script",
    "script_if_tracing",
    "script_method",
    "set_fusion_strategy",
    "trace",
    "trace_module",
    "unused",
    "wait",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

Final = typing.Final  # torch.jit.Final is typing's: `x: torch.jit.Final[int] = 3`


class Error(Exception):
    """torch's TorchScript runtime error; mininn runs code as Python, so it is never raised here."""


class TorchScriptError(RuntimeError):
    """A TorchScript archive was asked for (``jit.load``/``jit.save``): mininn runs Python code only."""


class TracerWarning(Warning):
    """torch's warning about code a trace cannot follow; model files filter it. mininn never traces."""


class ScriptWarning(Warning):
    """torch's warning from the TorchScript compiler; never issued by mininn."""


class TracingCheckError(Exception):
    """torch's error when a trace's check run disagrees; never raised by mininn, which runs code eagerly."""


# -- decorators that mark code for the TorchScript compiler: here the code runs as it is ---------------


def script(obj: T, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> T:
    """``obj`` itself (a function, module or class): it runs eagerly, as torch runs unscripted code."""
    return obj


def script_method(fn: F) -> F:
    """``fn`` itself: a ``ScriptModule`` method runs as Python."""
    return fn


def script_if_tracing(fn: F) -> F:
    """``fn`` itself (mininn never traces)."""
    return fn


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """Leave a function to Python: ``@ignore`` or ``@ignore(drop=...)`` returns the function unchanged.

    Raises:
        RuntimeError: the argument is neither a bool nor a function (torch's message).
    """
    if callable(drop):
        return drop
    if not builtins.isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    if drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the function call on "
                      "compilation. Use torch.jit.unused now.", FutureWarning, stacklevel=2)
    return lambda fn: fn


def unused(fn: F) -> F:
    """``fn`` (or the property) itself: the code runs when called, as in torch's eager mode."""
    return fn


def export(fn: F) -> F:
    """``fn`` itself: an exported method is an ordinary method."""
    return fn


def interface(obj: T) -> T:
    """The class itself.

    Raises:
        RuntimeError: ``obj`` is not a class (torch's message).
    """
    if not inspect.isclass(obj):
        raise RuntimeError("interface must be applied to a class")
    return obj


def _overload(func: F) -> F:
    """An overload declaration; the definition that follows it (same name) is the one that runs."""
    return func


def _overload_method(func: F) -> F:
    """An overload declaration of a method; the definition that follows it is the one that runs."""
    return func


def is_scripting() -> bool:
    """``False``: mininn runs code as Python, never as TorchScript."""
    return False


def is_tracing() -> bool:
    """``False``: ``trace`` runs code as Python, recording nothing."""
    return False


def annotate(the_type: Any, the_value: T) -> T:
    """``the_value``: the type is for the TorchScript compiler only."""
    return the_value


# -- tracing: run the example once, return the code unchanged --------------------------------------------


def trace(func: T, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class: Any = None, _compilation_unit: Any = None,
          example_kwarg_inputs: Mapping[str, Any] | None = None, _store_inputs: bool = True) -> T:
    """Run ``func`` (a function or module) once on the example inputs and return it unchanged.

    ``example_inputs`` is a tensor (one argument) or a tuple of the positional
    arguments; ``example_kwarg_inputs`` a dict of keyword arguments. The run
    raises what the code raises, as torch's tracing run does; the result is the
    eager ``func``, which behaves as torch's traced one on inputs that follow the
    traced path (and also on those that do not).

    Raises:
        RuntimeError: ``example_kwarg_inputs`` is not a dict (torch's message).
        TypeError: neither kind of example inputs is given.
    """
    _call_with_example(func, example_inputs, example_kwarg_inputs)  # type: ignore[arg-type]
    return func


def trace_module(mod: Module, inputs: Mapping[str, Any], optimize: Any = None, check_trace: bool = True,
                 check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True,
                 _force_outplace: bool = False, _module_class: Any = None, _compilation_unit: Any = None,
                 example_inputs_is_kwarg: bool = False, _store_inputs: bool = True) -> Module:
    """Run each named method of ``mod`` once on its example inputs and return ``mod`` unchanged.

    Raises:
        AttributeError: ``inputs`` is not a dict of method name to example inputs.
    """
    if not builtins.isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    for name, example in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg:
            _call_with_example(method, None, example)
        else:
            _call_with_example(method, example, None)
    return mod


def _call_with_example(func: Callable[..., Any], example_inputs: Any,
                       example_kwarg_inputs: Mapping[str, Any] | None) -> Any:
    if example_kwarg_inputs is not None:
        if not builtins.isinstance(example_kwarg_inputs, dict):
            raise RuntimeError("example_kwarg_inputs should be a dict")
        return func(**example_kwarg_inputs)
    if example_inputs is None:
        raise TypeError("trace() needs example_inputs (a tensor, or a tuple of the positional arguments) "
                        "or example_kwarg_inputs (a dict of the keyword arguments)")
    if builtins.isinstance(example_inputs, tuple):
        return func(*example_inputs)
    if builtins.isinstance(example_inputs, (Tensor, dict)):
        return func(example_inputs)  # one tensor or dict is one positional argument, as in torch
    return func(*tuple(example_inputs))


# -- modules ----------------------------------------------------------------------------------------------


class Attribute(NamedTuple):
    """A typed attribute for TorchScript: ``ScriptModule`` stores ``value``; elsewhere it stays this tuple."""

    value: Any
    type: Any


class ScriptModule(Module):
    """The base of old-style TorchScript modules (``@script_method`` methods): an ``nn.Module`` here.

    Assigning an ``Attribute(value, type)`` stores ``value``, as torch's does.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if builtins.isinstance(value, Attribute):
            value = value.value
        super().__setattr__(name, value)


def freeze(mod: Module, preserved_attrs: list[str] | None = None, optimize_numerics: bool = True) -> Module:
    """``mod`` itself: a module in eval mode is already what freezing makes of it.

    Raises:
        RuntimeError: ``mod`` is in training mode (torch's message).
    """
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod


def optimize_for_inference(mod: Module, other_methods: list[str] | None = None) -> Module:
    """``mod`` switched to eval mode, as torch's freezes it."""
    return mod.eval()


@contextlib.contextmanager
def optimized_execution(should_optimize: bool) -> Iterator[None]:
    """A context that changes nothing (it tunes TorchScript's executor)."""
    yield


@contextlib.contextmanager
def fuser(name: str) -> Iterator[None]:
    """A context that changes nothing (it picks TorchScript's kernel fuser)."""
    yield


_fusion_strategy: list[tuple[str, int]] = [("STATIC", 2), ("DYNAMIC", 10)]
_onednn_fusion = False


def set_fusion_strategy(strategy: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Record TorchScript's fusion strategy (nothing is compiled here) and return the previous one.

    Raises:
        ValueError: a kind other than ``"STATIC"`` or ``"DYNAMIC"`` (torch's message).
    """
    global _fusion_strategy
    for kind, _ in strategy:
        if kind not in ("STATIC", "DYNAMIC"):
            raise ValueError(f"FusionBehavior only supported 'STATIC' or 'DYNAMIC', got: {kind}")
    previous, _fusion_strategy = _fusion_strategy, list(strategy)
    return previous


def enable_onednn_fusion(enabled: bool) -> None:
    """Record whether TorchScript should fuse with oneDNN (nothing is compiled here)."""
    global _onednn_fusion
    _onednn_fusion = bool(enabled)


def onednn_fusion_enabled() -> bool:
    """What ``enable_onednn_fusion`` last recorded (``False`` at first, as in torch)."""
    return _onednn_fusion


# -- asynchronous calls, run at once ---------------------------------------------------------------------


class Future(Generic[T]):
    """The result of ``fork``: already computed, as mininn runs the call at once."""

    def __init__(self, value: T) -> None:
        self._value = value

    def wait(self) -> T:
        """The call's result."""
        return self._value

    def value(self) -> T:
        """The call's result."""
        return self._value

    def done(self) -> bool:
        """``True``: the call has run."""
        return True


def fork(func: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
    """Run ``func(*args, **kwargs)`` now (exceptions propagate here, as in torch's eager mode)."""
    return Future(func(*args, **kwargs))


def wait(future: Future[T]) -> T:
    """The result of a ``fork``.

    Raises:
        TypeError: ``future`` is not a ``Future``.
    """
    if not builtins.isinstance(future, Future):
        raise TypeError(f"wait() expects a Future from torch.jit.fork, got {type(future).__name__}")
    return future.wait()


# -- refinement of container types -----------------------------------------------------------------------


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001 - torch's name
    """Whether ``obj`` is of ``target_type``, containers included: ``List[int]``, ``Dict[str, Tensor]``,
    ``Tuple[int, str]``, ``Optional[...]``/``Union[...]``, checked element by element.

    Raises:
        RuntimeError: a container type without its contained types (torch's message).
    """
    origin = typing.get_origin(target_type)
    args = typing.get_args(target_type)
    _check_contained_types(target_type, origin, args)
    if origin is typing.Union or origin is types.UnionType:
        return any(isinstance(obj, arg) for arg in args)
    if origin is list:
        return builtins.isinstance(obj, list) and all(isinstance(x, args[0]) for x in obj)
    if origin is dict:
        return builtins.isinstance(obj, dict) and all(
            isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        return (builtins.isinstance(obj, tuple) and len(obj) == len(args)
                and all(isinstance(x, arg) for x, arg in zip(obj, args)))
    if target_type is None or target_type is type(None):
        return obj is None
    return builtins.isinstance(obj, target_type)


_CONTAINERS = {list: "list", dict: "dict", tuple: "tuple", typing.List: "List",  # noqa: UP006
               typing.Dict: "Dict", typing.Tuple: "Tuple", typing.Optional: "Optional"}  # noqa: UP006


def _check_contained_types(target_type: Any, origin: Any, args: tuple[Any, ...]) -> None:
    if args:
        return
    name = next((n for t, n in _CONTAINERS.items() if target_type is t), None)
    if name is None:
        return
    if name.lower() == "dict":
        raise RuntimeError(f"Attempted to use {name} without contained types. "
                           f"Please add contained type, e.g. {name}[int, int]")
    raise RuntimeError(f"Attempted to use {name} without a contained type. "
                       f"Please add a contained type, e.g. {name}[int]")


# -- TorchScript archives: refused ----------------------------------------------------------------------

_INSTEAD = ("save a state dict instead, in torch: torch.save(model.state_dict(), 'weights.pt'), and serve "
            "it with the model.py that defines the model")


def load(f: Any, map_location: Any = None, _extra_files: Any = None, _restore_shapes: bool = False) -> Any:
    """Refuse: a TorchScript archive holds compiled TorchScript code, which mininn cannot run.

    Raises:
        ValueError: ``f`` names a file that does not exist, or a directory (torch's messages).
        TorchScriptError: always otherwise; the message says what to save instead.
    """
    if builtins.isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if not os.path.exists(path):
            raise ValueError(f"The provided filename {path} does not exist")
        if os.path.isdir(path):
            raise ValueError(f"The provided filename {path} is a directory")
    name = repr(os.fspath(f)) if builtins.isinstance(f, (str, os.PathLike)) else "the file"
    if _is_state_dict_archive(f):
        raise TorchScriptError(f"torch.jit.load: {name} is a checkpoint saved by torch.save, not a "
                               "TorchScript archive; load it with torch.load and model.load_state_dict")
    raise TorchScriptError(f"torch.jit.load: mininn cannot run TorchScript archives ({name}): they hold "
                           f"compiled TorchScript code, not Python; {_INSTEAD}")


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """Refuse: mininn makes no TorchScript archives.

    Raises:
        TorchScriptError: always; the message says what to save instead.
    """
    raise TorchScriptError(f"torch.jit.save: mininn does not write TorchScript archives; {_INSTEAD}")


def _is_state_dict_archive(f: Any) -> bool:
    """Whether ``f`` is a ``torch.save`` zip (``data.pkl`` and no TorchScript ``code/``)."""
    try:
        if hasattr(f, "seek"):
            position = f.tell()
            try:
                names = zipfile.ZipFile(f).namelist()
            finally:
                f.seek(position)
        else:
            with zipfile.ZipFile(os.fspath(f)) as archive:
                names = archive.namelist()
    except (OSError, ValueError, zipfile.BadZipFile, TypeError):
        return False
    has_code = any("/code/" in n or n.endswith("constants.pkl") for n in names)
    return not has_code and any(n.endswith("data.pkl") for n in names)
