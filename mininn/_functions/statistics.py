"""Order statistics and summaries: ``median``, ``kthvalue``, ``mode``, ``quantile``,
``var_mean``/``std_mean``, ``aminmax``, ``nansum``/``nanmean``, ``bincount``, ``histc``.

Values that pick one element (median/kthvalue/mode along a dim) pass the
gradient to that element; the median of all elements shares it between ties,
as torch does.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from mininn._dtype import get_default_dtype
from mininn._functions import elementwise as E
from mininn._functions import reduction as R
from mininn._functions._util import _FLOAT, category, torch_type_name, wrap_dim
from mininn._functions.conversion import cast
from mininn._functions.indexing import gather
from mininn._functions.join import stack
from mininn._functions.shape import shape_args, sizes_or_keyword
from mininn._functions.sorting import sort
from mininn._tensor_core import TensorCore
from mininn.autograd.graph import ArrayFunction, Context, wrap

return_types = R.return_types


class MedianAll(ArrayFunction):
    """The lower median of all elements; ties share the gradient evenly."""

    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        flat = a.reshape(-1)
        out = np.asarray(np.sort(flat)[(flat.size - 1) // 2]) if flat.size else np.asarray(np.nan, a.dtype)
        if flat.size and np.isnan(flat).any():
            out = np.asarray(np.nan, a.dtype)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, out = ctx.saved_tensors
        hit = (a == out) | (np.isnan(a) & np.isnan(out))
        return g * hit / max(int(hit.sum()), 1)


def _pick_sorted(input: Any, dim: int, position: int, keepdim: bool) -> tuple[Any, Any]:
    """The ``position``-th smallest entry along ``dim`` (stable order) and its index."""
    axis = wrap_dim(dim, input._data.ndim)
    order = sort(input, axis, stable=True).indices
    idx = order.narrow(axis, position, 1)
    values = gather(input, axis, idx)
    if not keepdim:
        values, idx = values.squeeze(axis), idx.squeeze(axis)
    return values, idx


def median(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median of all elements, or ``(values, indices)`` along ``dim``."""
    if dim is None:
        return MedianAll.apply(input)
    if input._data.ndim == 0:
        return return_types.median(input.clone(), wrap(np.zeros((), np.int64)))
    axis = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[axis]
    if n == 0:
        raise IndexError(f"median(): Expected reduction dim {axis} to have non-zero size.")
    return return_types.median(*_pick_sorted(input, dim, (n - 1) // 2, keepdim))


def kthvalue(input: Any, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """``(values, indices)``: the ``k``-th smallest entry along ``dim``."""
    axis = wrap_dim(dim, input._data.ndim)
    n = input._data.shape[axis] if input._data.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    if input._data.ndim == 0:
        return return_types.kthvalue(input.clone(), wrap(np.zeros((), np.int64)))
    return return_types.kthvalue(*_pick_sorted(input, axis, k - 1, keepdim))


def mode(input: Any, dim: int = -1, keepdim: bool = False) -> Any:
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest on a tie) and the index of
    its last occurrence."""
    a = input._data
    if a.ndim == 0:
        return return_types.mode(input.clone(), wrap(np.zeros((), np.int64)))
    axis = wrap_dim(dim, a.ndim)
    lines = np.moveaxis(a, axis, -1).reshape(-1, a.shape[axis])
    s = np.sort(lines, axis=-1)
    # runs of equal values, numbered over all lines at once
    starts = np.ones(s.shape, bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    run = np.cumsum(starts).reshape(s.shape) - 1
    counts = np.bincount(run.reshape(-1))[run]
    best = s[np.arange(len(s)), np.argmax(counts, axis=-1)]
    last = lines.shape[1] - 1 - np.argmax((lines == best[:, None])[:, ::-1], axis=-1)
    idx = np.moveaxis(last.reshape(np.moveaxis(a, axis, -1).shape[:-1] + (1,)), -1, axis).astype(np.int64)
    values = gather(input, axis, wrap(idx))
    index = wrap(idx)
    if not keepdim:
        values, index = values.squeeze(axis), index.squeeze(axis)
    return return_types.mode(values, index)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile(input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Any:
    """The ``q``-quantiles (a number or a 1-D tensor) along ``dim`` (of all elements when None)."""
    if category(input._data.dtype) != _FLOAT:
        raise RuntimeError(
            "quantile() input tensor must be either float or double dtype"
        )
    qs = q._data if isinstance(q, TensorCore) else np.asarray(q, dtype=np.float64)
    if qs.ndim > 1:
        raise RuntimeError(f"quantile() q must be a scalar or 1D tensor, but got {qs.ndim}D tensor")
    if np.any((qs < 0) | (qs > 1)):
        bad = qs[(qs < 0) | (qs > 1)].reshape(-1)[0]
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {float(bad)}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            "quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, but got "
            f"{interpolation}"
        )
    x = input.reshape(-1) if dim is None else input
    axis = 0 if dim is None else wrap_dim(dim, x._data.ndim)
    values = sort(x, axis).values
    n = x._data.shape[axis]
    pos = np.asarray(qs, dtype=np.float64).reshape(-1) * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.ceil(pos).astype(np.int64)
    if interpolation == "nearest":
        lo = hi = np.round(pos).astype(np.int64)  # halves to even, as torch
    elif interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi = np.ceil(pos).astype(np.int64)
    frac = pos - lo if interpolation == "linear" else np.full(pos.shape, 0.5 * (interpolation == "midpoint"))
    lower = values.index_select(axis, wrap(lo))
    upper = values.index_select(axis, wrap(hi))
    view = [1] * x._data.ndim
    view[axis] = -1
    weight = wrap(frac.astype(x._data.dtype).reshape(view))
    out = E.add(lower, E.mul(E.sub(upper, lower), weight))  # (..., len(q) at axis, ...)
    if keepdim:
        if dim is None:
            out = out.reshape((-1,) + (1,) * input._data.ndim)
        else:
            out = out.movedim(axis, 0).unsqueeze(axis + 1)
    else:
        out = out.movedim(axis, 0)
    return out.squeeze(0) if qs.ndim == 0 else out


def var_mean(input: Any, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Any, Any]:
    """``(var, mean)`` over ``dim``."""
    return (R.var(input, dim, unbiased, keepdim, correction=correction),
            R.mean(input, None if isinstance(dim, bool) else dim, keepdim))


def std_mean(input: Any, dim: Any = None, unbiased: bool = True, keepdim: bool = False, *,
             correction: Any = None) -> tuple[Any, Any]:
    """``(std, mean)`` over ``dim``."""
    return (R.std(input, dim, unbiased, keepdim, correction=correction),
            R.mean(input, None if isinstance(dim, bool) else dim, keepdim))


def aminmax(input: Any, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """``(min, max)`` over ``dim`` (all elements by default)."""
    d = () if dim is None else dim
    return return_types.aminmax(R.amin(input, d, keepdim), R.amax(input, d, keepdim))


def nansum(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """``sum`` with NaNs counted as zero."""
    clean = E.where(wrap(np.isnan(input._data)), 0.0, input) if input._data.dtype.kind == "f" else input
    return R.sum(clean, dim, keepdim, dtype=dtype)


def nanmean(input: Any, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """``mean`` over the elements that are not NaN."""
    if category(input._data.dtype) != _FLOAT:
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{torch_type_name(input._data.dtype)}"
        )
    count = R.sum(wrap(~np.isnan(input._data)), dim, keepdim)
    return E.div(nansum(input, dim, keepdim, dtype=dtype), count)


def bincount(input: Any, weights: Any = None, minlength: int = 0) -> Any:
    """Counts of each non-negative integer in a 1-D tensor (sums of ``weights`` when given)."""
    a = input._data
    if a.ndim != 1 or a.dtype.kind not in "iub" or (a.size and a.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return wrap(np.bincount(a, minlength=minlength).astype(np.int64))
    w = weights._data
    out_dtype = w.dtype if w.dtype.kind == "f" else np.float64
    return wrap(np.bincount(a, weights=w, minlength=minlength).astype(out_dtype))


def histc(input: Any, bins: int = 100, min: float = 0, max: float = 0) -> Any:
    """A histogram of ``bins`` equal bins over ``[min, max]`` (the data's range when both are 0)."""
    a = input._data
    if category(a.dtype) != _FLOAT:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{torch_type_name(a.dtype)}'")
    lo, hi = float(min), float(max)
    if lo == hi and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    inside = a[(a >= lo) & (a <= hi)]
    counts, _ = np.histogram(inside, bins=bins, range=(lo, hi))
    return wrap(counts.astype(a.dtype))


def sum_to_size(input: Any, *sizes: Any, size: Any = None) -> Any:
    """``input`` summed down to ``size``, which it must broadcast from."""
    target = shape_args(sizes_or_keyword("sum_to_size", "size", sizes, size))
    shape = input._data.shape
    lead = len(shape) - len(target)
    if lead < 0 or any(t not in (1, s) for t, s in zip(target, shape[lead:])):
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(shape)}}}.")
    axes = tuple(range(lead)) + tuple(
        lead + i for i, t in enumerate(target) if t == 1 and shape[lead + i] != 1
    )
    out = R.sum(input, axes, keepdim=True) if axes else input
    return out.reshape(target)


