"""Views: which tensors share another tensor's array, for in-place ops under autograd.

A view op (an ``ArrayFunction`` with ``is_view = True``: indexing with a basic key,
reshape/view, permute/transpose, expand, diagonal, split/chunk/unbind) whose
NumPy result shares its input's memory marks the result a view of the input's
base, the tensor at the root of the chain of views::

    t._view = (base, made_with_grad, multi_output_op_name_or_None, output_nr)

While grad mode is on, the base also keeps a weak reference to each view
(``base._views``), so that an in-place op through one view can give the base's
other views their new history (``mininn._functions.inplace_view``).

Versions: an in-place op that writes through a view changes memory that ops
recorded earlier may have saved for their backward. ``bump`` counts those
writes per memory owner; ``Context.save_for_backward`` notes the count of each
saved array and ``Context.saved_tensors`` raises torch's error when it moved.
"""

from __future__ import annotations

import weakref
from typing import Any

from mininn.autograd.grad_mode import _state

__all__ = ["link_views", "live_views", "bump", "version", "check_versions"]


class _ViewRefs(list):
    """A base's weak references to its views; dead ones are dropped as the list grows."""

    __slots__ = ("limit",)


def _aliases(out: Any, arr: Any) -> bool:
    """Whether ``out`` shares ``arr``'s memory (NumPy's ``base`` is the array owning it)."""
    if out is arr:
        return True
    owner = out.base
    return owner is not None and (owner is arr or owner is arr.base)


def link_views(op: type, source: Any, result: Any) -> None:
    """Mark the outputs of the view op ``op`` on ``source`` that share its array as views of its
    base (split/unbind outputs keep ``op``'s name: torch refuses in-place ops on them)."""
    arr = source._data
    parent = source._view
    base = source if parent is None else parent[0]
    grad = _state.enabled
    multi = type(result) is tuple
    outs = result if multi else (result,)
    for i, t in enumerate(outs):
        if not _aliases(t._data, arr):
            continue
        if parent is not None and parent[2] is not None:  # a view of one output of split/unbind
            t._view = (base, grad, parent[2], parent[3])
        else:
            t._view = (base, grad, op.__name__ if multi else None, i)
        if grad:
            _register(base, t)


def _register(base: Any, view: Any) -> None:
    refs = base._views
    if refs is None:
        refs = base._views = _ViewRefs()
        refs.limit = 16
    elif len(refs) >= refs.limit:
        refs[:] = [r for r in refs if r() is not None]
        refs.limit = max(16, 2 * len(refs))
    refs.append(weakref.ref(view))


def live_views(base: Any) -> list[Any]:
    """The views of ``base`` made with grad mode on that are still alive."""
    refs = base._views
    if not refs:
        return []
    alive = [t for r in refs if (t := r()) is not None]
    refs[:] = [weakref.ref(t) for t in alive]
    return alive


# ---- versions of memory written through views ------------------------------------------

_WRITES: dict[int, tuple[Any, int]] = {}


def _owner(arr: Any) -> Any:
    owner = getattr(arr, "base", None)
    return arr if owner is None else owner


def bump(arr: Any) -> None:
    """Count one in-place write into ``arr``'s memory."""
    owner = _owner(arr)
    key = id(owner)
    entry = _WRITES.get(key)
    if entry is not None and entry[0]() is owner:
        _WRITES[key] = (entry[0], entry[1] + 1)
        return
    try:
        ref = weakref.ref(owner, lambda _r, k=key: _WRITES.pop(k, None))
    except TypeError:  # memory owned by something without weak references: not tracked
        return
    _WRITES[key] = (ref, 1)


def version(arr: Any) -> int:
    """How many in-place writes through views ``arr``'s memory has had."""
    if not hasattr(arr, "base"):
        return 0
    entry = _WRITES.get(id(_owner(arr)))
    return 0 if entry is None else entry[1]


def check_versions(saved: tuple[Any, ...], versions: tuple[int, ...] | None) -> None:
    """torch's error when an array saved for backward was overwritten in place since."""
    for i, arr in enumerate(saved):
        expected = versions[i] if versions is not None else 0
        now = version(arr)
        if now != expected:
            from mininn._functions._util import legacy_type_name

            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{legacy_type_name(arr.dtype)} {list(arr.shape)}] is at "
                f"version {now}; expected version {expected} instead. Hint: the tensor was "
                "written through a view after an op saved it for its backward; clone() it before "
                "the in-place op, or use an out-of-place op."
            )
