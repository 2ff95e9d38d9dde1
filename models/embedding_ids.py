"""What a served request is told when a token id is out of an embedding's range.

mininn raises torch's error, ``IndexError: index out of range in self``, which names
neither the input, the layer nor its size. :func:`describe_out_of_range` reads them from
the error's traceback (the frame of ``F.embedding`` holds the ids and the weight, an
enclosing ``forward`` the module) and from the request's arrays, so the answer says::

    input 'input_ids' has id 30522 at [0, 5], but embeddings.word_embeddings
    (Embedding(30522, 768)) takes ids 0 to 30521 (IndexError: index out of range in self)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import FrameType, TracebackType
from typing import Any

import numpy as np

from mininn.nn import Module
from mininn.nn.functional import embedding

__all__ = ["describe_out_of_range"]

TORCH_MESSAGE = "index out of range in self"


def describe_out_of_range(error: BaseException, model: Module, inputs: Mapping[str, Any]) -> str | None:
    """The message for an out-of-range id that ``error`` reports; None for any other error.

    Args:
        error: what the forward raised.
        model: the served module (its ``named_modules()`` name the embedding).
        inputs: the request's arrays by input name (to name the one that held the ids).
    """
    if not isinstance(error, IndexError) or str(error) != TORCH_MESSAGE:
        return None
    frames = list(_frames(error.__traceback__))
    lookup = next((f for f in reversed(frames) if f.f_code is embedding.__code__), None)
    if lookup is None:
        return None
    ids, weight = np.asarray(lookup.f_locals["input"]._data), lookup.f_locals["weight"]
    size = int(weight.shape[0])
    bad = np.argwhere((ids < 0) | (ids >= size))
    if not len(bad):
        return None
    where = tuple(int(i) for i in bad[0])
    value = int(ids[where])
    module = _module_name(frames[: frames.index(lookup)], model)
    source = _input_name(ids, inputs)
    given = f"input '{source}' has id {value}" if source else f"the ids given to it include {value}"
    return (
        f"{given} at {list(where)}, but {module} takes ids 0 to {size - 1} "
        f"(IndexError: {TORCH_MESSAGE})"
    )


def _frames(tb: TracebackType | None) -> Iterator[FrameType]:
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


def _module_name(outer: list[FrameType], model: Module) -> str:
    """The innermost module of ``model`` whose code is running in ``outer``, as ``name (repr)``."""
    names = {id(module): name for name, module in model.named_modules()}
    for frame in reversed(outer):
        module = frame.f_locals.get("self")
        if isinstance(module, Module) and id(module) in names:
            name = names[id(module)] or "the model"
            return f"{name} ({module!r})" if "\n" not in repr(module) else name
    return "an embedding"


def _input_name(ids: np.ndarray, inputs: Mapping[str, Any]) -> str | None:
    """The input that holds ``ids``: the array it shares memory with, else the one equal to it."""
    arrays = {name: a for name, a in inputs.items() if isinstance(a, np.ndarray) and a.dtype.kind in "iu"}
    for name, array in arrays.items():
        if np.may_share_memory(array, ids):
            return name
    for name, array in arrays.items():
        if array.shape == ids.shape and np.array_equal(array, ids):
            return name
    return None
