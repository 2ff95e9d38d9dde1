"""Samplers: the order in which a ``DataLoader`` reads a map-style dataset, as ``torch.utils.data.sampler``.

A sampler is an iterable of indices (``BatchSampler``: of lists of indices).
``RandomSampler``, ``SubsetRandomSampler`` and ``WeightedRandomSampler`` draw
from ``generator`` (default: mininn's global generator, so ``mininn.manual_seed``
makes them reproducible). mininn's random stream is not torch's: a seed gives
the same order in mininn every time, not the order torch gives. Argument errors
are torch's, message for message.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import mininn
from mininn._factories import Generator, default_generator

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """The base of samplers: subclasses define ``__iter__`` (and ``__len__`` where they know it)."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``."""

    data_source: Sized

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _fresh_generator(generator: Generator | None) -> Generator:
    """``generator``, or a new one seeded from the global generator (so ``manual_seed`` decides it)."""
    if generator is not None:
        return generator
    seed = int(mininn.randint(0, 2**62, (), generator=default_generator).item())
    return Generator().manual_seed(seed)


class RandomSampler(Sampler[int]):
    """Indices in random order: a permutation, or ``num_samples`` draws with replacement.

    Args:
        data_source: the dataset (only its length is used).
        replacement: draw with replacement (default ``False``).
        num_samples: how many indices to yield (default ``len(data_source)``);
            without replacement, more than the length repeats whole permutations.
        generator: the random source (default: a generator seeded from the global one
            at each iteration).

    Raises:
        TypeError: ``replacement`` is not a bool.
        ValueError: ``num_samples`` (or an empty ``data_source``'s length) is not a positive integer.
    """

    data_source: Sized
    replacement: bool

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        """How many indices an iteration yields."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = _fresh_generator(self.generator)
        if self.replacement:
            yield from mininn.randint(0, n, (self.num_samples,), generator=generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from mininn.randperm(n, generator=generator).tolist()
        yield from mininn.randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices, in random order, without replacement.

    Args:
        indices: the indices to yield.
        generator: the random source (default: the global generator).
    """

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in mininn.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``.

    Args:
        weights: one non-negative weight per index (need not sum to one).
        num_samples: how many indices to draw.
        replacement: draw with replacement (default ``True``); without it, an index
            comes at most once.
        generator: the random source (default: the global generator).

    Raises:
        ValueError: ``num_samples`` is not a positive integer, ``replacement`` not a
            bool, or ``weights`` not one-dimensional.
    """

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = mininn.as_tensor(weights, dtype=mininn.float64)
        if weights_tensor.dim() != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = mininn.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Another sampler's indices in lists of ``batch_size`` (the last one shorter unless ``drop_last``).

    Args:
        sampler: a sampler or any iterable of indices.
        batch_size: the size of a batch.
        drop_last: drop a last batch smaller than ``batch_size``.

    Raises:
        ValueError: ``batch_size`` is not a positive integer or ``drop_last`` not a bool.
    """

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[Any] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
