"""Loading a state dict without ever leaving a module half-loaded.

``Module._load_from_state_dict`` keeps torch's signature and checks, but while
``Module.load_state_dict`` runs it *stages* each copy (a ``_LoadAction``)
instead of performing it. ``load_state_dict`` applies the staged actions only
once every module has been checked and no error was found, so a failed load
leaves every parameter and buffer exactly as it was (torch may stop
half-way). A ``_load_from_state_dict`` called directly, outside a load, copies
at once as in torch.
"""

from __future__ import annotations

import contextvars
from collections import namedtuple
from typing import Any

import numpy as np

from mininn._backend import to_device
from mininn.tensor import Size, Tensor

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
    """A checkpoint value we can load: a Tensor or an array (NumPy or CuPy)."""
    return isinstance(value, (Tensor, np.ndarray)) or hasattr(value, "__cuda_array_interface__")


def shape_of(value: Any) -> Size:
    return Size(value._data.shape if isinstance(value, Tensor) else value.shape)


def raw(value: Any) -> Any:
    return value._data if isinstance(value, Tensor) else value


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


class SetExtraState(_LoadAction):
    """``module.set_extra_state(state)``; not undoable (the state is opaque)."""

    def __init__(self, module: Any, state: Any) -> None:
        self.module, self.state = module, state

    def apply(self, keep_undo: bool) -> None:
        self.module.set_extra_state(self.state)

    def undo(self) -> None:
        pass


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
