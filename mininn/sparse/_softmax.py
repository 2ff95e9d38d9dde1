"""``torch.sparse.softmax``/``log_softmax``: softmax over the specified entries (the others count as -inf)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions._util import wrap_dim
from mininn.sparse import _ops as O
from mininn.sparse._tensor import SparseTensor, make_sparse
from mininn.tensor import Tensor

__all__ = ["softmax", "log_softmax"]


def _grouped_softmax(input: SparseTensor, dim: int, dtype: Any, log: bool) -> SparseTensor:  # noqa: A002
    if not isinstance(input, SparseTensor):
        raise NotImplementedError(
            f"torch.sparse.{'log_softmax' if log else 'softmax'} takes a sparse COO tensor; use "
            f"torch.{'log_softmax' if log else 'softmax'} for a dense one"
        )
    s = input.coalesce()
    d = wrap_dim(dim, s.ndim)
    if s.dense_dim() or d >= s.sparse_dim():
        raise NotImplementedError("torch.sparse.softmax over a dense dim (of a hybrid tensor) is not "
                                  "supported in mininn; call .to_dense() first")
    values = s._vals if dtype is None else s._vals.to(dtype)
    keep = [k for k in range(s.sparse_dim()) if k != d]
    xp = O.xp_of(s._idx)
    groups = O.linear_index(s._idx[keep], tuple(s._size[k] for k in keep))
    unique, inverse = xp.unique(groups, return_inverse=True)
    inverse = inverse.reshape(-1)
    peak = xp.full(unique.shape[0], -np.inf, dtype=values._data.dtype)
    xp.maximum.at(peak, inverse, values._data)  # per group, for stability (no gradient flows here)
    shifted = values - Tensor(peak[inverse])
    exp = shifted.exp()
    totals = O.SumDuplicates.apply(exp, inverse, int(unique.shape[0]))[Tensor(inverse)]
    out = shifted - totals.log() if log else exp / totals
    return make_sparse(s._idx, out, s._size, True)


def softmax(input: SparseTensor, dim: int, *, dtype: Any = None) -> SparseTensor:  # noqa: A002
    """Softmax along ``dim`` over the specified entries of a sparse COO tensor (a sparse result)."""
    return _grouped_softmax(input, dim, dtype, log=False)


def log_softmax(input: SparseTensor, dim: int, *, dtype: Any = None) -> SparseTensor:  # noqa: A002
    """Log-softmax along ``dim`` over the specified entries of a sparse COO tensor."""
    return _grouped_softmax(input, dim, dtype, log=True)
