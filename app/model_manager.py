"""Loaded models: building, loading, warming up, and the state of each model.

Loading a model version means, in order: build the servable from
``model.json`` (``models.servable``), load the version's weights strictly,
move the module to its device and dtype (``model.json`` may override
``MININN_DEVICE`` / ``MININN_DTYPE``), ``eval()``, and run one warm-up forward
on the servable's example inputs. Only then is the model ``READY``. A model
that fails is ``UNAVAILABLE`` with the reason (in its metadata, the repository
index and the log); the other models keep serving. Reloading a ready model
builds the new versions first and swaps them in at once, so requests see the
old or the new model, never a mix.

States follow Triton's repository extension: ``READY``, ``LOADING``,
``UNLOADING``, ``UNAVAILABLE``.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import mininn
import models
from app.errors import NotFoundError, ServiceError, ServiceUnavailableError, UnprocessableError
from app.metrics import Metrics
from app.repository import ModelRepository, ModelSpec, validate_model_name
from app.runner import ModelRunner
from app.settings import Settings
from app.statistics import InferenceStatistics
from mininn.serialization import load as load_checkpoint

__all__ = ["LoadError", "ModelEntry", "ModelManager", "ModelState", "ModelVersion"]

logger = logging.getLogger("app.models")


class ModelState(str, enum.Enum):
    """A model's state, as the repository index reports it."""

    READY = "READY"
    LOADING = "LOADING"
    UNLOADING = "UNLOADING"
    UNAVAILABLE = "UNAVAILABLE"


class LoadError(Exception):
    """A model version could not be loaded; the message names the step that failed."""


@dataclass
class ModelVersion:
    """One loaded, warmed-up model version.

    Attributes:
        name: the model's name.
        version: the version number.
        spec: the ``model.json`` it was built from.
        servable: the ``models.Servable`` (its ``module`` is on ``device`` in eval mode).
        runner: where its forward passes run.
        statistics: its inference statistics.
        device: the device its module lives on.
        dtype: its floating dtype name.
        max_batch_size: largest batch per request (0: not batched).
        load_seconds: how long loading and warm-up took.
    """

    name: str
    version: int
    spec: ModelSpec
    servable: Any
    runner: ModelRunner
    statistics: InferenceStatistics
    device: str
    dtype: str
    max_batch_size: int
    load_seconds: float

    @property
    def module(self) -> mininn.nn.Module:
        """The mininn module."""
        return self.servable.module

    @property
    def inputs(self) -> list[Any]:
        """The input ``TensorSpec`` list."""
        return list(self.servable.inputs)

    @property
    def outputs(self) -> list[Any]:
        """The output ``TensorSpec`` list."""
        return list(self.servable.outputs)


@dataclass
class ModelEntry:
    """What the manager knows about one model name."""

    name: str
    state: ModelState = ModelState.UNAVAILABLE
    reason: str = ""
    versions: dict[int, ModelVersion] = field(default_factory=dict)

    @property
    def latest(self) -> ModelVersion | None:
        """The highest loaded version, or None."""
        return self.versions[max(self.versions)] if self.versions else None


