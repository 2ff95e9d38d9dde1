"""``Module``: the base class of every layer and model, with torch 2.13's semantics.

A Module keeps its state in three insertion-ordered dicts, ``_parameters``,
``_buffers`` and ``_modules``, filled through ``__setattr__`` (or the
``register_*`` methods) and read back through ``__getattr__``; everything else
(traversal order, ``state_dict`` keys, ``repr``, hooks) follows from that
order exactly as in ``torch.nn.Module``.

Messages: every error and warning that torch raises is reproduced character for
character, with one rule: wherever torch names itself, the text says ``mininn``
instead (``mininn.FloatTensor`` for ``torch.FloatTensor``, ``mininn.nn.Parameter``
for ``torch.nn.Parameter``, ``mininn Tensor or None required``, and
``mininn.Size([5, 4])``, which is what ``repr(mininn.Size)`` prints, for
``torch.Size([5, 4])``). Links to PyTorch's documentation inside warnings are
kept as they are, since that is where the shared semantics are documented.

Beyond torch: ``load_state_dict`` checks every key and shape before it copies
anything, so a failed load leaves the module exactly as it was; it also accepts
NumPy arrays as state-dict values.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from mininn import _dtype
from mininn._backend import array_module, as_device
from mininn.autograd.grad_mode import no_grad
from mininn.nn.modules import _paths
from mininn.nn.modules import _state_dict as _sd
from mininn.nn.modules._hooks import (
    MIXED_BACKWARD_HOOKS,
    BoundHook,
    _global_backward_hooks,
    _global_backward_pre_hooks,
    _global_buffer_registration_hooks,
    _global_forward_hooks,
    _global_forward_pre_hooks,
    _global_module_registration_hooks,
    _global_parameter_registration_hooks,
    add_hook,
    call_with_hooks,
    register_module_backward_hook,
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)
from mininn.nn.modules._state_dict import _IncompatibleKeys
from mininn.nn.modules._utils import addindent, parse_to, remove_from, typename
from mininn.nn.parameter import Buffer, Parameter
from mininn.tensor import Tensor
from mininn.utils.hooks import RemovableHandle

__all__ = [
    "Module",
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_backward_hook",
    "register_module_full_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]

T = TypeVar("T", bound="Module")

_HOOK_DICTS = (
    "_backward_pre_hooks",
    "_backward_hooks",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)

def _forward_unimplemented(self: Module, *input: Any) -> Any:  # noqa: A002
    """The ``forward`` of a Module that defines none."""
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


def _check_name(kind: str, module: Module, name: Any, store: dict[str, Any]) -> None:
    """torch's order for parameters and buffers: str, dot, empty, exists."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\"")
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if hasattr(module, name) and name not in store:
        raise KeyError(f"attribute '{name}' already exists")


