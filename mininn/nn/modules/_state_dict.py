"""Loading a state dict without ever leaving a module half-loaded.

``Module._load_from_state_dict`` keeps torch's signature and checks, but while
``Module.load_state_dict`` runs it *stages* each copy (a ``_LoadAction``)
instead of performing it. ``load_state_dict`` applies the staged actions only
once every module has been checked and no error was found, so a failed load
leaves every parameter and buffer exactly as it was (torch may stop
half-way). A ``_load_from_state_dict`` called directly, outside a load, copies
at once as in torch. ``set_extra_state`` is the exception: it is opaque user code
(it may even add submodules whose keys are loaded next), so it runs when torch
runs it and is not rolled back.
"""

from __future__ import annotations

import contextvars
import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from mininn._backend import to_device
from mininn.nn.parameter import Parameter
from mininn.tensor import Size, Tensor

if TYPE_CHECKING:
    from mininn.nn.modules.module import Module

__all__ = ["_IncompatibleKeys", "EXTRA_STATE_KEY_SUFFIX"]

EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: ``(missing_keys, unexpected_keys)``."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def is_tensor_like(value: Any) -> bool:
    """A checkpoint value we can load: a Tensor, or an array or scalar of NumPy (or CuPy)."""
    return isinstance(value, (Tensor, np.ndarray, np.generic)) or hasattr(value, "__cuda_array_interface__")


def raw(value: Any) -> Any:
    """The array behind a loadable value."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, np.generic):
        return np.asarray(value)
    return value


def shape_of(value: Any) -> Size:
    return Size(raw(value).shape)


class _LoadAction:
    """One staged change to a module; ``undo`` restores what ``apply`` replaced."""

    def apply(self, keep_undo: bool) -> None:
        raise NotImplementedError

    def undo(self) -> None:
        raise NotImplementedError


class CopyInto(_LoadAction):
    """``target.copy_(value)``: same object, values cast to its dtype on its device."""

    def __init__(self, target: Tensor, value: Any) -> None:
        arr = to_device(raw(value), target.device)
        if arr.shape != target._data.shape:  # the 0-d <- (1,) back-compat case
            arr = arr.reshape(target._data.shape)
        self.target = target
        self.array = arr.astype(target._data.dtype, copy=False)
        self.old: Any = None

    def apply(self, keep_undo: bool) -> None:
        data = self.target._data
        if keep_undo:
            self.old = data.copy()
        if getattr(data, "flags", None) is not None and not data.flags.writeable:
            self.target._data = self.array.copy()  # e.g. memory-mapped, read-only storage
        else:
            data[...] = self.array

    def undo(self) -> None:
        if self.old is not None:
            self.target._data[...] = self.old


class AssignAttr(_LoadAction):
    """``setattr(module, name, value)`` (``load_state_dict(assign=True)``)."""

    def __init__(self, module: Any, name: str, value: Any) -> None:
        self.module, self.name, self.value = module, name, value
        self.old: Any = None

    def apply(self, keep_undo: bool) -> None:
        self.old = getattr(self.module, self.name)
        setattr(self.module, self.name, self.value)

    def undo(self) -> None:
        setattr(self.module, self.name, self.old)


_pending: contextvars.ContextVar[list[_LoadAction] | None] = contextvars.ContextVar(
    "mininn_pending_load", default=None
)


def stage(action: _LoadAction) -> None:
    """Queue ``action`` for the running ``load_state_dict``, or apply it now."""
    pending = _pending.get()
    if pending is None:
        action.apply(keep_undo=False)
    else:
        pending.append(action)


class StagedLoad:
    """``with StagedLoad() as actions:`` collects the actions staged inside."""

    def __enter__(self) -> list[_LoadAction]:
        self.actions: list[_LoadAction] = []
        self._token = _pending.set(self.actions)
        return self.actions

    def __exit__(self, *exc: object) -> None:
        _pending.reset(self._token)


def apply_all(actions: list[_LoadAction], keep_undo: bool) -> None:
    done: list[_LoadAction] = []
    try:
        for action in actions:
            action.apply(keep_undo)
            done.append(action)
    except BaseException:
        undo_all(done)
        raise


def undo_all(actions: list[_LoadAction]) -> None:
    for action in reversed(actions):
        action.undo()


def error_message(
    class_name: str, missing: list[str], unexpected: list[str], error_msgs: list[str], strict: bool
) -> str | None:
    """torch's ``Error(s) in loading state_dict for <Class>:`` text, or None if nothing failed."""
    msgs = list(error_msgs)
    if strict:
        if unexpected:
            keys = ", ".join(f'"{k}"' for k in unexpected)
            msgs.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
        if missing:
            keys = ", ".join(f'"{k}"' for k in missing)
            msgs.insert(0, f"Missing key(s) in state_dict: {keys}. ")
    if not msgs:
        return None
    return "Error(s) in loading state_dict for {}:\n\t{}".format(class_name, "\n\t".join(msgs))


