"""``FunctionCtx``: what a user's ``Function.forward`` leaves for its ``backward``.

The ``ctx`` of ``torch.autograd.Function``: ``save_for_backward`` and
``saved_tensors``, ``needs_input_grad``, ``mark_dirty``,
``mark_non_differentiable``, ``set_materialize_grads``, and any attribute the
user sets (``ctx.scale = scale``). It holds Tensors, not arrays (``Context`` in
``mininn.autograd.graph`` is the array-level one of ``ArrayFunction``).
"""

from __future__ import annotations

from typing import Any

from mininn._tensor_core import TensorCore
from mininn.autograd.graph import FREED_MESSAGE

__all__ = ["FunctionCtx", "c_type_name"]

SHARED_STORAGE_MESSAGE = (
    "mark_shared_storage is deprecated. Tensors with shared storages are automatically tracked. "
    "Note that calls to `set_()` are not tracked"
)

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python


def c_type_name(value: Any) -> str:
    """A type's name as CPython's ``tp_name`` spells it (torch's messages use it).

    Classes defined in Python give their bare name (``Cls``); built-in and extension
    types their full one (``int``, ``numpy.ndarray``).
    """
    cls = type(value)
    if cls.__flags__ & _HEAP_TYPE or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


class FunctionCtx:
    """The context of one ``Function.apply`` call (torch's ``FunctionCtx``).

    Attributes:
        needs_input_grad: One bool per input of ``forward``: whether it is a Tensor
            that requires grad.
        to_save: The tensors given to :meth:`save_for_backward`.
        non_differentiable: The outputs given to :meth:`mark_non_differentiable`.
        dirty_tensors: The inputs given to :meth:`mark_dirty`.
        materialize_grads: Whether ``backward`` receives zeros (True, the default) or
            None for outputs that got no gradient.
    """

    def __init__(self) -> None:
        self.needs_input_grad: tuple[bool, ...] = ()
        self.to_save: tuple[Any, ...] = ()
        self.non_differentiable: tuple[Any, ...] = ()
        self.dirty_tensors: tuple[Any, ...] = ()
        self.materialize_grads = True
        self._saved_freed = False

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep ``tensors`` (Tensors or None) for ``backward`` to read as ``saved_tensors``.

        As in torch, anything else is refused when ``apply`` records the call (not under
        ``no_grad``, where nothing is kept).
        """
        self.to_save = tensors
        self._saved_freed = False

    def _check_saved(self) -> None:
        for i, t in enumerate(self.to_save):
            if t is not None and not isinstance(t, TensorCore):
                raise TypeError(
                    f"save_for_backward can only save variables, but argument {i} is of type "
                    f"{c_type_name(t)}"
                )

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        """The tensors given to :meth:`save_for_backward` (freed after backward, as in torch)."""
        if self._saved_freed:
            raise RuntimeError(FREED_MESSAGE)
        return tuple(self.to_save)

    saved_variables = saved_tensors

    def save_for_forward(self, *tensors: Any) -> None:
        """Keep ``tensors`` for ``jvp`` (mininn has no forward-mode AD; they are only kept)."""
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors: Any) -> None:
        """Declare the inputs that ``forward`` modified in place (they must be returned)."""
        for i, t in enumerate(tensors):
            if not isinstance(t, TensorCore):
                raise RuntimeError(
                    f"mark_dirty can only accept variables, but argument {i} is of type {c_type_name(t)}"
                )
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        """Declare outputs that never require grad (indices, masks); backward gets zeros for them."""
        for t in tensors:
            if not isinstance(t, TensorCore):
                raise RuntimeError(
                    "mark_non_differentiable only accepts variable arguments, but got "
                    f"{c_type_name(t)}"
                )
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)

    def mark_shared_storage(self, *pairs: Any) -> None:
        """Removed in torch; raises torch's message."""
        raise RuntimeError(SHARED_STORAGE_MESSAGE)

    def _free(self) -> None:
        # the engine calls this after backward without retain_graph: only saved tensors go
        if self.to_save:
            self.to_save = ()
            self._saved_freed = True
