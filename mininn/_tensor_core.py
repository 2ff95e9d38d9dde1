"""The core of ``Tensor``: its state, below every op module.

``TensorCore`` holds a tensor's array (``_data``: a NumPy array on cpu, a CuPy
array on cuda), the metadata read from it (shape, dtype, device) and the
autograd record (``requires_grad``, ``grad``, ``grad_fn``, hooks). It calls no
op. The layers above it, bottom-up:

- ``mininn.autograd.graph``: the seam. ``ArrayFunction.apply`` unwraps Tensors
  into arrays, runs an op's array-level ``forward`` and wraps the results,
  recording the graph; ``wrap`` makes a Tensor of an array.
- ``mininn._functions``: the ops (``ArrayFunction`` subclasses on arrays) and the
  public functions that call them.
- ``mininn.tensor``: the public ``Tensor``, a ``TensorCore`` with the methods
  that call the ops, handed to the seam once with ``set_tensor_class``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

import numpy as np

from mininn import _dtype
from mininn._backend import device, device_of
from mininn._functions._util import wrap_dim
from mininn._layout import contiguous_format

__all__ = ["TensorCore", "Size"]

_ndarray = np.ndarray
_asarray = np.asarray
_FROM_NP = _dtype._FROM_NP


class Size(tuple):
    """A tensor's shape: a tuple that prints like torch's ``Size``."""

    def __repr__(self) -> str:
        return f"mininn.Size({list(self)})"

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds."""
        n = 1
        for s in self:
            n *= s
        return n


_NO_DATA: Any = object()
# Python sizes and sequences: ``Tensor(2, 3)``, ``Tensor([1, 2])`` follow torch's legacy constructor
_LEGACY_ARGS = frozenset({int, list, tuple, Size})
# mininn._legacy_types.legacy_tensor_data, installed when that module is imported
legacy_tensor_data: Callable[[tuple[Any, ...]], Any] | None = None


def _legacy_args(data: Any, requires_grad: Any, sizes: tuple[Any, ...]) -> tuple[Any, bool]:
    """The array and requires_grad of ``Tensor(*args)`` in torch's legacy rules (default dtype)."""
    if data is _NO_DATA:
        args: tuple[Any, ...] = ()
    elif type(requires_grad) is not bool or sizes:  # Tensor(2, 3, ...): sizes, not requires_grad
        args, requires_grad = (data, requires_grad, *sizes), False
    else:
        args = (data,)
    return legacy_tensor_data(args), bool(requires_grad)  # type: ignore[misc]


class TensorCore:
    """A Tensor's state: the array, its dtype/device/shape views and the autograd record.

    The public ``mininn.tensor.Tensor`` subclasses this and adds the methods that call ops;
    the op modules and the autograd seam check ``isinstance(x, TensorCore)``.
    """

    __slots__ = (
        "_data",
        "_requires_grad",
        "grad",
        "grad_fn",
        "_output_nr",
        "_hooks",
        "_accumulator",
        "_retains_grad",
        "_view",
        "_views",
        "__weakref__",
    )
    __array_priority__ = 1000  # ndarray op Tensor -> Tensor's reflected method

    def __init__(self, data: Any = _NO_DATA, requires_grad: bool = False, *sizes: int) -> None:
        if type(data) is not _ndarray and not hasattr(data, "__cuda_array_interface__"):
            if type(data) in _LEGACY_ARGS or data is _NO_DATA:
                data, requires_grad = _legacy_args(data, requires_grad, sizes)
            else:
                data = _asarray(data)
        self._data = data
        self._requires_grad = False
        self.grad: TensorCore | None = None
        self.grad_fn: Any = None
        self._output_nr = 0
        self._hooks: list[Callable[..., Any]] | None = None
        self._accumulator: Any = None
        self._retains_grad = False
        # views (mininn/autograd/views.py): (base, made_with_grad, multi_output_name, i) on a view of
        # another tensor's array, and on a base the weak references to its registered views
        self._view: tuple[Any, ...] | None = None
        self._views: list[Any] | None = None
        if requires_grad:
            self.requires_grad = True

    # ---- metadata -----------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the size of one dim."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[wrap_dim(dim, self._data.ndim)] if self._data.ndim else 1

    @property
    def dtype(self) -> _dtype.dtype:
        try:
            return _FROM_NP[self._data.dtype]
        except KeyError:
            return _dtype.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> device:
        return device_of(self._data)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        """The number of dims."""
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        """The number of elements."""
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return int(self._data.itemsize)

    @property
    def itemsize(self) -> int:
        return int(self._data.itemsize)

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point one."""
        return self.dtype.is_floating_point

    def is_contiguous(self, memory_format: Any = contiguous_format) -> bool:
        """Whether the array is C-contiguous (mininn makes no other memory format)."""
        if memory_format not in (contiguous_format, None) and str(memory_format) != "torch.contiguous_format":
            raise NotImplementedError(
                f"is_contiguous(memory_format={memory_format}) is not supported: mininn's tensors are "
                "laid out row-major (torch.contiguous_format)"
            )
        return bool(self._data.flags["C_CONTIGUOUS"])

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad or self.grad_fn is not None

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            if value:
                return
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if value and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """Set ``requires_grad`` and return self."""
        self.requires_grad = requires_grad
        return self

    def _become(self, other: TensorCore) -> None:
        """Take over ``other``'s array and graph position (in-place ops under autograd)."""
        self._data = other._data
        self.grad_fn = other.grad_fn
        self._output_nr = other._output_nr
