"""``torch.backends.mkldnn``: oneDNN, which mininn does not use (``enabled`` kept, without effect)."""

__all__ = ["enabled", "is_available"]

enabled = True


def is_available() -> bool:
    """False: mininn's ops run on NumPy."""
    return False
