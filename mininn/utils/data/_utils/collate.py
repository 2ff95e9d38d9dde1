"""Batching: ``default_collate`` stacks a list of samples into a batch, ``default_convert`` converts one.

As ``torch.utils.data._utils.collate``: tensors are stacked along a new first
dimension, NumPy arrays and scalars become tensors first, Python floats become a
``float64`` tensor and Python ints an ``int64`` one (``bool`` a ``bool`` one),
strings and bytes stay a list, and containers are collated element by element
(a dict per key, a namedtuple per field, a list or tuple per position; a tuple
batch comes back as a list, as torch's does). ``collate(batch, collate_fn_map=...)``
takes a map from types to functions, so a custom type can be batched too::

    def collate_points(batch, *, collate_fn_map=None):
        return Points.concatenate(batch)

    collate(batch, collate_fn_map={**default_collate_fn_map, Points: collate_points})
"""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

import mininn
from mininn.tensor import Tensor

__all__ = [
    "collate",
    "collate_float_fn",
    "collate_int_fn",
    "collate_numpy_array_fn",
    "collate_numpy_scalar_fn",
    "collate_str_fn",
    "collate_tensor_fn",
    "default_collate",
    "default_collate_err_msg_format",
    "default_collate_fn_map",
    "default_convert",
    "np_str_obj_array_pattern",
]

np_str_obj_array_pattern = re.compile(r"[SaUO]")  # NumPy dtype codes of strings and objects

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)

CollateFnMap = dict[type | tuple[type, ...], Callable[..., Any]]


def default_convert(data: Any) -> Any:
    """Convert one sample's NumPy arrays and scalars to tensors, through dicts, lists and tuples.

    The ``collate_fn`` of a ``DataLoader`` with ``batch_size=None``. Tensors,
    strings and other objects are returned as they are; a tuple comes back as a
    list, a namedtuple as the same namedtuple.
    """
    if isinstance(data, Tensor):
        return data
    if type(data).__module__ == "numpy" and not isinstance(data, (np.str_, np.bytes_)):
        if isinstance(data, np.ndarray) and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return mininn.as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # a namedtuple
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def collate(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Collate ``batch`` (a list of samples) with ``collate_fn_map``'s function for the samples' type.

    A type found in ``collate_fn_map`` (first exactly, then by ``isinstance`` in
    the map's order) is batched by its function; dicts, namedtuples and
    sequences are collated per element.

    Raises:
        TypeError: a sample of a type that nothing collates.
        RuntimeError: sequences of different lengths in one batch.
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type, collate_fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return collate_fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                       for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        return _collate_sequences(batch, collate_fn_map)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _collate_sequences(batch: Any, collate_fn_map: CollateFnMap | None) -> Any:
    size = len(batch[0])
    if any(len(elem) != size for elem in batch):
        raise RuntimeError("each element in list of batch should be of equal size")
    # each column is a tuple, as in torch: a column of strings comes back as that tuple
    columns = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
    if isinstance(batch[0], tuple):
        return columns  # torch returns a list for tuples (backwards compatibility)
    return _rebuild_sequence(batch[0], columns)


def _rebuild_mapping(like: Any, values: dict[Any, Any]) -> Any:
    """``values`` in a mapping of ``like``'s type: a copy if mutable, else a dict if the type refuses."""
    if isinstance(like, collections.abc.MutableMapping):
        clone = copy.copy(like)
        clone.update(values)
        return clone
    try:
        return type(like)(values)
    except TypeError:
        return values


def _rebuild_sequence(like: Any, values: list[Any]) -> Any:
    """``values`` in a sequence of ``like``'s type: a copy if mutable, else a list if the type refuses."""
    if isinstance(like, collections.abc.MutableSequence):
        clone = copy.copy(like)
        for i, value in enumerate(values):
            clone[i] = value
        return clone
    try:
        return type(like)(values)
    except TypeError:
        return values


def collate_tensor_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Tensor:
    """Tensors of one shape stacked along a new first dimension (dtypes promoted as ``stack`` does)."""
    return mininn.stack(list(batch), 0)


def collate_numpy_array_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """NumPy arrays as tensors, then stacked; arrays of strings or objects raise ``TypeError``."""
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([mininn.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Tensor:
    """NumPy scalars as one tensor of their dtype (mixed dtypes promoted as torch promotes them)."""
    return mininn.stack([mininn.as_tensor(np.asarray(b)) for b in batch], 0)


def collate_float_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Tensor:
    """Python floats as a ``float64`` tensor."""
    return mininn.tensor(list(batch), dtype=mininn.float64)


def collate_int_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Tensor:
    """Python ints as an ``int64`` tensor (bools as a ``bool`` one; a float among them makes it float)."""
    return mininn.tensor(list(batch))


def collate_str_fn(batch: Any, *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Strings and bytes stay as they are: the batch is their list."""
    return batch


# The order matters: a type not found exactly is matched by isinstance in this order (bool by int).
default_collate_fn_map: CollateFnMap = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: Any) -> Any:
    """Stack a list of samples into a batch, as ``torch.utils.data.default_collate``.

    The ``collate_fn`` of a ``DataLoader`` with a ``batch_size``::

        default_collate([(mininn.ones(3), 0), (mininn.zeros(3), 1)])
        # [tensor of shape (2, 3), tensor([0, 1])]

    Raises:
        TypeError: a sample that is not a tensor, NumPy array, number, string,
            mapping or sequence (``default_collate: batch must contain tensors, ...``).
        RuntimeError: tensors of different shapes, or sequences of different lengths.
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
