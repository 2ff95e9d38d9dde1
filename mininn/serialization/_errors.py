"""The one exception that checkpoint reading and writing raise for bad input."""

from __future__ import annotations

__all__ = ["CheckpointError"]


class CheckpointError(ValueError):
    """A checkpoint is malformed, truncated, hostile or cannot be written.

    The message names the problem: the key, the byte offset, the declared and
    the actual size, or the refused pickle global.
    """
