"""einops on mininn tensors: ``rearrange``, ``reduce``, ``repeat``, ``einsum``, ``pack`` and the rest.

einops picks a backend by the tensor's type among the subclasses of its
``AbstractBackend`` that are defined and whose ``framework_name`` is imported.
Importing this module defines :class:`MininnBackend`, so afterwards einops'
functions take mininn tensors and return mininn tensors, recording autograd as
any mininn op does::

    import mininn.einops  # noqa: F401 - lets einops' functions take mininn tensors
    from einops import rearrange

    patches = rearrange(images, "b c (h p) (w q) -> b (h w) (p q c)", p=4, q=4)

``import mininn`` does not import einops. Model code loaded by
:func:`mininn.torch_alias.load_code` needs no such line: its ``import einops``
imports this module first, and its ``einops.layers.torch`` is
:mod:`mininn.nn.einops_layers` (see :mod:`mininn.einops_code`). The backend offers no
``layers()``: the layers import this module, not the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from einops._backends import AbstractBackend

import mininn
from mininn.tensor import Size, Tensor

__all__ = ["MininnBackend"]

_FLOATS = (mininn.float16, mininn.float32, mininn.float64, mininn.bfloat16)


class MininnBackend(AbstractBackend):
    """einops' operations as mininn ops (the same calls einops makes on torch tensors)."""

    framework_name = "mininn"

    def is_appropriate_type(self, tensor: Any) -> bool:
        return isinstance(tensor, Tensor)

    def from_numpy(self, x: Any) -> Tensor:
        tensor = mininn.from_numpy(x)
        if self.is_float_type(tensor):
            tensor.requires_grad_(True)
        return tensor

    def to_numpy(self, x: Tensor) -> Any:
        return x.detach().numpy()

    def arange(self, start: int, stop: int) -> Tensor:
        return mininn.arange(start, stop, dtype=mininn.int64)

    def shape(self, x: Tensor) -> Size:
        return x.shape

    def reshape(self, x: Tensor, shape: Sequence[int]) -> Tensor:
        return x.reshape(tuple(shape))

    def transpose(self, x: Tensor, axes: Sequence[int]) -> Tensor:
        return x.permute(tuple(axes))

    def reduce(self, x: Tensor, operation: str, axes: Sequence[int]) -> Tensor:
        if operation in ("min", "max"):
            return getattr(x, "a" + operation)(dim=tuple(axes))
        if operation in ("sum", "mean"):
            return getattr(x, operation)(dim=tuple(axes))
        if operation in ("prod", "any", "all"):  # one dim at a time, as torch takes them
            for axis in sorted(axes, reverse=True):
                x = getattr(x, operation)(dim=axis)
            return x
        raise NotImplementedError(f"Unknown reduction {operation!r}")

    def stack_on_zeroth_dimension(self, tensors: list[Tensor]) -> Tensor:
        return mininn.stack(tensors)

    def add_axis(self, x: Tensor, new_position: int) -> Tensor:
        return x.unsqueeze(new_position)

    def add_axes(self, x: Tensor, n_axes: int, pos2len: dict[int, int]) -> Tensor:
        sizes = [-1] * n_axes
        for position, length in pos2len.items():
            x = x.unsqueeze(position)
            sizes[position] = length
        return x.expand(sizes)

    def tile(self, x: Tensor, repeats: Sequence[int]) -> Tensor:
        return x.repeat(tuple(repeats))

    def concat(self, tensors: list[Tensor], axis: int) -> Tensor:
        return mininn.cat(tensors, dim=axis)

    def is_float_type(self, x: Tensor) -> bool:
        return x.dtype in _FLOATS

    def einsum(self, pattern: str, *x: Tensor) -> Tensor:
        return mininn.einsum(pattern, *x)