def msort(input: Any) -> Any:
    """``input`` sorted along dim 0."""
    return sort(input, 0).values


def cov(input: Any, *, correction: int = 1, fweights: Any = None, aweights: Any = None) -> Any:
    """The covariance matrix of the variables in the rows of ``input`` (observations in the columns),
    optionally with integer frequency weights and observation weights."""
    if input._data.ndim > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input._data.ndim} dimensions"
        )
    x = input.reshape(1, -1) if input._data.ndim < 2 else input
    if category(x._data.dtype) < _FLOAT:
        x = cast(x, get_default_dtype().np)
    n = x._data.shape[1]
    w = None
    for weights in (fweights, aweights):
        if weights is not None:
            w = weights if w is None else E.mul(w, weights)
    if w is None:
        w_sum = float(n)
        avg = R.mean(x, 1, keepdim=True)
        norm = w_sum - correction
    else:
        w = w.to(x.dtype)
        w_sum = R.sum(w)
        avg = E.div(R.sum(E.mul(x, w), 1, keepdim=True), w_sum)
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = E.sub(w_sum, correction)
        else:
            norm = E.sub(w_sum, E.div(E.mul(R.sum(E.mul(w, aweights.to(x.dtype))), correction), w_sum))
    centered = E.sub(x, avg)
    weighted = centered if w is None else E.mul(centered, w)
    out = E.div(weighted @ centered.conj().mT, norm)  # (variables, variables)
    return out.squeeze() if input._data.ndim < 2 else out


