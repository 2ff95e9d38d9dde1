"""Index lookups: ``embedding`` (rows of a weight matrix picked by integer indices),
``embedding_bag`` (their per-bag sum, mean or max) and ``one_hot``."""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn.autograd.grad_mode import no_grad
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import xp_of
from mininn.tensor import Tensor

__all__ = ["embedding", "embedding_bag", "one_hot"]


def _scatter_add_rows(out: Any, idx: Any, rows: Any) -> None:
    """``out[idx[i]] += rows[i]`` with repeated indices accumulating."""
    if isinstance(out, np.ndarray):
        np.add.at(out, idx, rows)
    else:  # CuPy
        import cupyx

        cupyx.scatter_add(out, idx, rows)


def _scatter_extreme_rows(out: Any, idx: Any, rows: Any, largest: bool) -> None:
    """``out[idx[i]] = max(out[idx[i]], rows[i])`` (``min`` unless ``largest``), repeats included."""
    if isinstance(out, np.ndarray):
        (np.maximum if largest else np.minimum).at(out, idx, rows)
    else:  # CuPy
        import cupyx

        (cupyx.scatter_max if largest else cupyx.scatter_min)(out, idx, rows)


class _Embedding(ArrayFunction):
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
             "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
             "bool": "Bool"}
    return names.get(t.dtype.name, t.dtype.name) + "Tensor"



def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor of shape ``tensor.shape + (num_classes,)`` with a 1 at each index.

    ``num_classes=-1`` takes ``tensor.max() + 1``.

    Raises:
        RuntimeError: a non-int64 input, an empty input without ``num_classes``, or an index
            outside ``[0, num_classes)`` (torch's messages).
    """
    if tensor.dtype.name != "int64":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    idx = tensor._data
    xp = xp_of(idx)
    if idx.size == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return Tensor(xp.zeros(idx.shape + (num_classes,), dtype=idx.dtype))
    if idx.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(idx.max()) + 1
    elif idx.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor((idx[..., None] == xp.arange(num_classes)).astype(idx.dtype))


# ---- embedding_bag ---------------------------------------------------------------------------


class _EmbeddingBag(ArrayFunction):
    """Sum, mean or max of looked-up rows per bag.

    ``keep``: positions (in the flattened input) of the entries that count (padding and
    entries past the last offset dropped); ``idx``/``bag``: their rows and bags, bags in
    non-decreasing order; ``psw``: the flattened per-sample weights or None; ``freq``:
    each kept entry's index count in the whole input (``scale_grad_by_freq``) or None.
    """

    @staticmethod
    def forward(ctx: Context, weight: Any, psw: Any, keep: Any, idx: Any, bag: Any, n_bags: int, mode: str,
                freq: Any) -> Any:
        xp = xp_of(weight)
        rows = weight[idx]
        out = xp.zeros((n_bags, weight.shape[1]), dtype=weight.dtype)
        ctx.meta = (weight.shape, mode, None if psw is None else psw.shape)
        if mode == "max":
            present = xp.flatnonzero(xp.bincount(bag, minlength=n_bags))
            best = xp.full(out.shape, -xp.inf, dtype=weight.dtype)
            _scatter_extreme_rows(best, bag, rows, largest=True)
            out[present] = best[present]
            # the first entry holding each bag's max, per column: its row gets the gradient
            pos = xp.where(rows == best[bag], xp.arange(idx.size)[:, None], idx.size)
            first = xp.full(out.shape, idx.size, dtype=pos.dtype)
            _scatter_extreme_rows(first, bag, pos, largest=False)
            ctx.save_for_backward(present, idx[first[present]])
            return out
        w = None if psw is None else psw[keep]
        _scatter_add_rows(out, bag, rows if w is None else rows * w[:, None])
        if mode == "mean":
            count = xp.maximum(xp.bincount(bag, minlength=n_bags), 1).astype(weight.dtype)
            out /= count[:, None]
            w = weight.dtype.type(1) / count[bag]  # d out / d row, for backward
        ctx.save_for_backward(keep, idx, bag, w, freq, rows if psw is not None else None)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, mode, psw_shape = ctx.meta
        xp = xp_of(g)
        gw = xp.zeros(shape, dtype=g.dtype)
        if mode == "max":
            present, arg = ctx.saved_tensors
            flat = (arg * shape[1] + xp.arange(shape[1])).reshape(-1)
            _scatter_add_rows(gw.reshape(-1), flat, g[present].reshape(-1))
            return gw, None, None, None, None, None, None, None
        keep, idx, bag, w, freq, rows = ctx.saved_tensors
        per_entry = g[bag]
        grows = per_entry if w is None else per_entry * w[:, None]
        if freq is not None:
            grows = grows / freq[:, None].astype(g.dtype)
        _scatter_add_rows(gw, idx, grows)
        gpsw = None
        if psw_shape is not None and ctx.needs_input_grad[1]:
            gpsw = xp.zeros(psw_shape, dtype=g.dtype)
            gpsw[keep] = (rows * per_entry).sum(axis=1)
        return gw, gpsw, None, None, None, None, None, None


def _type_repr(obj: Any) -> str:
    return "<class 'mininn.Tensor'>" if isinstance(obj, Tensor) else str(type(obj))


def _check_bag_args(input: Tensor, weight: Tensor, offsets: Tensor | None, mode: str,
                    scale_grad_by_freq: bool, per_sample_weights: Tensor | None) -> None:
    """torch's Python-level checks of ``embedding_bag``, in its order."""
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape!r}) is not None, "
                         f"then it must have the same shape as the input ({input.shape!r})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2 and offsets is not None:
        raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                         "of fixed length sequences. However, found offsets of type "
                         f"{_type_repr(offsets)}")
    if input.ndim == 1 and offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if input.ndim == 1 and offsets.ndim != 1:  # type: ignore[union-attr]
        raise ValueError("offsets has to be a 1D Tensor")
    if input.ndim not in (1, 2):
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")


