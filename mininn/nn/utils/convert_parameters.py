"""Flatten parameters into one vector and back: ``parameters_to_vector``,
``vector_to_parameters``."""

from __future__ import annotations

from collections.abc import Iterable

from mininn._functions.join import cat
from mininn.autograd.grad_mode import no_grad
from mininn.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Concatenate every parameter, flattened, into one 1-d tensor (differentiable)."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-d ``vec`` into ``parameters`` (replacing their data).

    Raises:
        TypeError: ``vec`` is not a tensor.
        RuntimeError: ``vec`` is too short for a parameter's shape (torch's view message).
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected mininn.Tensor, but got: {type(vec).__name__}")
    offset = 0
    for param in parameters:
        n = param.numel()
        piece = vec[offset: offset + n].view_as(param)
        with no_grad():
            param.data = piece.detach()
        offset += n
