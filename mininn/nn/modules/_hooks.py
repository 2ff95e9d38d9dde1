"""Module hooks: the global hook registries, ``Module.__call__``'s hook path and
the machinery behind full backward hooks.

``call_with_hooks`` is torch 2.13's ``Module._call_impl`` minus tracing and
compilation: global then local forward pre-hooks, optional backward-hook
wrapping of the tensor arguments, ``forward``, global then local forward hooks,
wrapping of the output, and the ``always_call`` hooks on the error path.

Full backward hooks work like torch's ``BackwardHook``: the tensor arguments
and the tensor outputs of ``forward`` each pass through one multi-input,
multi-output identity node (``BackwardHookFunction``). The output-side node
sees ``grad_output`` first and runs the backward pre-hooks (which may replace
it); the input-side node then sees ``grad_input`` and runs the full backward
hooks (which may replace it). As in torch 2.13: positions that hold no tensor
are ``None``; in ``grad_output`` so are outputs that got no gradient; in
``grad_input`` a tensor argument that got no gradient (unused, or not
requiring grad) shows zeros, because torch materializes them.
"""

from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from mininn._backend import array_module, device_of
from mininn.autograd.grad_mode import _state
from mininn.autograd.graph import ArrayFunction, Node, _edge
from mininn.tensor import Tensor
from mininn.utils.hooks import RemovableHandle

if TYPE_CHECKING:
    from mininn.nn.modules.module import Module

__all__ = [
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_pre_hook",
    "register_module_full_backward_hook",
    "register_module_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]

# Global hooks: they fire for every module, before the module's own hooks.
_global_buffer_registration_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_module_registration_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_parameter_registration_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_backward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_forward_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_forward_hooks_always_called: OrderedDict[int, bool] = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict[int, bool] = OrderedDict()


class _GlobalFlags:
    is_full_backward_hook: bool | None = None


_global_flags = _GlobalFlags()

_MIXED_GLOBAL = (
    "Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
    "Please use only one of them."
)


MIXED_BACKWARD_HOOKS = (
    "Cannot use both regular backward hooks and full backward hooks on a single Module. "
    "Please use only one of them."
)


def add_hook(
    hooks: OrderedDict[int, Any], hook: Callable[..., Any], *, prepend: bool = False, extra: Any = None
) -> RemovableHandle:
    """Store ``hook`` under a fresh handle id (first if ``prepend``); ``extra`` dicts are
    cleaned on removal too."""
    handle = RemovableHandle(hooks, extra_dict=extra)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _register(hooks: OrderedDict[int, Any], hook: Callable[..., Any], extra: Any = None) -> RemovableHandle:
    return add_hook(hooks, hook, extra=extra)


def register_module_buffer_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, name, buffer) -> None | new_buffer`` runs in every ``register_buffer``."""
    return _register(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, name, submodule) -> None | new_submodule`` runs whenever a child is set."""
    return _register(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, name, param) -> None | new_param`` runs in every ``register_parameter``."""
    return _register(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, args) -> None | new_args`` before every module's ``forward``.

    Global hooks are meant for debugging and profiling; they run before local ones.
    """
    return _register(_global_forward_pre_hooks, hook)


