"""The server's name and version, as ``GET /v2`` reports them."""

from __future__ import annotations

from importlib import metadata

__all__ = ["SERVER_NAME", "__version__"]

SERVER_NAME = "mininn-serve"

try:
    __version__ = metadata.version("mininn-serve")
except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"
