"""Exceptions of the model zoo.

All of them are ``ValueError`` subclasses, so a caller that maps "bad request" errors
generically treats them as client errors::

    ValueError
    ├── ArchitectureError   unknown architecture name, bad config key or value,
    │   │                   duplicate registration
    │   ├── ResourceError   a resource file (tokenizer.json, ...) missing from the model's folder
    │   └── ModelCodeError  (models.code) the model folder's code fails to import, build or run
    └── InputError          inputs given to ``Servable.predict`` that do not fit
                            the architecture's signature (missing name, bad text)
"""

from __future__ import annotations

__all__ = ["ArchitectureError", "InputError", "ResourceError"]


class ArchitectureError(ValueError):
    """An architecture name, config or resource that the registry cannot build."""


class ResourceError(ArchitectureError):
    """A resource file the architecture needs is missing from the model's folder.

    Attributes:
        filename: the file's name in the folder, e.g. ``"tokenizer.json"``.
    """

    def __init__(self, message: str, filename: str) -> None:
        super().__init__(message)
        self.filename = filename


class InputError(ValueError):
    """Inference inputs that do not fit an architecture's signature."""
