"""Worker information: mininn's ``DataLoader`` loads in the calling process, so there is never a worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["WorkerInfo", "get_worker_info"]


@dataclass(frozen=True)
class WorkerInfo:
    """What ``torch.utils.data.get_worker_info()`` describes inside a loader worker (never made by mininn)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


def get_worker_info() -> WorkerInfo | None:
    """``None``, as torch answers in the main process: mininn's ``DataLoader`` starts no workers.

    An ``IterableDataset`` that shards its data by ``get_worker_info()`` therefore
    yields all of it, as it does with ``num_workers=0`` in torch.
    """
    return None