def _after_registration_hooks(hooks: Mapping[int, Callable[..., Any]], module: Module, name: str,
                              value: Any) -> Any:
    """``value`` passed through the global registration ``hooks``; a hook returning None keeps it."""
    for hook in tuple(hooks.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


class Module:
    """Base class for all neural network modules (``torch.nn.Module``).

    Subclasses call ``super().__init__()`` first, assign Parameters, buffers and
    submodules as attributes, and define ``forward``. Calling the module runs
    its hooks around ``forward``.
    """

    dump_patches: bool = False
    _version: int = 1
    call_super_init: bool = False
    training: bool
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Tensor | None]
    _non_persistent_buffers_set: set[str]
    _modules: dict[str, Module | None]
    _backward_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _backward_hooks: OrderedDict[int, Callable[..., Any]]
    _is_full_backward_hook: bool | None
    _forward_hooks: OrderedDict[int, Callable[..., Any]]
    _forward_hooks_with_kwargs: OrderedDict[int, bool]
    _forward_hooks_always_called: OrderedDict[int, bool]
    _forward_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _forward_pre_hooks_with_kwargs: OrderedDict[int, bool]
    _state_dict_hooks: OrderedDict[int, Callable[..., Any]]
    _state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _load_state_dict_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _load_state_dict_post_hooks: OrderedDict[int, Callable[..., Any]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self.call_super_init is False and kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'"
            )
        if self.call_super_init is False and args:
            raise TypeError(
                f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were given"
            )
        # object.__setattr__ directly: Module.__setattr__ would look for these very dicts.
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_is_full_backward_hook", None)
        for name in _HOOK_DICTS:
            setattr_(self, name, OrderedDict())
        setattr_(self, "_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward: Callable[..., Any] = _forward_unimplemented

    # ---- calling ------------------------------------------------------------------------
    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        # Fast path: a few dict truth tests, then forward.
        if not (
            self._forward_hooks
            or self._forward_pre_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
            or _global_forward_hooks
            or _global_forward_pre_hooks
            or _global_backward_hooks
            or _global_backward_pre_hooks
        ):
            return self.forward(*args, **kwargs)
        return call_with_hooks(self, args, kwargs)

    __call__: Callable[..., Any] = _call_impl

    # ---- registration -------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: module state that is not a parameter (``running_mean``).

        Args:
            name: attribute name of the buffer.
            tensor: the buffer, or ``None`` (a registered slot that is skipped).
            persistent: whether the buffer is part of ``state_dict``.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", self, name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                "(mininn Tensor or None required)"
            )
        self._buffers[name] = _after_registration_hooks(_global_buffer_registration_hooks, self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a ``None`` slot) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", self, name, self._parameters)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{typename(param)}' object to parameter '{name}' "
                "(mininn.nn.Parameter or None required)"
            )
        if param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                "the value in the forward() method."
            )
        self._parameters[name] = _after_registration_hooks(
            _global_parameter_registration_hooks, self, name, param
        )

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module (or a ``None`` slot) under ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f"module name can't contain \".\", got: {name}")
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = self._run_module_registration_hooks(name, module)

    def register_module(self, name: str, module: Module | None) -> None:
        """Alias for :meth:`add_module`."""
        self.add_module(name, module)

    def _run_module_registration_hooks(self, name: str, module: Module | None) -> Module | None:
        return _after_registration_hooks(_global_module_registration_hooks, self, name, module)

    # ---- dotted-path lookups ------------------------------------------------------------
    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""`` is ``self``)."""
        return _paths.get_submodule(self, target, Module)

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Replace (or, unless ``strict``, add) the submodule at dotted path ``target``."""
        _paths.set_submodule(self, target, module, strict, Module)

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path ``target`` (``"net.0.weight"``)."""
        return _paths.get_parameter(self, target)

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path ``target`` (``"bn.running_mean"``)."""
        return _paths.get_buffer(self, target)

    # Defined beside the state-dict code, which tells an override from these defaults.
    get_extra_state = _sd.get_extra_state
    set_extra_state = _sd.set_extra_state

    # ---- conversion ---------------------------------------------------------------------
    def _apply(self: T, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> T:
        """``fn`` on every parameter (in place: same Parameter object), grad and buffer."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with no_grad():
                param.data = fn(param)
                if param.grad is not None:
                    param.grad.data = fn(param.grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self: T, fn: Callable[[Module], None]) -> T:
        """``fn(m)`` for every submodule (children first) and then ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def cuda(self: T, device: int | Any = None) -> T:
        """Move every parameter and buffer to a CUDA device."""
        return self._apply(lambda t: t.cuda(device))

    def cpu(self: T) -> T:
        """Move every parameter and buffer to the CPU."""
        return self._apply(lambda t: t.cpu())

    def type(self: T, dst_type: Any) -> T:
        """Cast every parameter and buffer (integers included) to ``dst_type``."""
        dt = _dtype.as_dtype(dst_type)
        return self._apply(lambda t: t.to(dtype=dt))

    def _cast_floating(self: T, dt: _dtype.dtype | None) -> T:
        return self._apply(lambda t: t.to(dtype=dt) if t.is_floating_point() else t)

    def float(self: T) -> T:
        """Cast floating-point parameters and buffers to float32."""
        return self._cast_floating(_dtype.float32)

    def double(self: T) -> T:
        """Cast floating-point parameters and buffers to float64."""
        return self._cast_floating(_dtype.float64)

    def half(self: T) -> T:
        """Cast floating-point parameters and buffers to float16."""
        return self._cast_floating(_dtype.float16)

    def bfloat16(self: T) -> T:
        """Cast floating-point parameters and buffers to bfloat16 (needs ml_dtypes)."""
        return self._cast_floating(_dtype.bfloat16)

    def to_empty(self: T, *, device: Any, recurse: bool = True) -> T:
        """Replace every parameter and buffer by uninitialized memory on ``device``."""
        dev = as_device(device)
        xp = array_module(dev)
        return self._apply(lambda t: Tensor(xp.empty(t._data.shape, t._data.dtype)), recurse=recurse)

    def to(self: T, *args: Any, **kwargs: Any) -> T:
        """``to(device=None, dtype=None, non_blocking=False)``, ``to(dtype)`` or ``to(tensor)``.

        Casts only floating-point parameters and buffers; moves all of them.

        Raises:
            TypeError: ``dtype`` is not a floating-point dtype.
        """
        device, dtype = parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )

        def convert(t: Tensor) -> Tensor:
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None)

        return self._apply(convert)

    def share_memory(self: T) -> T:
        """A no-op (NumPy arrays are process-local); returns ``self``."""
        return self

    # ---- hooks --------------------------------------------------------------------------
    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """``hook(module, args) -> None | new_args`` before ``forward``.

        With ``with_kwargs``: ``hook(module, args, kwargs) -> None | (new_args, new_kwargs)``.
        ``prepend`` puts the hook before those already registered.
        """
        handle = add_hook(
            self._forward_pre_hooks, hook, prepend=prepend, extra=self._forward_pre_hooks_with_kwargs
        )
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """``hook(module, args, output) -> None | new_output`` after ``forward``.

        With ``with_kwargs``: ``hook(module, args, kwargs, output)``. ``always_call``
        runs the hook even when ``forward`` (or an earlier hook) raises.
        """
        extra = [self._forward_hooks_with_kwargs, self._forward_hooks_always_called]
        handle = add_hook(self._forward_hooks, hook, prepend=prepend, extra=extra)
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """``hook(module, grad_output) -> None | new_grad_output`` when output grads are ready."""
        return add_hook(self._backward_pre_hooks, hook, prepend=prepend)

    def register_full_backward_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """``hook(module, grad_input, grad_output) -> None | new_grad_input`` once input grads are ready."""
        if self._is_full_backward_hook is False:
            raise RuntimeError(MIXED_BACKWARD_HOOKS)
        self._is_full_backward_hook = True
        return add_hook(self._backward_hooks, hook, prepend=prepend)

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Deprecated: a hook on the output's ``grad_fn``; use :meth:`register_full_backward_hook`."""
        if self._is_full_backward_hook is True:
            raise RuntimeError(MIXED_BACKWARD_HOOKS)
        self._is_full_backward_hook = False
        return add_hook(self._backward_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` before this module's ``state_dict`` entries."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata) -> None``; edits in place."""
        hook._from_public_api = True  # type: ignore[attr-defined]
        return add_hook(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was "
                "previously registered via register_state_dict_post_hook"
            )
        return add_hook(self._state_dict_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads; may edit ``state_dict``."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(
        self, hook: Callable[..., Any], with_module: bool = False
    ) -> RemovableHandle:
        return add_hook(self._load_state_dict_pre_hooks, BoundHook(hook, self) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, incompatible_keys) -> None`` after loading; may edit the key lists."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    # ---- state_dict ---------------------------------------------------------------------
    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        """This module's own entries: parameters, persistent buffers, extra state."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not _sd.get_extra_state:
            destination[prefix + _sd.EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> Any:
        """Parameters and persistent buffers by dotted name, this module's first.

        Values are detached Tensors sharing memory with the module (``keep_vars``
        returns the Parameters themselves). The result carries ``_metadata``:
        ``{module_path: {"version": cls._version}}``.
        """
        return _sd.save_into(self, args, destination, prefix, keep_vars)

    # torch's override point for migrating old checkpoints; defined with the loading code.
    _load_from_state_dict = _sd.load_from_state_dict

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copy parameters and buffers from ``state_dict`` into this module and its descendants.

        Values are copied in place (same Parameter objects, so an optimizer built
        earlier keeps working), cast to each parameter's dtype and device.

        Args:
            state_dict: name -> Tensor (or NumPy array), e.g. from :meth:`state_dict`.
            strict: raise when keys are missing or unexpected (shape and type errors
                raise regardless, as in torch).
            assign: replace the tensors instead of copying into them (the
                checkpoint's dtype is kept; parameters keep ``requires_grad``).

        Returns:
            ``_IncompatibleKeys(missing_keys, unexpected_keys)``.

        Raises:
            TypeError: ``state_dict`` is not a mapping.
            RuntimeError: torch's ``Error(s) in loading state_dict for <Class>:`` report.
                No parameter or buffer has been changed when it is raised (only
                ``set_extra_state``, which runs when torch runs it, is not undone).
        """
        return _sd.load_into(self, state_dict, strict, assign)

    # ---- traversal ----------------------------------------------------------------------
    def _named_members(
        self,
        get_members_fn: Callable[[Module], Any],
        prefix: str = "",
        recurse: bool = True,
        remove_duplicate: bool = True,
    ) -> Iterator[tuple[str, Any]]:
        memo: set[Any] = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or v in memo:
                    continue
                if remove_duplicate:
                    memo.add(v)
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter once, in :meth:`named_parameters` order."""
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``(dotted_name, parameter)``: own parameters first, then each child's, depth first.

        A parameter shared by several modules appears once, under its first name,
        unless ``remove_duplicate=False``.
        """
        yield from self._named_members(
            lambda m: m._parameters.items(), prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate
        )

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer once (non-persistent ones included)."""
        for _name, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted_name, buffer)`` in the order of :meth:`named_parameters`."""
        yield from self._named_members(
            lambda m: m._buffers.items(), prefix=prefix, recurse=recurse, remove_duplicate=remove_duplicate
        )

    def children(self) -> Iterator[Module]:
        """Immediate children, each once."""
        for _name, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, child)`` for each distinct non-None child, in registration order."""
        memo: set[Module] = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        """``self`` and every descendant, pre-order."""
        for _name, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_modules(
        self, memo: set[Module] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """``(dotted_name, module)`` pre-order, ``self`` first as ``(prefix, self)``.

        A module met again is skipped with its whole subtree unless
        ``remove_duplicate=False``.
        """
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    # ---- modes and gradients ------------------------------------------------------------
    def train(self: T, mode: bool = True) -> T:
        """Set training mode on ``self`` and every descendant."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self: T) -> T:
        """``train(False)``. It does not disable autograd; use ``mininn.no_grad()`` too."""
        return self.train(False)

    def requires_grad_(self: T, requires_grad: bool = True) -> T:
        """Set ``requires_grad`` on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to ``None`` by default, else to zeros."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Accepted for compatibility; mininn has no compiler, so this does nothing."""

    # ---- printing -----------------------------------------------------------------------
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        """The text inside ``Name(...)``; override to show a layer's settings."""
        return ""

    def __repr__(self) -> str:
        extra_lines: list[str] = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = [
            "(" + key + "): " + addindent(repr(module), 2) for key, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"

    # ---- attribute protocol -------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        if "_parameters" in d:
            params = d["_parameters"]
            if name in params:
                return params[name]
        if "_buffers" in d:
            buffers = d["_buffers"]
            if name in buffers:
                return buffers[name]
        if "_modules" in d:
            modules = d["_modules"]
            if name in modules:
                return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(name, d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{typename(value)}' as parameter '{name}' "
                    "(mininn.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        else:
            self._setattr_module_or_buffer(name, value)

    def _setattr_module_or_buffer(self, name: str, value: Any) -> None:
        d = self.__dict__
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(name, d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = self._run_module_registration_hooks(name, value)
        elif modules is not None and name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{typename(value)}' as child module '{name}' "
                    "(mininn.nn.Module or None expected)"
                )
            modules[name] = self._run_module_registration_hooks(name, value)
        else:
            buffers = d.get("_buffers")
            if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                if value is not None and not isinstance(value, Tensor):
                    raise TypeError(
                        f"cannot assign '{typename(value)}' as buffer '{name}' "
                        "(mininn.nn.Buffer, mininn.Tensor or None expected)"
                    )
                if isinstance(value, Buffer):
                    persistent = value.persistent
                else:
                    persistent = name not in self._non_persistent_buffers_set
                self._register_buffer_compat(name, value, persistent)
            else:
                object.__setattr__(self, name, value)

    def _register_buffer_compat(self, name: str, value: Any, persistent: bool) -> None:
        """``register_buffer``, also for subclasses whose override lacks ``persistent``."""
        if getattr(self.register_buffer, "__func__", None) is Module.register_buffer:
            self.register_buffer(name, value, persistent)
        elif "persistent" in inspect.signature(self.register_buffer).parameters:
            self.register_buffer(name, value, persistent)
        elif not persistent:
            raise RuntimeError(
                "Registering a non-persistent buffer on a Module subclass that implements "
                "register_buffer() without the persistent argument is not allowed."
            )
        else:
            self.register_buffer(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = [
            *dir(self.__class__),
            *self.__dict__.keys(),
            *self._parameters.keys(),
            *self._modules.keys(),
            *self._buffers.keys(),
        ]
        return sorted(k for k in keys if not k[0].isdigit())

    # ---- pickling -----------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for key in _HOOK_DICTS:  # pickles from older versions may lack some
            if key not in self.__dict__:
                object.__setattr__(self, key, OrderedDict())
        if "_non_persistent_buffers_set" not in self.__dict__:
            object.__setattr__(self, "_non_persistent_buffers_set", set())
        if "_is_full_backward_hook" not in self.__dict__:
            object.__setattr__(self, "_is_full_backward_hook", None)
