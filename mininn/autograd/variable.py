"""``Variable``: torch's pre-0.4 tensor wrapper, kept because old model files still call it.

``Variable(t)`` is ``t.detach()`` (the same data, out of the graph), ``Variable(t, requires_grad=True)``
a new leaf that requires grad, and ``isinstance(x, Variable)`` is true for every tensor, as in torch.
``volatile`` has no effect (torch warns, as here).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import wrap

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, TensorCore)


class Variable(metaclass=_VariableMeta):
    """Deprecated: tensors are Variables. ``Variable(data, requires_grad=False, volatile=None)``."""

    def __new__(cls, data: Any = None, requires_grad: bool = False, volatile: Any = None) -> Any:  # type: ignore[misc]
        if volatile is not None:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            out = wrap(np.empty((0,), dtype=_dtype.get_default_dtype().np))
        elif isinstance(data, TensorCore):
            out = data.detach()  # type: ignore[attr-defined]
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad:
            out.requires_grad_(True)
        return out
