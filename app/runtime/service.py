"""The objects one running service holds, built from its settings."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import models
from app.runtime.dataplane import DataPlane
from app.runtime.manager import ModelManager
from app.runtime.metrics import Metrics
from app.settings import Settings
from app.store.repository import ModelRepository

__all__ = ["Service"]

logger = logging.getLogger("app.runtime.service")


@dataclass
class Service:
    """Settings, repository, loaded models, their data plane, metrics and the inference thread pool."""

    settings: Settings
    repository: ModelRepository
    manager: ModelManager
    plane: DataPlane
    metrics: Metrics
    executor: ThreadPoolExecutor

    @classmethod
    def from_settings(cls, settings: Settings) -> Service:
        """A service whose models are not loaded yet (:meth:`start` loads them)."""
        repository = ModelRepository(settings.model_repository)
        metrics = Metrics()
        executor = ThreadPoolExecutor(
            max_workers=settings.inference_threads, thread_name_prefix="mininn-infer"
        )
        manager = ModelManager(repository, settings, executor, metrics)
        return cls(settings, repository, manager, DataPlane(manager, settings), metrics, executor)

    def seed_if_empty(self) -> None:
        """Fill a missing or empty repository with the bundled demo models (``MININN_SEED_REPOSITORY``)."""
        if not self.settings.seed_repository or not self.repository.is_empty():
            return
        self.repository.root.mkdir(parents=True, exist_ok=True)
        names = models.seed_repository(self.repository.root)
        logger.info(
            "seeded the empty repository %s with %s", self.repository.root, ", ".join(names) or "nothing"
        )

    async def start(self) -> None:
        """Seed the repository if needed, then load every model in it.

        Never raises: a failure is logged, and the server serves what did load.
        """
        try:
            await asyncio.to_thread(self.seed_if_empty)
        except Exception as exc:  # a broken seed must not stop the server from serving the rest
            logger.error("could not seed the repository %s: %s", self.repository.root, exc, exc_info=exc)
        try:
            await self.manager.load_all()
        except Exception as exc:  # e.g. an unreadable repository folder
            logger.error("could not read the repository %s: %s", self.repository.root, exc, exc_info=exc)

    def close(self) -> None:
        """Stop the inference threads (running forwards finish first) and the generation engines."""
        self.manager.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