def register_module_forward_hook(
    hook: Callable[..., Any], *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
    ``with_kwargs``) after every module's ``forward``; a non-None result replaces the output."""
    handle = _register(
        _global_forward_hooks,
        hook,
        [_global_forward_hooks_always_called, _global_forward_hooks_with_kwargs],
    )
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Deprecated non-full global backward hook (torch keeps it for compatibility)."""
    if _global_flags.is_full_backward_hook is True:
        raise RuntimeError(_MIXED_GLOBAL)
    _global_flags.is_full_backward_hook = False
    return _register(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, grad_output) -> None | new_grad_output`` for every module."""
    return _register(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """``hook(module, grad_input, grad_output) -> None | new_grad_input`` for every module."""
    if _global_flags.is_full_backward_hook is False:
        raise RuntimeError(_MIXED_GLOBAL)
    _global_flags.is_full_backward_hook = True
    return _register(_global_backward_hooks, hook)


class BoundHook:
    """A load pre-hook called as ``hook(module, *args)``; holds the module weakly like torch."""

    def __init__(self, hook: Callable[..., Any], module: Module) -> None:
        self.hook = hook
        self.module = weakref.ref(module)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        return {"hook": self.hook, "module": self.module()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if state["module"] is None:
            raise RuntimeError("You are trying to revive the hook of a dead Module!")
        self.hook = state["hook"]
        self.module = weakref.ref(state["module"])


# ---- the forward path with hooks --------------------------------------------------------


def call_with_hooks(module: Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``module(*args, **kwargs)`` when any hook is registered (torch's ``_call_impl``)."""
    called_always: set[int] = set()
    state: dict[str, Any] = {"args": args, "kwargs": kwargs, "result": None}
    try:
        return _run_hooked_forward(module, state, called_always)
    except Exception:
        _run_always_called_hooks(module, state, called_always)
        raise


def _run_hooked_forward(module: Module, state: dict[str, Any], called_always: set[int]) -> Any:
    full_hooks: list[Callable[..., Any]] = []
    non_full_hooks: list[Callable[..., Any]] = []
    backward_pre_hooks: list[Callable[..., Any]] = []
    if module._backward_pre_hooks or _global_backward_pre_hooks:
        backward_pre_hooks = [*_global_backward_pre_hooks.values(), *module._backward_pre_hooks.values()]
    if module._backward_hooks or _global_backward_hooks:
        full_hooks, non_full_hooks = _split_backward_hooks(module)
    if _global_forward_pre_hooks or module._forward_pre_hooks:
        _run_forward_pre_hooks(module, state)
    bw_hook = None
    if full_hooks or backward_pre_hooks:
        bw_hook = BackwardHook(module, full_hooks, backward_pre_hooks)
        state["args"] = bw_hook.setup_input_hook(state["args"])
    state["result"] = module.forward(*state["args"], **state["kwargs"])
    if _global_forward_hooks or module._forward_hooks:
        _run_forward_hooks(module, state, called_always)
    if bw_hook is not None:
        result = state["result"]
        if not isinstance(result, (Tensor, tuple)):
            warnings.warn(
                "For backward hooks to be called, module output should be a Tensor or a tuple of "
                f"Tensors but received {type(result)}",
                stacklevel=4,
            )
        state["result"] = bw_hook.setup_output_hook(result)
    if non_full_hooks:
        _attach_non_full_backward_hooks(module, state["args"], state["result"], non_full_hooks)
    return state["result"]


def _split_backward_hooks(module: Module) -> tuple[list[Callable[..., Any]], list[Callable[..., Any]]]:
    full: list[Callable[..., Any]] = []
    non_full: list[Callable[..., Any]] = []
    if _global_flags.is_full_backward_hook is True:
        full += _global_backward_hooks.values()
    if module._is_full_backward_hook is True:
        full += module._backward_hooks.values()
    if _global_flags.is_full_backward_hook is False:
        non_full += _global_backward_hooks.values()
    if module._is_full_backward_hook is False:
        non_full += module._backward_hooks.values()
    return full, non_full


def _run_forward_pre_hooks(module: Module, state: dict[str, Any]) -> None:
    with_kwargs = module._forward_pre_hooks_with_kwargs
    for hook_id, hook in (*_global_forward_pre_hooks.items(), *module._forward_pre_hooks.items()):
        if hook_id in with_kwargs:
            out = hook(module, state["args"], state["kwargs"])
            if out is not None:
                if isinstance(out, tuple) and len(out) == 2:
                    state["args"], state["kwargs"] = out
                else:
                    raise RuntimeError(
                        "forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {out}."
                    )
        else:
            out = hook(module, state["args"])
            if out is not None:
                state["args"] = out if isinstance(out, tuple) else (out,)


def _run_forward_hooks(module: Module, state: dict[str, Any], called_always: set[int]) -> None:
    local_always = module._forward_hooks_always_called
    local_kwargs = module._forward_hooks_with_kwargs
    for hook_id, hook in (*_global_forward_hooks.items(), *module._forward_hooks.items()):
        if hook_id in local_always or hook_id in _global_forward_hooks_always_called:
            called_always.add(hook_id)
        if hook_id in local_kwargs or hook_id in _global_forward_hooks_with_kwargs:
            out = hook(module, state["args"], state["kwargs"], state["result"])
        else:
            out = hook(module, state["args"], state["result"])
        if out is not None:
            state["result"] = out


def _run_always_called_hooks(module: Module, state: dict[str, Any], called_always: set[int]) -> None:
    """After an error: the ``always_call`` hooks that have not run yet; their errors become warnings."""
    args, kwargs = state["args"], state["kwargs"]
    scopes = (
        ("global module", _global_forward_hooks, _global_forward_hooks_always_called, {}),
        ("module", module._forward_hooks, module._forward_hooks_always_called,
         module._forward_hooks_with_kwargs),
    )
    for scope, hooks, always_called, with_kwargs in scopes:
        for hook_id, hook in tuple(hooks.items()):
            if hook_id not in always_called or hook_id in called_always:
                continue
            try:
                if hook_id in with_kwargs:
                    out = hook(module, args, kwargs, state["result"])
                else:
                    out = hook(module, args, state["result"])
                if out is not None:
                    state["result"] = out
            except Exception as e:
                warnings.warn(
                    f"{scope} forward hook with ``always_call=True`` raised an exception that was "
                    f"silenced as another error was raised in forward: {e}",
                    stacklevel=4,
                )


def _attach_non_full_backward_hooks(
    module: Module, args: tuple[Any, ...], result: Any, hooks: list[Callable[..., Any]]
) -> None:
    """Deprecated ``register_backward_hook``: a post-hook on the output's ``grad_fn``."""
    var = result
    while not isinstance(var, Tensor):
        if isinstance(var, dict):
            var = next(v for v in var.values() if isinstance(v, Tensor))
        else:
            var = var[0]
    grad_fn = var.grad_fn
    if grad_fn is None:
        return
    for hook in hooks:
        grad_fn.register_hook(_bind_non_full_hook(hook, module))
    _maybe_warn_non_full_backward_hook(args, result, grad_fn)


def _bind_non_full_hook(hook: Callable[..., Any], module: Module) -> Callable[..., Any]:
    name = getattr(hook, "__name__", repr(hook))

    def wrapped(grad_input: tuple[Any, ...], grad_output: tuple[Any, ...]) -> Any:
        out = hook(module, grad_input, grad_output)
        if out is None:
            return None
        if not isinstance(out, tuple):
            raise TypeError(f"expected tuple, but hook returned '{type(out).__name__}'")
        if len(out) != len(grad_input):
            raise RuntimeError(
                f"hook '{name}' has returned an incorrect number of values "
                f"(got {len(out)}, but expected {len(grad_input)})"
            )
        return out

    return wrapped


_NON_FULL_TAIL = (
    " is deprecated and will be removed in future versions. This hook will be missing some "
)


def _warn_non_full(what: str, missing: str) -> None:
    warnings.warn(
        f"Using {what}{_NON_FULL_TAIL}{missing}. Please use register_full_backward_hook to get the "
        "documented behavior.",
        FutureWarning,
        stacklevel=7,
    )


def _as_tensor_tuple(value: Any) -> tuple[Tensor, ...] | None:
    """A Tensor as a 1-tuple, a tuple of Tensors as it is, anything else None."""
    if isinstance(value, Tensor):
        return (value,)
    if isinstance(value, tuple) and all(isinstance(v, Tensor) for v in value):
        return value
    return None


def _maybe_warn_non_full_backward_hook(inputs: Any, result: Any, grad_fn: Node) -> None:
    """torch's warnings for the cases where a non-full hook misses gradients."""
    result = _as_tensor_tuple(result)
    if result is None:
        _warn_non_full(
            "non-full backward hooks on a Module that does not return a single Tensor or a tuple "
            "of Tensors",
            "of the grad_output",
        )
        return
    inputs = _as_tensor_tuple(inputs)
    if inputs is None:
        _warn_non_full(
            "non-full backward hooks on a Module that does not take as input a single Tensor or a "
            "tuple of Tensors",
            "of the grad_input",
        )
        return
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warnings.warn(
            "Using a non-full backward hook when outputs are nested in python data structure"
            f"{_NON_FULL_TAIL}grad_output.",
            FutureWarning,
            stacklevel=6,
        )
    elif len(out_grad_fn) > 1:
        _warn_non_full("a non-full backward hook when outputs are generated by different autograd Nodes",
                       "grad_output")
    else:
        inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
        next_functions = {n[0] for n in grad_fn.next_functions}
        if inputs_grad_fn != next_functions:
            _warn_non_full("a non-full backward hook when the forward contains multiple autograd Nodes",
                           "grad_input")


# ---- full backward hooks -------------------------------------------------------------------

# Multi-output nodes get zeros for outputs that received no gradient; an empty
# structured dtype marks those zeros so the hooks see ``None`` as in torch.
_NO_GRAD = np.dtype([])


class BackwardHookFunction(ArrayFunction):
    """Names the identity nodes (``grad_fn.name()``); their backward is ``_HookNode.apply``."""


class _HookNode(Node):
    """An identity node whose backward runs ``callback(grads) -> grads`` (arrays or None)."""

    __slots__ = ("callback",)

    def apply(self, grads: list[Any]) -> tuple[Any, ...]:
        return tuple(self.callback([None if g is None or g.dtype == _NO_GRAD else g for g in grads]))


def _zeros_like(array: Any) -> Any:
    return array_module(device_of(array)).zeros(array.shape, array.dtype)


def _to_tensors(grads: list[Any] | tuple[Any, ...]) -> tuple[Tensor | None, ...]:
    return tuple(None if g is None else Tensor(g) for g in grads)


def _to_arrays(grads: tuple[Any, ...]) -> list[Any]:
    return [g._data if isinstance(g, Tensor) else g for g in grads]


def _wrap_in_identity(
    tensors: list[Tensor], callback: Callable[[list[Any]], list[Any]]
) -> list[Tensor]:
    """New Tensors sharing each input's data, all produced by one identity node."""
    node = _HookNode(
        BackwardHookFunction,
        None,
        tuple(_edge(t) for t in tensors),
        (0,) * len(tensors),
        tuple((t._data.shape, _NO_GRAD) for t in tensors),
    )
    node.callback = callback
    out = []
    for i, t in enumerate(tensors):
        new = Tensor(t._data)
        if t.requires_grad:  # torch marks the others non-differentiable
            new.grad_fn = node
            new._output_nr = i
        out.append(new)
    return out


class BackwardHook:
    """One forward call's full backward hooks (torch's ``torch.utils.hooks.BackwardHook``)."""

    def __init__(
        self,
        module: Module,
        user_hooks: list[Callable[..., Any]],
        user_pre_hooks: list[Callable[..., Any]],
    ) -> None:
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs: tuple[Any, ...] | None = None
        self.n_outputs = -1
        self.output_tensors_index: list[int] | None = None
        self.n_inputs = -1
        self.input_tensors_index: list[int] | None = None
        self._input_arrays: list[Any] = []

    @staticmethod
    def _pack_with_none(indices: list[int], values: Any, size: int) -> tuple[Any, ...]:
        res: list[Any] = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    def _apply_on_tensors(
        self, callback: Callable[[list[Any]], list[Any]], args: tuple[Any, ...]
    ) -> tuple[tuple[Any, ...], list[int] | None]:
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (_state.enabled and any(t.requires_grad for t in tensors)):
            return args, None
        wrapped = _wrap_in_identity(tensors, callback)
        out = list(args)
        for i, t in zip(idx, wrapped):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    def setup_input_hook(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        res, idx = self._apply_on_tensors(self._on_grad_input, args)
        if idx is not None:
            self._input_arrays = [args[i]._data for i in idx]
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def setup_output_hook(self, result: Any) -> Any:
        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, idx = self._apply_on_tensors(self._on_grad_output, args)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]

    def _on_grad_output(self, grads: list[Any]) -> list[Any]:
        assert self.output_tensors_index is not None
        self.grad_outputs = self._pack_with_none(
            self.output_tensors_index, _to_tensors(grads), self.n_outputs
        )
        for pre_hook in self.user_pre_hooks:
            new = pre_hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, "
                    f"got {len(new)}, but expected {len(self.grad_outputs)}"
                )
            self.grad_outputs = new
        local = self.grad_outputs
        if self.input_tensors_index is None:
            self._fire_without_input_grads()
        return _to_arrays(tuple(local[i] for i in self.output_tensors_index))

    def _fire_without_input_grads(self) -> None:
        warnings.warn(
            "Full backward hook is firing when gradients are computed with respect to module "
            "outputs since no inputs require gradients. See "
            "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
            "#torch.nn.Module.register_full_backward_hook for more details.",
            stacklevel=6,
        )
        grad_inputs = self._pack_with_none([], [], self.n_inputs)
        for hook in self.user_hooks:
            res = hook(self.module, grad_inputs, self.grad_outputs)
            if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                raise RuntimeError(
                    "Backward hook for Modules where no input requires gradient should always "
                    "return None or None for all gradients."
                )
        self.grad_outputs = None

    def _on_grad_input(self, grads: list[Any]) -> list[Any]:
        if self.grad_outputs is None:
            return grads
        assert self.input_tensors_index is not None
        grads = [
            _zeros_like(self._input_arrays[i]) if g is None else g for i, g in enumerate(grads)
        ]
        res = self._pack_with_none(self.input_tensors_index, _to_tensors(grads), self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, "
                    f"got {len(out)}, but expected {len(res)}"
                )
            res = out
        self.grad_outputs = None
        return _to_arrays(tuple(res[i] for i in self.input_tensors_index))
