"""Exceptions of the model zoo.

All of them are ``ValueError`` subclasses, so a caller that maps "bad request" errors
generically treats them as client errors::

    ValueError
    ├── ArchitectureError   unknown architecture name, bad config key or value,
    │                       duplicate registration, missing resource file
    └── InputError          inputs given to ``Servable.predict`` that do not fit
                            the architecture's signature (missing name, bad text)
"""

from __future__ import annotations

__all__ = ["ArchitectureError", "InputError"]


class ArchitectureError(ValueError):
    """An architecture name, config or resource that the registry cannot build."""


class InputError(ValueError):
    """Inference inputs that do not fit an architecture's signature."""
