"""``torch.backends.mps``: Apple's Metal backend, which mininn does not have."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Whether the MPS device can be used: never in mininn."""
    return False


def is_built() -> bool:
    """Whether mininn was built with MPS: it never is."""
    return False
