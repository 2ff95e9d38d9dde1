"""In-place ops on views while autograd records, as torch does them.

A view (``t._view``, set by ``mininn.autograd.views``) shares its base's array.
An in-place op on it under autograd computes the result out of place, from
the view's own copy of its values (so that what the op saves for its backward
is not overwritten), writes it through the view into the base's memory (every
view of the base sees it), and rebases the history: the base's ``grad_fn``
becomes ``CopySlices`` (the base with the view's elements taken from the
result), and the view and the base's other views read their elements from the
new base (``ViewOfBase``). An in-place op on a base whose views are alive
writes through the same way and gives the views the new history.

Refused with torch's messages: a view of a leaf that requires grad, an output
of split/chunk/unbind (functions returning several views), a view made under
``no_grad`` of a base that requires grad, and an expanded view whose elements
share memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mininn.autograd import views as _views
from mininn.autograd.graph import ArrayFunction, Context
from mininn.autograd.views import live_views

try:  # NumPy 2
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:  # NumPy 1
    _byte_bounds = np.byte_bounds

__all__ = ["VIEW_LEAF_MESSAGE", "check_view", "shares_memory", "on_own_copy", "rebase"]

VIEW_LEAF_MESSAGE = "a view of a leaf Variable that requires grad is being used in an in-place operation."

_MULTI_OUTPUT_MESSAGE = (
    "Output {i} of {name} is a view and is being modified inplace. This view is the output of a "
    "function that returns multiple views. Such functions do not allow the output views to be "
    "modified inplace. You should replace the inplace operation by an out-of-place one."
)

_NO_GRAD_MESSAGE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your "
    "code by moving both the view and the inplace either both inside the no_grad block (if you "
    "don't want the inplace to be tracked) or both outside (if you want the inplace to be "
    "tracked)."
)

_OVERLAP_MESSAGE = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)


def check_view(self: Any) -> None:
    """torch's refusals of an in-place op that autograd records on the view ``self``."""
    base, made_with_grad, multi_output, output_nr = self._view
    if base.grad_fn is None and base._requires_grad:
        raise RuntimeError(VIEW_LEAF_MESSAGE)
    if not made_with_grad and base.requires_grad:
        raise RuntimeError(_NO_GRAD_MESSAGE)
    if multi_output is not None:
        if base.requires_grad:
            raise RuntimeError(_MULTI_OUTPUT_MESSAGE.format(i=output_nr, name=multi_output))
        # torch's words when the base gets its first history from this very op
        raise RuntimeError(
            _NO_GRAD_MESSAGE.split(" Given")[0] + " " + _MULTI_OUTPUT_MESSAGE.split(". ", 1)[1]
        )
    if type(self._data) is not np.ndarray:
        raise NotImplementedError(
            "in-place ops on views of tensors that autograd records are supported on cpu only in "
            "mininn; clone() the view, or use an out-of-place op"
        )
    if not self._data.flags.writeable:
        raise RuntimeError(_OVERLAP_MESSAGE)


def shares_memory(self: Any) -> bool:
    """Whether ``self`` is a view, or a base with registered views still alive."""
    return self._view is not None or (self._views is not None and bool(live_views(self)))


def on_own_copy(self: Any, compute: Callable[[], Any]) -> Any:
    """``compute()`` with ``self`` holding a private copy of its values when it shares memory,
    so what the op saves for backward survives the write through the view that follows."""
    if not shares_memory(self):
        return compute()
    shared = self._data
    self._data = shared.copy()
    try:
        return compute()
    finally:
        self._data = shared


