"""``torch.sparse.sum``: the sum of a sparse COO tensor over all dims (dense 0-d) or some (sparse)."""

from __future__ import annotations

from typing import Any

from mininn._functions._util import wrap_dim
from mininn.sparse._tensor import SparseTensor, make_sparse
from mininn.tensor import Tensor

__all__ = ["sparse_sum"]


def sparse_sum(input: SparseTensor, dim: Any = None, dtype: Any = None) -> Tensor:  # noqa: A002
    """Sum ``input`` over ``dim`` (all dims when None: a dense 0-d tensor), as ``torch.sparse.sum``.

    Summing some sparse dims gives a coalesced sparse tensor of the rest; summing every sparse dim
    gives a dense tensor of the remaining dense dims.
    """
    if not isinstance(input, SparseTensor):
        raise RuntimeError("torch.sparse.sum expects a sparse COO tensor; use torch.sum for dense tensors")
    values = input._vals if dtype is None else input._vals.to(dtype)
    if dim is None:
        return values.sum()
    dims = sorted({wrap_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)})
    sd = input.sparse_dim()
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        values = values.sum(dim=tuple(dense_dims))
    keep = [d for d in range(sd) if d not in dims]
    size = tuple(s for d, s in enumerate(input._size) if d not in dims)
    if not keep:
        return values.sum(0)
    return make_sparse(input._idx[keep], values, size, False).coalesce()


def _sum_method(self: SparseTensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
    """``s.sum()``: ``torch.sparse.sum`` (a dense 0-d tensor over every dim, sparse over some)."""
    if keepdim:
        raise RuntimeError("sum(): keepdim=True is not supported for sparse COO tensors")
    return sparse_sum(self, dim, dtype)


SparseTensor.sum = _sum_method  # type: ignore[method-assign]
