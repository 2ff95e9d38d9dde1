"""Architectures from pip-installed packages: the ``mininn_serve.architectures`` entry-point group.

A plug-in package names a module in its packaging metadata; importing that module
registers its architectures with :func:`models.register`::

    # pyproject.toml of the plug-in package
    [project.entry-points."mininn_serve.architectures"]
    tiny = "tiny_models.architectures"

``import models`` loads every plug-in once, so each worker process and every plain
``mininn-serve`` start sees them. A plug-in that fails to import is logged with
its name and the reason, and the others load.
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

__all__ = ["ENTRY_POINT_GROUP", "load_plugins"]

ENTRY_POINT_GROUP = "mininn_serve.architectures"

logger = logging.getLogger("models.plugins")


def load_plugins(group: str = ENTRY_POINT_GROUP) -> dict[str, str]:
    """Import every entry point of ``group``; the failures, ``{entry point name: reason}``."""
    failures: dict[str, str] = {}
    for entry_point in entry_points(group=group):
        try:
            entry_point.load()
        except Exception as exc:  # noqa: BLE001 - one broken plug-in must not stop the others
            reason = f"{type(exc).__name__}: {exc}"
            failures[entry_point.name] = reason
            logger.error("architecture plug-in %r (%s) failed to load: %s", entry_point.name,
                         entry_point.value, reason)
        else:
            logger.info("architecture plug-in %r (%s) loaded", entry_point.name, entry_point.value)
    return failures
