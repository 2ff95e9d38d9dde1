"""Paths into a module's nested output (tuples, lists, dicts): the suffixes of capture names
(``.1.0``) and the ``element`` of an intervention, which names one tensor by the same path."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from mininn.tensor import Tensor

__all__ = ["first_position_path", "flatten", "replaced", "step"]

_DIGITS = frozenset("0123456789")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def flatten(value: Any, suffix: str) -> list[tuple[str, Tensor]]:
    """``(suffix, tensor)`` for every tensor in ``value``, containers walked depth-first."""
    if isinstance(value, Tensor):
        return [(suffix, value)]
    if isinstance(value, (tuple, list)):
        return [item for i, v in enumerate(value) for item in flatten(v, f"{suffix}.{i}")]
    if isinstance(value, Mapping):
        return [item for k, v in value.items() for item in flatten(v, f"{suffix}.{k}")]
    return []


def first_position_path(output: Any) -> tuple[int, ...]:
    """Position 0 at each level of nested tuples and lists (the default element)."""
    path: list[int] = []
    while isinstance(output, (tuple, list)) and output:
        path.append(0)
        output = output[0]
    return tuple(path)


def _position(part: int | str, length: int) -> int | None:
    text = part[1:] if isinstance(part, str) and part.startswith("-") else part
    if isinstance(text, str) and not (text and _DIGITS.issuperset(text)):
        return None
    position = int(part)
    return position if -length <= position < length else None


def step(value: Any, path: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]] | None:
    """The key into ``value`` that ``path`` starts with, and the rest of the path; None: no such key.

    A dict key may hold dots (``"a.b"``): the longest run of parts that is a key wins.
    """
    if isinstance(value, (tuple, list)):
        position = _position(path[0], len(value))
        return None if position is None else (position, path[1:])
    if isinstance(value, Mapping):
        for n in range(len(path), 0, -1):
            parts = path[:n]
            key: Any = parts[0] if n == 1 else ".".join(map(str, parts))
            for candidate in (key, str(key)) if _is_int(key) else (key,):
                if candidate in value:
                    return candidate, path[n:]
    return None


def replaced(container: Any, key: Any, new: Any) -> Any:
    """A copy of ``container`` (same type) with ``new`` at ``key``."""
    if isinstance(container, Mapping):
        updated = dict(container) if type(container) is dict else copy.copy(container)
        updated[key] = new
        return updated
    items = list(container)
    items[key] = new
    if isinstance(container, list):
        return items
    return type(container)(*items) if hasattr(container, "_fields") else tuple(items)