# ---- Module.state_dict -------------------------------------------------------------------


def save_into(
    module: Module, args: tuple[Any, ...], destination: Any, prefix: str, keep_vars: bool
) -> Any:
    """torch's ``Module.state_dict``: metadata, pre-hooks, own entries, children, post-hooks."""
    if args:
        warnings.warn(
            "Positional args are being deprecated, use kwargs instead. Refer to "
            "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
            " for details.",
            FutureWarning,
            stacklevel=3,
        )
        if destination is None:
            destination = args[0]
        if len(args) > 1 and prefix == "":
            prefix = args[1]
        if len(args) > 2 and keep_vars is False:
            keep_vars = args[2]
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()  # type: ignore[attr-defined]
    local_metadata = dict(version=module._version)
    if hasattr(destination, "_metadata"):
        destination._metadata[prefix[:-1]] = local_metadata
    for hook in tuple(module._state_dict_pre_hooks.values()):
        hook(module, prefix, keep_vars)
    module._save_to_state_dict(destination, prefix, keep_vars)
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
    for hook in tuple(module._state_dict_hooks.values()):
        hook_result = hook(module, destination, prefix, local_metadata)
        if not getattr(hook, "_from_public_api", False):
            if hook_result is not None:
                destination = hook_result
        elif hook_result is not None:
            raise RuntimeError("state_dict post-hook must return None")
    return destination


# ---- Module.get_extra_state, Module.set_extra_state ----------------------------------------
# Module's own methods, defined here so that saving and loading can tell an override from them.


def get_extra_state(self: Module) -> Any:
    """Override to save extra (picklable) state under ``<prefix>_extra_state``."""
    raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")


def set_extra_state(self: Module, state: Any) -> None:
    """Override to restore what :meth:`get_extra_state` returned."""
    raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")


# ---- Module._load_from_state_dict ----------------------------------------------------------


def load_from_state_dict(
    self: Module,
    state_dict: dict[str, Any],
    prefix: str,
    local_metadata: dict[str, Any],
    strict: bool,
    missing_keys: list[str],
    unexpected_keys: list[str],
    error_msgs: list[str],
) -> None:
    """Load this module's own entries (not its children's); override to migrate by version.

    Runs the load pre-hooks, then checks each parameter and persistent buffer
    against ``state_dict[prefix + name]``, appending to ``missing_keys``,
    ``unexpected_keys`` and ``error_msgs`` as torch does. Inside
    :meth:`load_state_dict` the copies are staged and applied only if the
    whole load succeeds; called directly, it copies at once.
    """
    for hook in tuple(self._load_state_dict_pre_hooks.values()):
        hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
    persistent_buffers = {
        k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set
    }
    local_state = {
        k: v
        for k, v in itertools.chain(self._parameters.items(), persistent_buffers.items())
        if v is not None
    }
    assign = local_metadata.get("assign_to_params_buffers", False)
    for name, param in local_state.items():
        key = prefix + name
        if key in state_dict:
            _stage_one(self, key, name, param, state_dict[key], assign, error_msgs)
        elif strict:
            missing_keys.append(key)
    _load_extra_state(self, state_dict, prefix, strict, missing_keys, unexpected_keys)
    if strict:
        extra_state_key = prefix + EXTRA_STATE_KEY_SUFFIX
        for key in state_dict:
            if key.startswith(prefix) and key != extra_state_key:
                input_name = key[len(prefix) :].split(".", 1)
                if len(input_name) > 1:
                    if input_name[0] not in self._modules:
                        unexpected_keys.append(key)
                elif input_name[0] not in local_state:
                    unexpected_keys.append(key)


