"""``torch.backends.mps``: Apple's Metal backend, which mininn does not have."""

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: mininn has no MPS device."""
    return False


def is_built() -> bool:
    """False: mininn has no MPS device."""
    return False
