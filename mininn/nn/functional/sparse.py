"""``embedding``: rows of a weight matrix picked by integer indices."""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.function import Context, Function
from mininn.autograd.grad_mode import no_grad
from mininn.nn.functional._utils import xp_of
from mininn.tensor import Tensor

__all__ = ["embedding"]


def _scatter_add_rows(out: Any, idx: Any, rows: Any) -> None:
    """``out[idx[i]] += rows[i]`` with repeated indices accumulating."""
    if isinstance(out, np.ndarray):
        np.add.at(out, idx, rows)
    else:  # CuPy
        import cupyx

        cupyx.scatter_add(out, idx, rows)


class _Embedding(Function):
    @staticmethod
    def forward(ctx: Context, weight: Any, idx: Any, padding_idx: int, scale_grad_by_freq: bool) -> Any:
        ctx.save_for_backward(idx)
        ctx.meta = (weight.shape, padding_idx, scale_grad_by_freq)
        return weight[idx]

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        (idx,) = ctx.saved_tensors
        shape, padding_idx, scale_grad_by_freq = ctx.meta
        flat = idx.reshape(-1)
        rows = g.reshape(flat.size, shape[1])
        if scale_grad_by_freq:
            counts = xp_of(flat).bincount(flat, minlength=shape[0])
            rows = rows / counts[flat][:, None].astype(rows.dtype)
        gw = xp_of(g).zeros(shape, dtype=g.dtype)
        _scatter_add_rows(gw, flat, rows)
        if padding_idx >= 0:
            gw[padding_idx] = 0
        return gw, None, None, None


def _renorm_rows(weight: Tensor, idx: Any, max_norm: float, norm_type: float) -> None:
    """Shrink, in place, the rows of ``weight`` used by ``idx`` whose norm exceeds ``max_norm``."""
    xp = xp_of(weight._data)
    rows = xp.unique(idx.reshape(-1))
    w = weight._data
    norms = (abs(w[rows]) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    big = norms > max_norm
    rows, norms = rows[big], norms[big]
    w[rows] *= (max_norm / (norms + 1e-7)).astype(w.dtype)[:, None]


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Look up rows of ``weight`` (``(num_embeddings, dim)``) for the integer ``input``.

    ``padding_idx``'s row receives no gradient. ``max_norm`` renormalises the
    looked-up rows of ``weight`` in place first. ``sparse`` is accepted for
    compatibility; the gradient is always dense.
    """
    if input.dtype.name not in ("int64", "int32"):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
            f"but got mininn.{_tensor_type(input)} instead (while checking arguments for embedding)"
        )
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % n
    idx = input._data
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        with no_grad():
            _renorm_rows(weight, idx, float(max_norm), float(norm_type))
    pad = -1 if padding_idx is None else padding_idx
    return _Embedding.apply(weight, idx, pad, bool(scale_grad_by_freq))


def _tensor_type(t: Tensor) -> str:
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
             "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
    return names.get(t.dtype.name, t.dtype.name) + "Tensor"