def rebase(self: Any, out: Any) -> None:
    """Make ``self`` hold ``out`` (same shape and dtype) and its history, as an in-place op."""
    info = self._view
    if info is None:
        views = live_views(self) if self._views else None
        if not views:
            self._become(out)
            return
        _write(self, out._data)
        self.grad_fn = out.grad_fn
        self._output_nr = out._output_nr
        _refresh(self, views)
        return
    base = info[0]
    _write(self, out._data)
    idx = _positions(base._data, self._data)
    step = CopySlices.apply(base, out, idx)
    base.grad_fn = step.grad_fn
    base._output_nr = 0
    views = live_views(base)
    if not any(v is self for v in views):
        views.append(self)
        _views._register(base, self)  # rebased again later, it takes the new history too
    _refresh(base, views)


def _write(self: Any, values: Any) -> None:
    try:
        self._data[...] = values
    except ValueError as err:
        if "read-only" in str(err):
            raise RuntimeError(_OVERLAP_MESSAGE) from None
        raise


def _refresh(base: Any, views: list[Any]) -> None:
    """Each view's history: its elements of the (rebased) base."""
    if base.grad_fn is None and not base._requires_grad:
        return
    for v in views:
        _give_history(base, v)


def _give_history(base: Any, view: Any) -> bool:
    """Make ``view``'s history its elements of ``base`` (False for a view that takes none)."""
    if view._data.dtype.kind not in "fc" or type(view._data) is not np.ndarray:
        return False
    idx = _positions(base._data, view._data)
    step = ViewOfBase.apply(base, idx, view._data)
    view.grad_fn = step.grad_fn
    view._output_nr = 0
    return True


_views._give_history = _give_history


def _positions(base: Any, view: Any) -> Any:
    """For each element of ``view`` (an array into ``base``'s memory), its flat C-order index in
    ``base``: both laid over one index buffer spanning ``base``'s memory."""
    item = base.itemsize
    low, high = _byte_bounds(base)
    start = base.__array_interface__["data"][0]
    vstart = view.__array_interface__["data"][0]
    vlow, vhigh = _byte_bounds(view)
    if view.dtype != base.dtype or vlow < low or vhigh > high or any(
        s % item for s in (*base.strides, *view.strides, start - low, vstart - low)
    ):
        raise NotImplementedError(
            "in-place op on a view mininn cannot map onto its base (a reinterpreted dtype or "
            "unaligned strides); clone() the view first"
        )
    span = np.full((high - low) // item, -1, np.int64)
    wide = span.itemsize

    def lay(arr: Any, offset: int) -> Any:
        strides = tuple(s // item * wide for s in arr.strides)
        return np.lib.stride_tricks.as_strided(span[offset:], arr.shape, strides)

    lay(base, (start - low) // item)[...] = np.arange(base.size).reshape(base.shape)
    idx = lay(view, (vstart - low) // item).copy()
    if idx.size and idx.min() < 0:
        raise NotImplementedError(
            "in-place op on a view that reaches memory outside its base's elements; clone() the "
            "view first"
        )
    return idx


class CopySlices(ArrayFunction):
    """The base after an in-place op on one of its views: the view's elements are ``src``."""

    node_name = "CopySlices"  # torch's name of this node

    @staticmethod
    def forward(ctx: Context, base: Any, src: Any, idx: Any) -> Any:
        ctx.idx = idx
        return base  # already written through the view

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        idx = ctx.idx
        gb = np.array(g, order="C")
        flat = gb.reshape(-1)
        gsrc = flat[idx]
        flat[idx] = 0
        return gb, gsrc, None


class ViewOfBase(ArrayFunction):
    """A view's elements of its base (``idx``: their flat indices), as its history after a rebase."""

    @staticmethod
    def forward(ctx: Context, base: Any, idx: Any, view: Any) -> Any:
        ctx.meta = (base.shape, idx, not view.flags.writeable)
        return view

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, idx, overlaps = ctx.meta
        out = np.zeros(shape, g.dtype)
        flat = out.reshape(-1)
        if overlaps:  # an expanded view: several of its elements are one of the base's
            np.add.at(flat, idx, g)
        else:
            flat[idx] = g
        return out, None, None
