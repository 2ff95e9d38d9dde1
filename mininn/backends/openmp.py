"""``torch.backends.openmp``: NumPy's BLAS manages its own threads, so no OpenMP of mininn's."""

__all__ = ["is_available"]


def is_available() -> bool:
    """False: mininn has no OpenMP runtime of its own."""
    return False
