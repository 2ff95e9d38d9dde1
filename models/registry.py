"""The architecture registry: names -> how to build, describe and serve a model.

Each model file registers its architectures at import time with :func:`register`;
``models/__init__.py`` imports them all, so ``available()`` lists every bundled name.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from models.config import make_config
from models.errors import ArchitectureError
from models.processing import Processor
from models.signature import Signature

if TYPE_CHECKING:
    from mininn.nn import Module

__all__ = ["Architecture", "available", "create", "get_architecture", "register", "unregister"]

ProcessorFactory = Callable[[Any, Signature, "Path | None"], Processor]


@dataclass(frozen=True)
class Architecture:
    """Everything the service needs to know about one architecture.

    Attributes:
        name: The registry name, e.g. ``"resnet18"``.
        config_cls: A frozen dataclass whose fields (with defaults) are the config keys.
        build: ``build(config) -> Module``: a fresh, randomly initialised module.
        signature: ``signature(config) -> Signature``: the V2 inputs and outputs.
        processor: ``processor(config, signature, resource_dir) -> Processor``: turns V2
            inputs into module arguments and module outputs into V2 outputs.
        batchable: Whether requests may be stacked along the first dimension.
        description: One line for listings.
        generator: ``generator(servable) -> TextGenerator`` for text-generation architectures
            (``llama``); None for the others.
    """

    name: str
    config_cls: type
    build: Callable[[Any], Module]
    signature: Callable[[Any], Signature]
    processor: ProcessorFactory = Processor
    batchable: bool = True
    description: str = ""
    generator: Callable[[Any], Any] | None = None

    def make_config(self, values: Mapping[str, Any] | Any = None) -> Any:
        """The validated config dataclass for ``values`` (a mapping or a config instance).

        Raises:
            ArchitectureError: A bad key or value; the message lists the accepted keys.
        """
        return make_config(self.name, self.config_cls, values)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready listing: config keys with their types and defaults, and the
        inputs and outputs for the default config (None when it needs keys without defaults)."""
        keys = []
        for f in dataclasses.fields(self.config_cls):
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            keys.append({"key": f.name, "type": _type_name(f.type), "default": _jsonable(default),
                         "required": not has_default})
        try:
            signature = self.signature(self.make_config({}))
            inputs = [spec.to_dict() for spec in signature.inputs]
            outputs = [spec.to_dict() for spec in signature.outputs]
        except (ArchitectureError, TypeError, ValueError):
            inputs = outputs = None
        return {"name": self.name, "description": self.description, "batchable": self.batchable,
                "config": keys, "inputs": inputs, "outputs": outputs}

    def create(self, values: Mapping[str, Any] | Any = None) -> Module:
        """A freshly initialised module for the config ``values``."""
        return self.build(self.make_config(values))


def _type_name(annotation: Any) -> str:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    return text.replace("typing.", "")


def _jsonable(value: Any) -> Any:
    return [_jsonable(v) for v in value] if isinstance(value, tuple) else value


_registry: dict[str, Architecture] = {}
_lock = threading.Lock()


@overload
def register(target: Architecture, *, replace: bool = False) -> Architecture: ...


@overload
def register(
    target: str, *, replace: bool = False, **fields: Any
) -> Callable[[Callable[[Any], Module]], Callable[[Any], Module]]: ...


def register(target: Architecture | str, *, replace: bool = False, **fields: Any) -> Any:
    """Add an architecture to the registry.

    Either ``register(Architecture(...))``, or as a decorator on the build callable
    (often the module class itself)::

        @register("tiny", config_cls=TinyConfig, signature=tiny_signature)
        class Tiny(nn.Module):
            def __init__(self, config: TinyConfig) -> None: ...

    Args:
        target: An :class:`Architecture`, or the name for the decorated build callable.
        replace: Replace an architecture already registered under the name.
        **fields: The other :class:`Architecture` fields when ``target`` is a name.

    Raises:
        ArchitectureError: The name is taken and ``replace`` is false.
    """
    if isinstance(target, Architecture):
        return _add(target, replace)

    def decorator(build: Callable[[Any], Module]) -> Callable[[Any], Module]:
        _add(Architecture(name=target, build=build, **fields), replace)
        return build

    return decorator


def _add(architecture: Architecture, replace: bool) -> Architecture:
    with _lock:
        if architecture.name in _registry and not replace:
            raise ArchitectureError(f"architecture {architecture.name!r} is already registered")
        _registry[architecture.name] = architecture
    return architecture


def unregister(name: str) -> None:
    """Remove ``name`` from the registry (for tests that register their own)."""
    with _lock:
        _registry.pop(name, None)


def available() -> list[str]:
    """The registered architecture names, sorted."""
    return sorted(_registry)


def get_architecture(name: str) -> Architecture:
    """The architecture registered as ``name``.

    Raises:
        ArchitectureError: Unknown name; the message lists the available ones.
    """
    try:
        return _registry[name]
    except (KeyError, TypeError):
        raise ArchitectureError(
            f"unknown architecture {name!r}; available: {', '.join(available())}"
        ) from None


def create(name: str, **config: Any) -> Module:
    """A freshly initialised module of architecture ``name`` with config ``config``.

    Raises:
        ArchitectureError: Unknown name, or a bad config key or value.
    """
    return get_architecture(name).create(config)