def corrcoef(input: Any) -> Any:
    """Pearson correlation coefficients of the variables in the rows of ``input``, clipped to [-1, 1]."""
    c = cov(input)
    if c._data.ndim == 0:
        return E.div(c, c)
    d = c.diagonal()
    std = d.sqrt()
    return E.div(E.div(c, std.unsqueeze(1)), std.unsqueeze(0)).clamp(-1, 1)


def nanmedian(input: Any, dim: int | None = None, keepdim: bool = False) -> Any:
    """``median`` of the elements that are not NaN (NaN where all are)."""
    a = input._data
    if dim is None:
        keep = ~np.isnan(a.reshape(-1))
        if not keep.any():
            return median(input)
        return MedianAll.apply(input.reshape(-1)[wrap(keep)])
    axis = wrap_dim(dim, a.ndim)
    # NaN sorts last: the lower median of the k numbers of each line sits at (k - 1) // 2
    count = (~np.isnan(a)).sum(axis=axis, keepdims=True)
    order = sort(input, axis, stable=True).indices
    n = a.shape[axis]
    pos = wrap(np.where(count == 0, (n - 1) // 2, (count - 1) // 2).astype(np.int64))
    idx = gather(order, axis, pos)
    values = gather(input, axis, idx)
    if not keepdim:
        values, idx = values.squeeze(axis), idx.squeeze(axis)
    return return_types.median(values, idx)


def nanquantile(input: Any, q: Any, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Any:
    """``quantile`` of the elements that are not NaN, line by line (NaN where a line has none)."""
    quantile(input.reshape(-1)[:1] if input._data.size else input, q, interpolation=interpolation)  # checks
    x = input.reshape(-1) if dim is None else input
    axis = 0 if dim is None else wrap_dim(dim, x._data.ndim)
    values = sort(x, axis).values  # NaN sorts last
    count = (~np.isnan(x._data)).sum(axis=axis, keepdims=True)
    qs = np.asarray(_q_raw(q), dtype=np.float64)
    outs = []
    for p in qs.reshape(-1):  # one gather per requested quantile
        pos = p * np.maximum(count - 1, 0)  # an all-NaN line reads its first (NaN) value, as torch
        lo, hi = np.floor(pos).astype(np.int64), np.ceil(pos).astype(np.int64)
        if interpolation == "nearest":
            lo = hi = np.round(pos).astype(np.int64)
        elif interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        half = 0.5 * (interpolation == "midpoint")
        frac = pos - lo if interpolation == "linear" else np.full(pos.shape, half)
        lower, upper = gather(values, axis, wrap(lo)), gather(values, axis, wrap(hi))
        out = E.add(lower, E.mul(E.sub(upper, lower), wrap(frac.astype(x._data.dtype))))
        outs.append(out if keepdim and dim is not None else out.squeeze(axis))
    result = stack(outs, 0)
    if keepdim and dim is None:
        result = result.reshape((-1,) + (1,) * input._data.ndim)
    return result.squeeze(0) if qs.ndim == 0 else result


def _q_raw(q: Any) -> Any:
    return q._data if isinstance(q, TensorCore) else np.asarray(q)


class histogram_result(NamedTuple):  # noqa: N801 - torch.return_types.histogram
    hist: Any
    bin_edges: Any

    def __repr__(self) -> str:
        return f"mininn.return_types.histogram(\nhist={self.hist!r},\nbin_edges={self.bin_edges!r})"


def histogram(input: Any, bins: Any = 100, *, range: Any = None, weight: Any = None,  # noqa: A002
              density: bool = False) -> Any:
    """``(hist, bin_edges)``: counts (or weights, or a density) of ``input`` in ``bins`` equal bins over
    ``range`` (the data's range by default), or in the bins between the given edges."""
    a = input._data
    edges = bins._data if isinstance(bins, TensorCore) else int(bins)
    counts, bin_edges = np.histogram(a.reshape(-1), bins=edges, range=range,
                                     weights=None if weight is None else weight._data.reshape(-1),
                                     density=density)
    return histogram_result(wrap(counts.astype(a.dtype)), wrap(bin_edges.astype(a.dtype)))