def _check_bag_tensors(input: Tensor, weight: Tensor, offsets: Tensor | None,
                       per_sample_weights: Tensor | None) -> None:
    """torch's kernel checks: index dtypes, offsets bounds, weight dtypes and index range."""
    for t in (input, offsets):
        if t is not None and t.dtype.name not in ("int64", "int32"):
            raise RuntimeError(
                "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                f"Long, Int; but got mininn.{_tensor_type(t)} instead (while checking arguments for "
                "embedding_bag)"
            )
    if offsets is not None and offsets.numel():
        first, last = int(offsets._data[0]), int(offsets._data[-1])
        if first != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                f"position 0. However, got {first}\n[ mininn.{_tensor_type(offsets)}{{}} ]"
            )
        if last > input.numel():
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {input.numel()} but got "
                               f"offsets[-1] of {last}")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
            f"'per_sample_weights'; but type mininn.{_tensor_type(weight)} does not equal "
            f"mininn.{_tensor_type(per_sample_weights)} (while checking arguments for embedding_bag)"
        )
    flat = input._data.reshape(-1)
    bad = (flat < 0) | (flat >= weight.shape[0])
    if bad.any():
        k = int(bad.argmax())
        raise RuntimeError(f"Index {k} of input takes value {int(flat[k])} which is not in the valid range "
                           f"[0, {weight.shape[0]})")


def _bags(input: Tensor, offsets: Tensor | None, include_last_offset: bool) -> tuple[Any, Any, int]:
    """The bag of every input entry (-1: in none) and how far entries count, as (bag, end, n_bags)."""
    xp = xp_of(input._data)
    n = input.numel()
    if input.ndim == 2:
        rows, cols = input.shape
        return xp.repeat(xp.arange(rows), cols), n, rows
    offs = offsets._data.astype(np.int64)  # type: ignore[union-attr]
    if include_last_offset:
        end = int(offs[-1]) if offs.size else 0
        offs = offs[:-1]
    else:
        end = n
    return xp.searchsorted(offs, xp.arange(n), side="right") - 1, end, int(offs.size)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean",
                  sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Tensor:
    """Sum, mean or max of the ``weight`` rows of each bag of indices, without building the
    intermediate ``embedding`` output.

    Bags are the rows of a 2-D ``input``, or the slices of a 1-D ``input`` that start at
    ``offsets`` (with ``include_last_offset``, the last offset ends the last bag).
    ``per_sample_weights`` scales each row (``mode='sum'`` only); entries equal to
    ``padding_idx`` are left out (an empty bag gives zeros). ``sparse`` is accepted for
    compatibility; the gradient is always dense.
    """
    _check_bag_args(input, weight, offsets, mode, scale_grad_by_freq, per_sample_weights)
    _check_bag_tensors(input, weight, offsets, per_sample_weights)
    if max_norm is not None:
        with no_grad():
            _renorm_rows(weight, input._data, float(max_norm), float(norm_type))
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for "
            f"mode='sum' (got mode='{mode}'). Please open a feature request on GitHub."
        )
    n = weight.shape[0]
    if padding_idx is not None and not -n <= padding_idx < n:
        raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n} through {n - 1}, but "
                           f"got {padding_idx}")
    flat = input._data.reshape(-1).astype(np.int64)
    xp = xp_of(flat)
    bag, end, n_bags = _bags(input, offsets, include_last_offset)
    counted = (bag >= 0) & (xp.arange(flat.size) < end)
    if padding_idx is not None:
        counted &= flat != padding_idx % n
    keep = xp.flatnonzero(counted)
    idx = flat[keep]
    freq = xp.bincount(flat, minlength=n)[idx] if scale_grad_by_freq else None
    psw = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    return _EmbeddingBag.apply(weight, psw, keep, idx, bag[keep], n_bags, mode, freq)
