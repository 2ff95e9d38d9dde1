"""``skip_init``: build a module without running its parameter initialisation."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from mininn.nn.modules.module import Module

__all__ = ["skip_init"]

T = TypeVar("T", bound=Module)


def skip_init(module_cls: type[T], *args: Any, **kwargs: Any) -> T:
    """``module_cls(*args, **kwargs)`` whose parameters and buffers hold uninitialized memory.

    mininn has no "meta" device to build on, so the module is built on ``device``
    and then emptied with ``to_empty``: the values are arbitrary either way.

    Raises:
        RuntimeError: ``module_cls`` is not a Module class or takes no ``device`` argument.
    """
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    return module_cls(*args, device=final_device, **kwargs).to_empty(device=final_device)
