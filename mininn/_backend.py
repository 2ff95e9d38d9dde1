"""Devices and the array module behind each one.

``cpu`` arrays are NumPy arrays; ``cuda`` and ``cuda:N`` arrays are CuPy
arrays, available when the ``cuda`` extra (CuPy) is installed.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

__all__ = ["device", "as_device", "array_module", "device_of"]


class device:  # noqa: N801 - torch's name
    """Where a tensor's memory lives: ``device("cpu")``, ``device("cuda:1")``."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expects a string such as 'cpu' or 'cuda:0', got {type!r}")
        kind, _, num = type.partition(":")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(
                "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, "
                "maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start "
                "of device string: " + type
            )
        if num:
            if not num.isdigit() or index is not None:
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(num)
        self.type = kind
        self.index = None if kind == "cpu" else index

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")


def as_device(value: device | str | None) -> device:
    """Accept a device, a string, or None (meaning cpu)."""
    if value is None:
        return CPU
    if isinstance(value, device):
        return value
    return device(value)


def _cupy() -> ModuleType:
    try:
        import cupy
    except ImportError:
        raise RuntimeError(
            "CUDA devices need CuPy: install the 'cuda' extra "
            "(pip install 'mininn-serve[cuda]')"
        ) from None
    return cupy


def array_module(dev: device) -> ModuleType:
    """NumPy for cpu, CuPy for cuda."""
    if dev.type == "cpu":
        return np
    return _cupy()


def device_of(array: Any) -> device:
    """The device an array lives on."""
    if isinstance(array, np.ndarray) or np.isscalar(array):
        return CPU
    dev = getattr(array, "device", None)
    if dev is not None and hasattr(dev, "id"):  # a CuPy array
        return device("cuda", dev.id)
    return CPU


def to_device(array: Any, dev: device) -> Any:
    """Copy ``array`` to ``dev`` (no copy when it is already there)."""
    if dev.type == "cpu":
        if isinstance(array, np.ndarray):
            return array
        return array.get()
    cp = _cupy()
    with cp.cuda.Device(dev.index or 0):
        return cp.asarray(array)
