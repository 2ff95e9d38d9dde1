"""``DataLoader``: batches from a dataset, as ``torch.utils.data.DataLoader``, loaded in the calling process.

Every argument of torch's ``DataLoader`` is taken and checked as torch checks
it (the same ``ValueError`` messages). Batches are the same as torch's for the
same sampler order: ``sampler``/``shuffle``/``batch_sampler`` decide the indices,
``dataset[i]`` (or ``dataset.__getitems__(indices)``) the samples and
``collate_fn`` (default: ``default_collate``, or ``default_convert`` with
``batch_size=None``) the batch.

There are no worker processes: ``num_workers > 0`` loads in the calling process
and warns once per iteration. A map-style dataset gives the same batches, in
the same order, as torch's workers would; an ``IterableDataset`` is iterated
once, as by a single worker (``get_worker_info()`` is ``None``, and
``worker_init_fn`` is not called). ``pin_memory``, ``timeout``, ``prefetch_factor``,
``persistent_workers``, ``multiprocessing_context`` and ``in_order`` are checked
and have no further effect.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from mininn._factories import Generator
from mininn.utils.data._utils.collate import default_collate, default_convert
from mininn.utils.data._utils.worker import get_worker_info
from mininn.utils.data.dataset import Dataset, IterableDataset
from mininn.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

T_co = TypeVar("T_co", covariant=True)

# Attributes that torch forbids changing once the loader is built.
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


class _InfiniteConstantSampler(Sampler[None]):
    """``None`` forever: the 'indices' of an ``IterableDataset`` (one per sample to take)."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader(Generic[T_co]):
    """Iterate a dataset in batches.

    Args:
        dataset: a map-style ``Dataset`` (anything with ``__getitem__`` and
            ``__len__``) or an ``IterableDataset``.
        batch_size: samples per batch (default 1); ``None`` yields samples one by
            one, converted by ``collate_fn`` (default ``default_convert``).
        shuffle: a new random order every epoch (a ``RandomSampler`` on ``generator``).
        sampler: the order of indices (not with ``shuffle``).
        batch_sampler: yields whole lists of indices (not with ``batch_size``,
            ``shuffle``, ``sampler`` or ``drop_last``).
        num_workers: accepted; loading happens in the calling process (a warning
            says so when it is above 0).
        collate_fn: makes a batch from a list of samples (default ``default_collate``).
        pin_memory: accepted; nothing to pin.
        drop_last: drop the last batch when it is smaller than ``batch_size``.
        timeout: accepted; must not be negative.
        worker_init_fn: accepted; never called, as there are no workers.
        multiprocessing_context: checked as torch checks it (only with ``num_workers > 0``).
        generator: the random source of ``shuffle``.
        prefetch_factor: only with ``num_workers > 0``.
        persistent_workers: only with ``num_workers > 0``.
        pin_memory_device: accepted.
        in_order: accepted; batches always come in order.

    Raises:
        ValueError: options that torch refuses together, or out of range (torch's messages).
    """

    def __init__(
        self,
        dataset: Dataset[T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler[Any] | Iterable[Any] | None = None,
        batch_sampler: Sampler[list[Any]] | Iterable[list[Any]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[Any], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        _check_process_options(num_workers, timeout, prefetch_factor, persistent_workers)
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
            )
        if sampler is None:
            sampler = _default_sampler(dataset, bool(shuffle), self._iterable, generator)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if num_workers > 0 and prefetch_factor is None else prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn or (default_collate if batch_sampler is not None else default_convert)
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.multiprocessing_context = _checked_context(multiprocessing_context, num_workers)
        self.__initialized = True

    def __setattr__(self, attr: str, value: Any) -> None:
        if self.__dict__.get("_DataLoader__initialized") and attr in _FROZEN:
            name = self.__class__.__name__
            raise ValueError(f"{attr} attribute should not be set after {name} is initialized")
        super().__setattr__(attr, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Iterable[Any]:
        return self.batch_sampler if self._auto_collation else self.sampler  # type: ignore[return-value]

    def __iter__(self) -> _SingleProcessDataLoaderIter:
        if self.num_workers > 0:
            warnings.warn(
                f"mininn's DataLoader loads in the calling process: num_workers={self.num_workers} runs as "
                "num_workers=0 (a map-style dataset gives the same batches in the same order)",
                UserWarning,
                stacklevel=2,
            )
        return _SingleProcessDataLoaderIter(self)

    def __len__(self) -> int:
        """The number of batches (for an ``IterableDataset``, from ``len(dataset)``)."""
        if not self._iterable:
            return len(self._index_sampler)  # type: ignore[arg-type]
        length = len(self.dataset)  # type: ignore[arg-type]
        if self.batch_size is None:
            return length
        return length // self.batch_size if self.drop_last else -(-length // self.batch_size)


def _check_process_options(num_workers: int, timeout: float, prefetch_factor: int | None,
                           persistent_workers: bool) -> None:
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to "
            "enable multiprocessing, otherwise set prefetch_factor to None."
        )
    if num_workers > 0 and prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _check_iterable_options(shuffle: Any, sampler: Any, batch_sampler: Any) -> None:
    if shuffle not in {False, None}:
        raise ValueError(
            f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
        )
    if sampler is not None:
        raise ValueError(
            f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
        )
    if batch_sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified batch_sampler option, "
            f"but got batch_sampler={batch_sampler}"
        )


def _default_sampler(dataset: Any, shuffle: bool, iterable: bool,
                     generator: Generator | None) -> Sampler[Any]:
    if iterable:
        return _InfiniteConstantSampler()
    if shuffle:
        return RandomSampler(dataset, generator=generator)
    return SequentialSampler(dataset)


def _checked_context(context: Any, num_workers: int) -> Any:
    if context is None:
        return None
    if num_workers <= 0:
        raise ValueError(
            "multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
            f"but got num_workers={num_workers}"
        )
    if isinstance(context, str):
        import multiprocessing  # only here: it costs import time that every `import mininn` would pay

        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(
                f"multiprocessing_context option should specify a valid start method in {methods!r}, "
                f"but got multiprocessing_context={context!r}"
            )
        return multiprocessing.get_context(context)
    return context


class _SingleProcessDataLoaderIter(Iterator[Any]):
    """One pass over a ``DataLoader``: indices from its sampler, samples from its dataset, batches out."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        self._loader = loader
        self._dataset = loader.dataset
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._indices = iter(loader._index_sampler)
        self._samples = iter(loader.dataset) if loader._iterable else None  # type: ignore[call-overload]
        self._ended = False

    def __iter__(self) -> _SingleProcessDataLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> Any:
        index = next(self._indices)
        data = self._from_iterable(index) if self._samples is not None else self._from_map(index)
        return self._collate_fn(data)

    def _from_map(self, index: Any) -> Any:
        if not self._auto_collation:
            return self._dataset[index]
        getitems = getattr(self._dataset, "__getitems__", None)
        if getitems:
            return getitems(index)
        return [self._dataset[i] for i in index]

    def _from_iterable(self, index: Any) -> Any:
        if self._ended:
            raise StopIteration
        if not self._auto_collation:
            return next(self._samples)  # type: ignore[arg-type]
        data = []
        for _ in index:
            try:
                data.append(next(self._samples))  # type: ignore[arg-type]
            except StopIteration:
                self._ended = True
                break
        if not data or (self._drop_last and len(data) < len(index)):
            raise StopIteration
        return data
