"""``DistributedSampler``: each of ``num_replicas`` processes reads its own share of a dataset.

As ``torch.utils.data.distributed.DistributedSampler``: the indices (shuffled
by ``seed + epoch`` unless ``shuffle=False``) are padded by repeating from the
start (or cut, with ``drop_last``) to a multiple of ``num_replicas``, and
replica ``rank`` takes every ``num_replicas``-th one from ``rank``. mininn has
no process groups, so ``num_replicas`` and ``rank`` must be given; training
scripts kept beside a model build it in code the server never runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import mininn
from mininn._factories import Generator
from mininn.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[int]):
    """Replica ``rank``'s share of ``dataset``'s indices, out of ``num_replicas``.

    Args:
        dataset: a map-style dataset (only its length is used).
        num_replicas: how many processes share the dataset (required in mininn).
        rank: this process's place among them, ``0 <= rank < num_replicas`` (required in mininn).
        shuffle: shuffle the indices, differently each epoch (``set_epoch``).
        seed: the shuffle's seed, the same in every replica.
        drop_last: cut the tail that does not divide evenly, instead of repeating indices to fill it.

    Raises:
        RuntimeError: ``num_replicas`` or ``rank`` is not given.
        ValueError: ``rank`` outside ``[0, num_replicas - 1]`` (torch's message).
    """

    def __init__(self, dataset: Any, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            raise RuntimeError("Requires distributed package to be available: mininn has no process groups, "
                               "so give DistributedSampler num_replicas= and rank=")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            generator = Generator().manual_seed(self.seed + self.epoch)
            indices = mininn.randperm(n, generator=generator).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding] if padding else []
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch that seeds the next shuffle (call it before each epoch, as in torch)."""
        self.epoch = epoch
