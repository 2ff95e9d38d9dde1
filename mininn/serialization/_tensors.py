"""Between checkpoint arrays and mininn Tensors: what save accepts, what load returns."""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._backend import CPU, as_device, device, to_device
from mininn.serialization._errors import CheckpointError
from mininn.tensor import Tensor

__all__ = ["as_array", "is_tensor_like", "resolve_device", "to_tensor"]


def is_tensor_like(value: object) -> bool:
    """Whether ``save`` stores ``value`` as a tensor (Tensor, Parameter, ndarray)."""
    return isinstance(value, (Tensor, np.ndarray))


def as_array(value: Tensor | np.ndarray) -> np.ndarray:
    """The host NumPy array behind ``value``, in native byte order, without copying when it can.

    Parameters and tensors that require grad are saved as their data, as
    torch's ``state_dict`` does.
    """
    if isinstance(value, Tensor):
        array = to_device(value._data, CPU)
    else:
        array = np.asarray(value)
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))
    return array


def resolve_device(map_location: Any, device_arg: Any) -> device:
    """The device that loaded tensors go to; ``map_location`` is torch's name for it.

    Raises:
        TypeError: both are given and differ, or one is a mapping or a callable
            (torch's other ``map_location`` forms, which mininn does not take).
    """
    if map_location is not None and device_arg is not None and map_location != device_arg:
        raise TypeError(f"load() got map_location={map_location!r} and device={device_arg!r}; give one")
    chosen = device_arg if device_arg is not None else map_location
    if chosen is not None and not isinstance(chosen, (str, device)):
        raise TypeError(f"map_location must be a device or a string such as 'cpu', got {chosen!r}")
    return as_device(chosen)


def to_tensor(
    array: np.ndarray, dev: device, *, requires_grad: bool = False, where: str = "tensor"
) -> Tensor:
    """Wrap a loaded array as a Tensor on ``dev`` (no copy on cpu).

    This is the one place where loaded data meets a device: a ``cuda`` device
    copies the array there through the backend.
    """
    if requires_grad and array.dtype.kind not in "fV":
        raise CheckpointError(
            f"{where}: only floating point tensors can require gradients, got {array.dtype}"
        )
    data = array if dev.type == "cpu" else to_device(array, dev)
    return Tensor(data, requires_grad=requires_grad)