class ModelManager:
    """The models of one service instance.

    Args:
        repository: where models are read from.
        settings: default device, dtype, batch size and queue length.
        executor: the inference thread pool the runners share.
        metrics: the service's metrics.
    """

    def __init__(
        self, repository: ModelRepository, settings: Settings, executor: Executor, metrics: Metrics
    ) -> None:
        self.repository = repository
        self.settings = settings
        self.executor = executor
        self.metrics = metrics
        self.startup_complete = False
        self._entries: dict[str, ModelEntry] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # -- loading -----------------------------------------------------------

    async def load_all(self) -> None:
        """Load every model of the repository, side by side; failures are logged, not raised."""
        try:
            await asyncio.gather(*(self._load_quietly(name) for name in self.repository.model_names()))
        finally:
            self.startup_complete = True
            ready = sum(e.state is ModelState.READY for e in self._entries.values())
            logger.info("start-up load done: %d of %d models ready", ready, len(self._entries))

    async def _load_quietly(self, name: str) -> None:
        try:
            await self.load(name)
        except ServiceError:
            pass  # already logged and recorded in the entry

    async def load(self, name: str, spec: ModelSpec | None = None) -> ModelEntry:
        """(Re)load every version of model ``name`` from the repository.

        Args:
            name: the model's name.
            spec: a ``model.json`` to use instead of the one on disk (not saved).

        Raises:
            NotFoundError: no such model in the repository.
            UnprocessableError: loading failed; the message says why. A model that
                was ready before keeps serving its previous versions.
        """
        validate_model_name(name)
        if not self.repository.has_model(name):
            self.repository.read_spec(name)  # raises NotFoundError listing the models
        async with self._lock(name):
            entry = self._entries.setdefault(name, ModelEntry(name))
            was_ready = entry.state is ModelState.READY
            if not was_ready:
                entry.state, entry.reason = ModelState.LOADING, ""
            try:
                versions = await asyncio.to_thread(self._load_versions, name, spec)
            except (LoadError, ServiceError) as exc:
                reason = exc.message if isinstance(exc, ServiceError) else str(exc)
                self._record_failure(entry, reason, keep_serving=was_ready)
                raise UnprocessableError(f"failed to load model '{name}': {reason}") from None
            entry.versions, entry.state, entry.reason = versions, ModelState.READY, ""
            self.metrics.model_ready.labels(name).set(1)
            return entry

    async def unload(self, name: str) -> None:
        """Stop serving model ``name`` (its files stay in the repository).

        Raises:
            NotFoundError: no such model, loaded or on disk.
        """
        self.entry(name)
        async with self._lock(name):
            entry = self._entries.setdefault(name, ModelEntry(name))
            # requests already running keep their ModelVersion; new ones get 503 from here on
            entry.versions, entry.state, entry.reason = {}, ModelState.UNAVAILABLE, "unloaded"
            self.metrics.model_ready.labels(name).set(0)
            logger.info("model %s unloaded", name)

    def _lock(self, name: str) -> asyncio.Lock:
        return self._locks.setdefault(name, asyncio.Lock())

    def _record_failure(self, entry: ModelEntry, reason: str, *, keep_serving: bool) -> None:
        self.metrics.model_load_failures.labels(entry.name).inc()
        if keep_serving:
            logger.error(
                "model %s: reload failed, still serving the previous versions: %s", entry.name, reason
            )
            return
        entry.state, entry.reason, entry.versions = ModelState.UNAVAILABLE, reason, {}
        self.metrics.model_ready.labels(entry.name).set(0)
        logger.error("model %s failed to load: %s", entry.name, reason)

    def _load_versions(self, name: str, spec: ModelSpec | None) -> dict[int, ModelVersion]:
        spec = spec or self.repository.read_spec(name)
        numbers = self.repository.versions(name)
        if not numbers:
            raise LoadError(f"no versions: put the weights in {name}/1/weights.safetensors in the repository")
        return {number: self._load_version(name, spec, number) for number in numbers}

    def _load_version(self, name: str, spec: ModelSpec, version: int) -> ModelVersion:
        started = time.perf_counter()
        where = f"version {version}"
        with _step(f"{where}: building architecture '{spec.architecture}'"):
            servable = models.servable(
                spec.architecture, spec.config, resource_dir=self.repository.model_dir(name)
            )
        path = self.repository.weights_path(name, version)
        with _step(f"{where}: reading {path.parent.name}/{path.name}"):
            state_dict = load_checkpoint(path)
        with _step(f"{where}: loading the state dict"):
            servable.module.load_state_dict(state_dict, strict=True)
        device, dtype = spec.device or self.settings.device, spec.dtype or self.settings.dtype
        with _step(f"{where}: moving the module to {device} / {dtype}"):
            servable.module.to(device, getattr(mininn, dtype))
            servable.module.eval()
        statistics = InferenceStatistics(name, version)
        runner = ModelRunner(
            name,
            version,
            servable,
            self.executor,
            statistics,
            max_queue=self.settings.max_queue,
            metrics=self.metrics,
        )
        with _step(f"{where}: warm-up forward on the example inputs"):
            runner.warm_up()
        seconds = time.perf_counter() - started
        self.metrics.model_load_seconds.labels(name, str(version)).set(seconds)
        logger.info(
            "model %s version %d ready on %s/%s in %.0f ms", name, version, device, dtype, seconds * 1e3
        )
        return ModelVersion(
            name,
            version,
            spec,
            servable,
            runner,
            statistics,
            device,
            dtype,
            self._max_batch_size(spec, servable),
            seconds,
        )

    def _max_batch_size(self, spec: ModelSpec, servable: Any) -> int:
        if not servable.batchable:
            return 0
        return self.settings.max_batch_size if spec.max_batch_size is None else spec.max_batch_size

    # -- lookup ------------------------------------------------------------

    def entry(self, name: str) -> ModelEntry:
        """The model's entry (a not-yet-loaded repository model gets a fresh one).

        Raises:
            BadRequestError: invalid name.
            NotFoundError: not loaded and not in the repository.
        """
        validate_model_name(name)
        entry = self._entries.get(name)
        if entry is not None:
            return entry
        if self.repository.has_model(name):
            return ModelEntry(name, reason=f"not loaded; load it with POST /v2/repository/models/{name}/load")
        self.repository.read_spec(name)  # raises NotFoundError naming the available models
        raise NotFoundError(f"unknown model '{name}'")  # pragma: no cover - read_spec raised

    def is_known(self, name: str) -> bool:
        """Whether ``name`` is loaded or was tried (cheap; for metric labels)."""
        return name in self._entries

    def version(self, name: str, version: int | None = None) -> ModelVersion:
        """The loaded version to serve: ``version``, or the highest when None.

        Raises:
            NotFoundError: unknown model, or a version it does not have.
            ServiceUnavailableError: the model is not ready (503 with the reason).
        """
        entry = self.entry(name)
        if entry.state is not ModelState.READY:
            detail = f" ({entry.reason})" if entry.reason else ""
            retry = 1 if entry.state is ModelState.LOADING else None
            raise ServiceUnavailableError(
                f"model '{name}' is not ready: {entry.state.value.lower()}{detail}", retry_after=retry
            )
        if version is None:
            return entry.latest  # type: ignore[return-value] - READY implies a version
        found = entry.versions.get(version)
        if found is None:
            known = ", ".join(str(v) for v in sorted(entry.versions))
            raise NotFoundError(f"model '{name}' has no version {version}; its versions are {known}")
        return found

    def disk_versions(self, name: str) -> list[int]:
        """The versions in the repository (empty when the folder vanished)."""
        try:
            return self.repository.versions(name)
        except NotFoundError:
            return []

    def names(self) -> list[str]:
        """Every model loaded, tried, or present in the repository, sorted."""
        return sorted(set(self._entries) | set(self.repository.model_names()))

    def entries(self) -> Iterator[ModelEntry]:
        """Entries of :meth:`names`, in order."""
        for name in self.names():
            yield self.entry(name)

    def index(self, ready_only: bool = False) -> list[dict[str, str]]:
        """The repository index: ``[{"name", "version", "state", "reason"}, ...]``."""
        rows = []
        for entry in self.entries():
            if ready_only and entry.state is not ModelState.READY:
                continue
            latest = (
                entry.latest.version if entry.latest else max(self.disk_versions(entry.name), default=None)
            )
            row = {"name": entry.name}
            if latest is not None:
                row["version"] = str(latest)
            rows.append({**row, "state": entry.state.value, "reason": entry.reason})
        return rows

    @property
    def ready(self) -> bool:
        """Whether the start-up load pass is over (failed models do not hold the server back)."""
        return self.startup_complete


@contextmanager
def _step(what: str) -> Iterator[None]:
    try:
        yield
    except LoadError:
        raise
    except ServiceError as exc:
        raise LoadError(f"{what}: {exc.message}") from exc
    except Exception as exc:  # any failure of user-supplied files or code
        logger.debug("load step failed: %s", what, exc_info=exc)
        raise LoadError(f"{what}: {_describe(exc)}") from exc


def _describe(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if isinstance(exc, (ValueError, RuntimeError, KeyError)) else f"{type(exc).__name__}: {text}"
