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


# torch.cuda's legacy tensor types (issue 30): cuda.FloatTensor(4, 5), isinstance(x, cuda.FloatTensor)
from mininn._legacy_types import CUDA_TENSOR_TYPES as _CUDA_TENSOR_TYPES  # noqa: E402

globals().update(_CUDA_TENSOR_TYPES)
__all__ += list(_CUDA_TENSOR_TYPES)


def manual_seed(seed: int) -> None:
    """Seed CUDA's generator: nothing to do in mininn (cuda tensors draw from the default generator,
    which ``mininn.manual_seed`` seeds), and like torch's no error without a GPU."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every GPU's generator: as :func:`manual_seed`."""
    int(seed)


__all__ += ["manual_seed", "manual_seed_all"]
