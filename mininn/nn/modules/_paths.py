"""Dotted-path lookups of ``Module``: ``get_submodule``, ``set_submodule``,
``get_parameter`` and ``get_buffer``, with torch's checks and messages (backticks
included).

The helpers sit below ``module.py``: ``Module`` passes itself in as
``module_type`` where a value must be checked to be a module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mininn.nn.parameter import Parameter

if TYPE_CHECKING:
    from mininn.nn.modules.module import Module

__all__ = ["get_submodule", "set_submodule", "get_parameter", "get_buffer"]


def _no_attribute(mod: Module, item: str) -> AttributeError:
    return AttributeError(mod._get_name() + " has no attribute `" + item + "`")


def get_submodule(root: Module, target: str, module_type: type[Module]) -> Module:
    if target == "":
        return root
    mod: Any = root
    for item in target.split("."):
        if not hasattr(mod, item):
            raise _no_attribute(mod, item)
        mod = getattr(mod, item)
        if not isinstance(mod, module_type):
            raise AttributeError("`" + item + "` is not an nn.Module")
    return mod


def set_submodule(root: Module, target: str, module: Module, strict: bool, module_type: type[Module]) -> None:
    if target == "":
        raise ValueError("Cannot set the submodule without a target name!")
    atoms = target.split(".")
    if not isinstance(module, module_type):
        raise ValueError("`" + "module" + f"` is not an nn.Module, found {type(module)}")
    parent = root if len(atoms) == 1 else root.get_submodule(".".join(atoms[:-1]))
    if strict and not hasattr(parent, atoms[-1]):
        raise _no_attribute(parent, atoms[-1])
    if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), module_type):
        raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
    setattr(parent, atoms[-1], module)


def _leaf(root: Module, target: str) -> tuple[Module, str, Any]:
    """The module that ``target``'s last name is looked up on, that name, and its value."""
    module_path, _, name = target.rpartition(".")
    mod = root.get_submodule(module_path)
    if not hasattr(mod, name):
        raise _no_attribute(mod, name)
    return mod, name, getattr(mod, name)


def get_parameter(root: Module, target: str) -> Parameter:
    _, name, param = _leaf(root, target)
    if not isinstance(param, Parameter):
        raise AttributeError("`" + name + "` is not an nn.Parameter")
    return param


def get_buffer(root: Module, target: str) -> Any:
    mod, name, buffer = _leaf(root, target)
    if name not in mod._buffers:
        raise AttributeError("`" + name + "` is not a buffer")
    return buffer