def _stage_one(
    module: Module, key: str, name: str, param: Tensor, value: Any, assign: bool, error_msgs: list[str]
) -> None:
    if not is_tensor_like(value):
        error_msgs.append(
            f'While copying the parameter named "{key}", expected mininn.Tensor or Tensor-like '
            f"object from checkpoint but received {type(value)}"
        )
        return
    in_shape = shape_of(value)
    if len(param.shape) == 0 and len(in_shape) == 1 and in_shape[0] == 1:
        value = raw(value).reshape(())
        in_shape = shape_of(value)
    if in_shape != param.shape:
        error_msgs.append(
            f"size mismatch for {key}: copying a param with shape {in_shape} from checkpoint, "
            f"the shape in current model is {param.shape}."
        )
        return
    try:
        if assign:
            action: _LoadAction = AssignAttr(module, name, _assigned_value(param, value))
        else:
            action = CopyInto(param, value)
    except Exception as ex:
        error_msgs.append(
            f'While copying the parameter named "{key}", whose dimensions in the model are '
            f"{param.size()} and whose dimensions in the checkpoint are {in_shape}, an "
            f"exception occurred : {ex.args}."
        )
        return
    stage(action)


def _assigned_value(param: Tensor, value: Any) -> Tensor:
    """What ``assign=True`` stores: the checkpoint tensor, as a Parameter if ``param`` is one."""
    tensor = value if isinstance(value, Tensor) else Tensor(value)
    if isinstance(param, Parameter):
        if isinstance(tensor, Parameter):
            tensor.requires_grad_(param.requires_grad)
            return tensor
        return Parameter(tensor, requires_grad=param.requires_grad)
    return tensor


def _load_extra_state(
    module: Module,
    state_dict: dict[str, Any],
    prefix: str,
    strict: bool,
    missing_keys: list[str],
    unexpected_keys: list[str],
) -> None:
    extra_state_key = prefix + EXTRA_STATE_KEY_SUFFIX
    if type(module).set_extra_state is not set_extra_state:
        if extra_state_key in state_dict:
            # Opaque user code that may even add submodules (as in torch, later keys can
            # depend on it), so it runs now rather than staged: extra state is the one
            # part of a failed load that is not rolled back.
            module.set_extra_state(state_dict[extra_state_key])
        elif strict:
            missing_keys.append(extra_state_key)
    elif strict and extra_state_key in state_dict:
        unexpected_keys.append(extra_state_key)


# ---- Module.load_state_dict --------------------------------------------------------------


def load_into(
    module: Module, state_dict: Mapping[str, Any], strict: bool, assign: bool
) -> _IncompatibleKeys:
    """torch's ``load_state_dict``, applying the staged copies only if nothing failed."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing: list[str] = []
    unexpected: list[str] = []
    error_msgs: list[str] = []
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)
    if metadata is not None:
        state_dict._metadata = metadata  # type: ignore[attr-defined]
    post_order: list[Module] = []
    with StagedLoad() as actions:
        _load_tree(module, state_dict, "", metadata, assign, (missing, unexpected, error_msgs), post_order)
    name = module.__class__.__name__
    message = error_message(name, missing, unexpected, error_msgs, strict)
    has_post_hooks = any(m._load_state_dict_post_hooks for m in post_order)
    if error_msgs or (message is not None and not has_post_hooks):
        raise RuntimeError(message)
    # Post-hooks may still turn this into a failure (strict keys, a bad return): keep an undo.
    apply_all(actions, keep_undo=has_post_hooks)
    try:
        _run_load_post_hooks(post_order, _IncompatibleKeys(missing, unexpected))
        message = error_message(name, missing, unexpected, error_msgs, strict)
        if message is not None:
            raise RuntimeError(message)
    except BaseException:
        undo_all(actions)
        raise
    return _IncompatibleKeys(missing, unexpected)


def _load_tree(
    module: Module,
    local_state_dict: dict[str, Any],
    prefix: str,
    metadata: Any,
    assign: bool,
    lists: tuple[list[str], list[str], list[str]],
    post_order: list[Module],
) -> None:
    """torch's recursive ``load``: each child sees only the keys under its prefix."""
    local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
    if assign:
        local_metadata["assign_to_params_buffers"] = assign
    module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, *lists)
    for name, child in module._modules.items():
        if child is not None:
            child_prefix = prefix + name + "."
            child_sd = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
            _load_tree(child, child_sd, child_prefix, metadata, assign, lists, post_order)
    post_order.append(module)


def _run_load_post_hooks(post_order: list[Module], incompatible: _IncompatibleKeys) -> None:
    """Each module's post-hooks, children before parents as in torch."""
    for module in post_order:
        for hook in tuple(module._load_state_dict_post_hooks.values()):
            if hook(module, incompatible) is not None:
                raise AssertionError(
                    "Hooks registered with ``register_load_state_dict_post_hook`` are not expected "
                    "to return new values, if incompatible_keys need to be modified, it should be "
                    "done inplace."
                )
