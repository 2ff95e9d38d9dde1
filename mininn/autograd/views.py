"""Views: which tensors share another tensor's array, for in-place ops under autograd.

A view op (an ``ArrayFunction`` with ``is_view = True``: indexing with a basic key,
reshape/view, permute/transpose, expand, diagonal, split/chunk/unbind) whose
NumPy result shares its input's memory marks the result a view of the input's
base, the tensor at the root of the chain of views::

    t._view = (base, made_with_grad, multi_output_op_name_or_None, output_nr)

While grad mode is on, the base also keeps a weak reference to each view
(``base._views``), so that an in-place op through one view can give the base's
other views their new history (``mininn._functions.inplace_view``).

mininn keeps no version counters: an op recorded before an in-place write
through a view that saved the overwritten values for its backward computes its
gradient from the new values, where torch raises "one of the variables needed
for gradient computation has been modified by an inplace operation" (torch
rejects such programs; mininn's ops do not always save what torch's save, so
counting writes here would refuse programs torch runs).
"""

from __future__ import annotations

import weakref
from typing import Any

from mininn.autograd.grad_mode import _state

__all__ = ["link_views", "adopt", "live_views"]


_ref = weakref.ref


def link_views(op: type, source: Any, result: Any) -> None:
    """Mark the outputs of the view op ``op`` on ``source`` that share its array as views of its
    base (split/unbind outputs keep ``op``'s name: torch refuses in-place ops on them)."""
    arr = source._data
    if type(result) is not tuple:  # the common case, kept short: it runs on every view op
        out = result._data
        if out is not arr:
            owner = out.base
            if owner is None or (owner is not arr and owner is not arr.base):
                return  # a copy (reshape of a non-contiguous tensor, advanced indexing)
        parent = source._view
        grad = _state.enabled
        if parent is None:
            result._view = (source, grad, None, 0)
            if grad and source.grad_fn is not None:
                _register(source, result)
        else:
            base = parent[0]
            result._view = (base, grad, parent[2], parent[3])
            if grad and base.grad_fn is not None:
                _register(base, result)
        return
    for i, t in enumerate(result):
        out = t._data
        owner = out.base
        if out is not arr and (owner is None or (owner is not arr and owner is not arr.base)):
            continue
        parent = source._view
        grad = _state.enabled
        if parent is None:
            base = source
            t._view = (source, grad, op.__name__, i)
        else:
            base = parent[0]
            # a view of one output of split/unbind stays that output for torch's refusal
            t._view = (base, grad, op.__name__, i) if parent[2] is None else (base, grad, *parent[2:])
        if grad and base.grad_fn is not None:
            _register(base, t)


def _register(base: Any, view: Any) -> None:
    refs = base._views
    if refs is None:
        base._views = [_ref(view)]
        return
    if not len(refs) & 31:  # every 32 views: drop the dead ones
        refs[:] = [r for r in refs if r() is not None]
    refs.append(_ref(view))


# set by mininn._functions.inplace_view: gives a view its elements of its base's history
_give_history: Any = None


def adopt(view: Any) -> bool:
    """Whether ``view`` (made with grad mode on, of a base that had no history then) now reads
    its base's history: given it, and registered with the base for later rebases."""
    base = view._view[0]
    if base.grad_fn is None or not view._view[1] or not _state.enabled:
        return False
    if not _give_history(base, view):
        return False
    _register(base, view)
    return True


def live_views(base: Any) -> list[Any]:
    """The views of ``base`` made with grad mode on that are still alive."""
    refs = base._views
    if not refs:
        return []
    alive = [t for r in refs if (t := r()) is not None]
    refs[:] = [weakref.ref(t) for t in alive]
    return alive
