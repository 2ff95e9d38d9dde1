"""The forward pre-hooks of torch's older reparametrizations, ``weight_norm`` and
``spectral_norm``: at most one hook object of a kind per parameter name, found,
refused twice and removed the same way.
"""

from __future__ import annotations

from typing import Any

from mininn.nn.modules.module import Module


def find_named_hook(module: Module, kind: type, name: str) -> tuple[int, Any] | None:
    """The key and hook of ``module``'s forward pre-hook of class ``kind`` on ``name``, or None."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return key, hook
    return None


def check_unhooked(module: Module, kind: type, name: str, what: str) -> None:
    """Refuse a second ``what`` hook (``"weight_norm"``, ``"spectral_norm"``) on ``name``."""
    if find_named_hook(module, kind, name) is not None:
        raise RuntimeError(f"Cannot register two {what} hooks on the same parameter {name}")


def remove_named_hook(module: Module, kind: type, name: str, what: str) -> None:
    """Undo the ``what`` hook on ``name`` (``hook.remove(module)``) and unregister it.

    Raises:
        ValueError: ``module`` has no such hook.
    """
    found = find_named_hook(module, kind, name)
    if found is None:
        raise ValueError(f"{what} of '{name}' not found in {module}")
    key, hook = found
    hook.remove(module)
    del module._forward_pre_hooks[key]
