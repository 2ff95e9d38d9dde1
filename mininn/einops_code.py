"""einops as model code loaded by :func:`mininn.torch_alias.load_code` sees it.

Its ``import einops`` comes here (:func:`import_for_loaded_code`): einops' own functions,
which take mininn tensors through :class:`mininn.einops.MininnBackend`, and
``einops.layers.torch`` answered by :mod:`mininn.nn.einops_layers`, so real torch is
never imported.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import einops

import mininn.einops  # noqa: F401 - einops' functions take mininn tensors once it is defined
import mininn.nn.einops_layers

__all__ = ["allow_ops_in_compiled_graph", "import_for_loaded_code"]


class _EinopsView(ModuleType):
    """A view of one einops package whose ``torch`` child (``einops.layers.torch``) is mininn's layers."""

    def __init__(self, target: ModuleType, children: dict[str, ModuleType]) -> None:
        super().__init__(target.__name__, target.__doc__)
        self.__dict__["_target"] = target
        self.__dict__.update(children)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.__dict__["_target"], attr)

    def __dir__(self) -> list[str]:
        return sorted({*dir(self.__dict__["_target"]), *self.__dict__})

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (einops, with mininn's einops.layers.torch)>"


def allow_ops_in_compiled_graph() -> None:
    """einops' call registering its functions with ``torch.compile``: mininn runs eagerly, nothing to do."""


def _torch_specific() -> ModuleType:
    """``einops._torch_specific`` for loaded code: its public call, without importing real torch."""
    module = ModuleType("einops._torch_specific", "einops' torch.compile hook, as mininn answers it.")
    module.allow_ops_in_compiled_graph = allow_ops_in_compiled_graph  # type: ignore[attr-defined]
    return module


_VIEWS: dict[str, ModuleType] = {}
_LOCK = threading.Lock()


def _views() -> dict[str, ModuleType]:
    with _LOCK:
        if not _VIEWS:
            layers = importlib.import_module("einops.layers")
            torch_layers = mininn.nn.einops_layers
            _VIEWS["einops.layers.torch"] = torch_layers
            _VIEWS["einops._torch_specific"] = _torch_specific()
            _VIEWS["einops.layers"] = _EinopsView(layers, {"torch": torch_layers})
            _VIEWS["einops"] = _EinopsView(einops, {"layers": _VIEWS["einops.layers"],
                                                    "_torch_specific": _VIEWS["einops._torch_specific"]})
        return _VIEWS


def import_for_loaded_code(name: str, fromlist: Sequence[str] | None) -> ModuleType:
    """What ``__import__(name, fromlist=fromlist)`` gives loaded model code for an ``einops`` name.

    ``einops.layers.torch`` is :mod:`mininn.nn.einops_layers` (real torch is never
    imported), ``einops._torch_specific`` holds only ``allow_ops_in_compiled_graph``
    (a no-op), ``einops`` and ``einops.layers`` are views of einops' own modules
    that lead there, and every other name is einops' own module.
    """
    views = _views()
    if name not in views:
        module = importlib.import_module(name)
        return module if fromlist else views["einops"]
    return views[name] if fromlist else views["einops"]
