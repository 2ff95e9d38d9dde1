"""``mininn.cuda``: what model code asks about CUDA (``torch.cuda``'s query functions).

``cuda`` devices need the ``cuda`` extra (CuPy) and a GPU; without them
:func:`is_available` is false, so the common
``"cuda" if torch.cuda.is_available() else "cpu"`` picks the CPU.
"""

from __future__ import annotations

__all__ = ["device_count", "is_available"]


def device_count() -> int:
    """The number of CUDA devices CuPy sees (0 without CuPy or a GPU)."""
    try:
        import cupy
    except ImportError:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - CuPy raises its own errors without a driver
        return 0


def is_available() -> bool:
    """Whether a ``cuda`` device can be used."""
    return device_count() > 0
