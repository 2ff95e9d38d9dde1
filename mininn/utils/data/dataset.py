"""Datasets: what a ``DataLoader`` reads samples from, as ``torch.utils.data.dataset``.

A map-style ``Dataset`` answers ``dataset[i]`` (and usually ``len(dataset)``);
an ``IterableDataset`` is iterated. ``TensorDataset``, ``StackDataset``,
``ConcatDataset``, ``ChainDataset`` and ``Subset`` combine them, and
``random_split`` divides one into non-overlapping random ``Subset``s.

Errors are torch's, message for message: ``AssertionError`` where torch
asserts (raised explicitly here, so ``python -O`` keeps them), ``ValueError``
for bad lengths and indices.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import mininn
from mininn._factories import Generator, default_generator
from mininn.tensor import Tensor

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")


def _require(condition: bool, message: str) -> None:
    """torch's ``assert condition, message``, kept under ``python -O``."""
    if not condition:
        raise AssertionError(message)


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    ``a + b`` is ``ConcatDataset([a, b])``. A subclass may also define
    ``__getitems__(indices)`` to fetch a whole batch at once; the ``DataLoader``
    then calls it instead of ``__getitem__`` per index.
    """

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A dataset that is iterated rather than indexed: subclasses define ``__iter__`` (it is abstract).

    ``a + b`` is ``ChainDataset([a, b])``. mininn's ``DataLoader`` iterates it in
    the calling process, so ``get_worker_info()`` is ``None`` inside ``__iter__``.
    """

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Samples are rows: ``dataset[i]`` is ``tuple(t[i] for t in tensors)``.

    Args:
        *tensors: tensors with the same size of their first dimension.

    Raises:
        AssertionError: the first dimensions differ (``Size mismatch between tensors``).
    """

    tensors: tuple[Tensor, ...]

    def __init__(self, *tensors: Tensor) -> None:
        _require(all(tensors[0].size(0) == t.size(0) for t in tensors), "Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset[T_co]):
    """Several datasets of one length side by side: ``dataset[i]`` is a tuple (or dict) of their samples.

    Args:
        *args: datasets whose samples form a tuple, or
        **kwargs: datasets whose samples form a dict under these keys (not both).

    Raises:
        ValueError: both or neither given, or datasets of different lengths.
    """

    def __init__(self, *args: Dataset[T_co], **kwargs: Dataset[T_co]) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, "
                "but both types are given."
            )
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self.datasets: tuple[Dataset[T_co], ...] | dict[str, Dataset[T_co]] = args or kwargs
        lengths = [len(d) for d in (args or kwargs.values())]  # type: ignore[arg-type]
        if any(n != lengths[0] for n in lengths):
            raise ValueError("Size mismatch between datasets")
        self._length = lengths[0]

    def __getitem__(self, index: Any) -> Any:
        if isinstance(self.datasets, dict):
            return {key: d[index] for key, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after another: indices run through the first, then the second, ...

    Args:
        datasets: a non-empty iterable of map-style datasets with a length.

    Raises:
        AssertionError: ``datasets`` is empty or holds an ``IterableDataset``.
    """

    datasets: list[Dataset[T_co]]
    cumulative_sizes: list[int]

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = list(datasets)
        _require(len(self.datasets) > 0, "datasets should not be an empty iterable")
        for d in self.datasets:
            _require(not isinstance(d, IterableDataset), "ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> T_co:
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index = len(self) + index
        which = bisect.bisect_right(self.cumulative_sizes, index)
        offset = index if which == 0 else index - self.cumulative_sizes[which - 1]
        return self.datasets[which][offset]

    @property
    def cummulative_sizes(self) -> list[int]:
        """The old, misspelt name of ``cumulative_sizes``."""
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`", FutureWarning,
                      stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset[Any]):
    """Iterable datasets one after another (chained lazily, as ``itertools.chain``).

    Raises:
        AssertionError: on iteration (or ``len``), a dataset that is not an ``IterableDataset``.
    """

    def __init__(self, datasets: Iterable[Dataset[Any]]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            _require(isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset")
            yield from d  # type: ignore[misc]

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            _require(isinstance(d, IterableDataset), "ChainDataset only supports IterableDataset")
            total += len(d)  # type: ignore[arg-type]
        return total


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order: ``subset[i]`` is ``dataset[indices[i]]``.

    Args:
        dataset: a map-style dataset.
        indices: its indices that form the subset.
    """

    dataset: Dataset[T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Dataset[T],
    lengths: Sequence[int | float],
    generator: Generator | None = default_generator,
) -> list[Subset[T]]:
    """Split ``dataset`` into non-overlapping random subsets of the given lengths.

    ``lengths`` are sizes summing to ``len(dataset)``, or fractions summing to 1:
    each fraction gets ``floor(frac * len(dataset))`` samples, and the remainder
    is dealt one by one, round-robin, from the first split. A split of size 0
    warns. ``generator`` makes the split reproducible (mininn's random stream is
    not torch's: the same seed gives the same split in mininn, not torch's split).

    Raises:
        ValueError: a fraction outside [0, 1] (``Fraction at index i is not between
            0 and 1``), or sizes that do not sum to the length (``Sum of input lengths
            does not equal the length of the input dataset!``).
    """
    if lengths and math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _sizes_from_fractions(len(dataset), lengths)  # type: ignore[arg-type]
    if sum(lengths) != len(dataset):  # type: ignore[arg-type]
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = mininn.randperm(sum(lengths), generator=generator).tolist()  # type: ignore[arg-type]
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - size:end]) for end, size in zip(ends, lengths)]  # type: ignore[misc]


def _sizes_from_fractions(total: int, fractions: Sequence[float]) -> list[int]:
    sizes = []
    for i, fraction in enumerate(fractions):
        if fraction < 0 or fraction > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        sizes.append(int(math.floor(total * fraction)))
    for i in range(total - sum(sizes)):
        sizes[i % len(sizes)] += 1
    for i, size in enumerate(sizes):
        if size == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                          stacklevel=3)
    return sizes
