"""``Parameter`` and ``Buffer``: the two kinds of tensor a ``Module`` registers.

Both are ``Tensor`` subclasses that **share** the array they are built from
(no copy), as ``torch.nn.Parameter(t)`` shares ``t``'s storage. A Parameter is
a leaf that requires grad by default; a Buffer only marks a tensor as module
state when it is assigned as a module attribute, carrying its ``persistent``
flag (whether it goes into ``state_dict``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn import _dtype
from mininn.tensor import Tensor

__all__ = ["Parameter", "Buffer"]


def _array_of(data: Any) -> Any:
    """The raw array behind ``data`` (shared, never copied); ``None`` means empty float."""
    if data is None:
        return np.empty((0,), dtype=_dtype.get_default_dtype().np)
    if isinstance(data, Tensor):
        return data._data
    return np.asarray(data)


class Parameter(Tensor):
    """A Tensor that a ``Module`` registers as a parameter when assigned as an attribute.

    Args:
        data: the tensor (or array) whose memory the parameter shares. ``None``
            gives an empty float tensor.
        requires_grad: whether autograd records operations on it. Default ``True``,
            also inside ``no_grad``.

    Raises:
        RuntimeError: ``requires_grad`` for a non-floating-point tensor.
    """

    def __init__(self, data: Tensor | Any = None, requires_grad: bool = True) -> None:
        arr = _array_of(data)
        if requires_grad and not _dtype.from_numpy_dtype(arr.dtype).is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        super().__init__(arr, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        # Like torch: data and requires_grad only (no grad, hooks or extra attributes).
        result = type(self).__new__(type(self))
        Parameter.__init__(result, Tensor(self._data.copy()), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Like torch: hooks and the autograd record are not serialized.
        return (_rebuild_parameter, (type(self), self._data, self.requires_grad, dict(self.__dict__)))


def _rebuild_parameter(
    cls: type[Parameter], data: Any, requires_grad: bool, state: dict[str, Any]
) -> Parameter:
    param = cls.__new__(cls)
    Parameter.__init__(param, Tensor(data), requires_grad)
    param.__dict__.update(state)
    return param


class Buffer(Tensor):
    """A Tensor that a ``Module`` registers as a buffer when assigned as an attribute.

    Args:
        data: the tensor (or array) whose memory the buffer shares. ``None`` gives an
            empty float tensor.
        persistent: whether the buffer is part of the module's ``state_dict``.
    """

    def __init__(self, data: Tensor | Any = None, *, persistent: bool = True) -> None:
        requires_grad = isinstance(data, Tensor) and data.requires_grad
        super().__init__(_array_of(data), requires_grad=requires_grad)
        self.persistent = persistent

    def __deepcopy__(self, memo: dict[int, Any]) -> Buffer:
        if id(self) in memo:
            return memo[id(self)]
        result = Buffer(Tensor(self._data.copy()), persistent=self.persistent)
        result._requires_grad = self._requires_grad
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_rebuild_buffer, (self._data, self._requires_grad, self.persistent))


def _rebuild_buffer(data: Any, requires_grad: bool, persistent: bool) -> Buffer:
    buf = Buffer(Tensor(data), persistent=persistent)
    buf._requires_grad = requires_grad
    return buf
