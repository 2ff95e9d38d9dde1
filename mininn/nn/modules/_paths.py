"""Dotted-path lookups of ``Module``: ``get_submodule``, ``set_submodule``,
``get_parameter`` and ``get_buffer``, with torch's checks and messages (backticks
included)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mininn.nn.parameter import Parameter

if TYPE_CHECKING:
    from mininn.nn.modules.module import Module

__all__ = ["get_submodule", "set_submodule", "get_parameter", "get_buffer"]


def _module_cls() -> type[Module]:
    from mininn.nn.modules.module import Module  # module.py imports this file

    return Module


def _no_attribute(mod: Module, item: str) -> AttributeError:
    return AttributeError(mod._get_name() + " has no attribute `" + item + "`")


def get_submodule(root: Module, target: str) -> Module:
    if target == "":
        return root
    module_cls = _module_cls()
    mod: Any = root
    for item in target.split("."):
        if not hasattr(mod, item):
            raise _no_attribute(mod, item)
        mod = getattr(mod, item)
        if not isinstance(mod, module_cls):
            raise AttributeError("`" + item + "` is not an nn.Module")
    return mod


def set_submodule(root: Module, target: str, module: Module, strict: bool) -> None:
    if target == "":
        raise ValueError("Cannot set the submodule without a target name!")
    module_cls = _module_cls()
    atoms = target.split(".")
    if not isinstance(module, module_cls):
        raise ValueError("`" + "module" + f"` is not an nn.Module, found {type(module)}")
    parent = root if len(atoms) == 1 else get_submodule(root, ".".join(atoms[:-1]))
    if strict and not hasattr(parent, atoms[-1]):
        raise _no_attribute(parent, atoms[-1])
    if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), module_cls):
        raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
    setattr(parent, atoms[-1], module)


def get_parameter(root: Module, target: str) -> Parameter:
    module_path, _, param_name = target.rpartition(".")
    mod = get_submodule(root, module_path)
    if not hasattr(mod, param_name):
        raise _no_attribute(mod, param_name)
    param = getattr(mod, param_name)
    if not isinstance(param, Parameter):
        raise AttributeError("`" + param_name + "` is not an nn.Parameter")
    return param


def get_buffer(root: Module, target: str) -> Any:
    module_path, _, buffer_name = target.rpartition(".")
    mod = get_submodule(root, module_path)
    if not hasattr(mod, buffer_name):
        raise _no_attribute(mod, buffer_name)
    buffer = getattr(mod, buffer_name)
    if buffer_name not in mod._buffers:
        raise AttributeError("`" + buffer_name + "` is not a buffer")
    return buffer
