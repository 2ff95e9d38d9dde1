"""torch's private helpers that model files call: ``torch._utils``' tensor flattening and ``torch._assert``.

``_flatten_dense_tensors``/``_unflatten_dense_tensors`` pack tensors into one 1-D buffer and back
(as DDP-style gradient syncing and EMA code do); ``_assert`` is the ``assert`` that torchvision's
models call (``torch._assert(x.dim() == 3, "...")``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mininn._functions.join import cat
from mininn.tensor import Tensor

__all__ = ["_flatten_dense_tensors", "_unflatten_dense_tensors", "_assert"]


def _flatten_dense_tensors(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors flattened and concatenated into one 1-D tensor (one tensor: a flat view of it).

    Gradients flow back to each tensor; dtypes promote as in ``cat``.
    """
    tensors = list(tensors)
    if len(tensors) == 1:
        return tensors[0].contiguous().view(-1)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    return cat([t.contiguous().view(-1) for t in tensors])


def _unflatten_dense_tensors(flat: Tensor, tensors: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """Views into ``flat``, one per tensor of ``tensors``, with its shape (the inverse of flattening)."""
    outputs = []
    offset = 0
    for t in tensors:
        numel = t.numel()
        if offset + numel > flat.numel():
            raise RuntimeError(
                f"start ({offset}) + length ({numel}) exceeds dimension size ({flat.numel()})."
            )
        outputs.append(flat.narrow(0, offset, numel).view(t.shape))
        offset += numel
    return tuple(outputs)


def _assert(condition: Any, message: str) -> None:
    """torch's ``assert condition, message`` as a function (raising even under ``python -O``)."""
    if not condition:
        raise AssertionError(message)
