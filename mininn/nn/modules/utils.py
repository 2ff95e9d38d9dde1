"""``torch.nn.modules.utils``: the argument helpers that model files import (``_pair``, ``_ntuple``) and
``consume_prefix_in_state_dict_if_present`` for checkpoints saved from a wrapped model (``module.``).
"""

from __future__ import annotations

import collections.abc
from collections.abc import Callable
from typing import Any

__all__ = ["_ntuple", "_single", "_pair", "_triple", "_quadruple", "_reverse_repeat_tuple",
           "_list_with_default", "consume_prefix_in_state_dict_if_present"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple[Any, ...]]:
    """A parser: an iterable becomes a tuple of its items, anything else ``n`` copies of itself."""

    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return (x,) * n

    parse.__name__ = parse.__qualname__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: Any, n: int) -> tuple[Any, ...]:
    """``t`` reversed with each item repeated ``n`` times: ``((1, 2), 2)`` -> ``(2, 2, 1, 1)``."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size: Any, defaults: Any) -> Any:
    """``out_size`` with each None replaced by the matching trailing size of ``defaults``."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    tail = list(defaults)[-len(out_size):]
    return [default if size is None else size for size, default in zip(out_size, tail)]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from every key that has it (and from ``_metadata``), in place.

    For a checkpoint saved from ``DataParallel``/``DistributedDataParallel``, whose keys start with
    ``"module."``.
    """
    for key in [k for k in state_dict if k.startswith(prefix)]:
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is None:
        return
    bare = prefix.replace(".", "")
    for key in [k for k in metadata if k and (k == bare or k.startswith(prefix))]:
        metadata[key[len(prefix):]] = metadata.pop(key)
