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

__all__ = ["Parameter", "Buffer", "UninitializedBuffer", "UninitializedParameter", "is_lazy"]


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


_UNINITIALIZED_SHAPE = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
    "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
    "`forward` to initialize the parameters before accessing their attributes."
)


def _empty_array(device: Any, dtype: Any) -> Any:
    from mininn._factories import empty

    return empty(0, device=device, dtype=dtype)._data


class UninitializedTensorMixin:
    """A placeholder whose shape is unknown until ``materialize(shape)`` (lazy modules).

    It has a dtype and a device, so ``module.to(...)`` and ``.double()`` work, but
    asking for its shape raises torch's message.
    """

    cls_to_become: type[Tensor] = Tensor
    _data: Any

    def materialize(self, shape: Any, device: Any = None, dtype: Any = None) -> None:
        """Become a ``cls_to_become`` of ``shape`` (uninitialized values), in place."""
        from mininn._factories import empty

        device = self.device if device is None else device  # type: ignore[attr-defined]
        dtype = self.dtype if dtype is None else dtype  # type: ignore[attr-defined]
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self._data = empty(shape, device=device, dtype=dtype)._data
        self.__class__ = self.cls_to_become

    @property
    def shape(self) -> Any:
        raise RuntimeError(_UNINITIALIZED_SHAPE)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A ``Parameter`` whose shape is inferred later; becomes a ``Parameter`` when materialized.

    Args:
        requires_grad: as for ``Parameter``. Default ``True``.
        device: where it will live.
        dtype: its dtype. Default the default float dtype.
    """

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        Parameter.__init__(self, Tensor(_empty_array(device, dtype)), requires_grad)

    def __deepcopy__(self, memo: dict[int, Any]) -> UninitializedParameter:
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (type(self), (self.requires_grad,))


class UninitializedBuffer(UninitializedTensorMixin, Buffer):
    """A buffer whose shape is inferred later; becomes a ``Buffer`` (a Tensor) when materialized.

    Args:
        requires_grad: Default ``False``.
        device: where it will live.
        dtype: its dtype. Default the default float dtype.
        persistent: whether it goes into ``state_dict``. Default ``True``.
    """

    cls_to_become = Buffer

    def __init__(self, requires_grad: bool = False, device: Any = None, dtype: Any = None,
                 persistent: bool = True) -> None:
        Buffer.__init__(self, Tensor(_empty_array(device, dtype), requires_grad=requires_grad),
                        persistent=persistent)

    def __deepcopy__(self, memo: dict[int, Any]) -> UninitializedBuffer:
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype, self.persistent)
        return memo[id(self)]

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (type(self), (self.requires_grad, None, None, self.persistent))


def is_lazy(param: Any) -> bool:
    """Whether ``param`` is an uninitialized placeholder of a lazy module."""
    return isinstance(param, UninitializedTensorMixin)
