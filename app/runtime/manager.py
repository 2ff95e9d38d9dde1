"""Loaded models: building, loading, warming up, swapping versions, and following the repository.

Loading a model version (:class:`~app.runtime.versions.VersionLoader`) means,
in order: build the servable from
``model.json`` (``models.servable``), load the version's weights strictly,
move the module to its device and dtype (``model.json`` may override
``MININN_DEVICE`` / ``MININN_DTYPE``), ``eval()``, and run one warm-up forward
on the servable's example inputs. A model is ``READY`` once its newest version
is loaded. A model that fails is ``UNAVAILABLE`` with the reason (in its
metadata, the repository index and the log); the other models keep serving.

Versions. ``entry.versions`` has a :class:`~app.runtime.versions.VersionSlot`
for every version in the model's folder; listings and statistics read slots
and load nothing. :meth:`ModelManager.version` returns the loaded
:class:`~app.runtime.versions.ModelVersion`, which a request keeps to its end,
so it finishes on the version it started with. A reload, an upload or a
deletion prepares what it needs first and then replaces ``entry.versions``
with a new dict in one step on the event loop: a request that starts after
that sees only the new versions, and none ever sees a mix.

Version policy (memory stays bounded however many versions the repository holds):

- the newest version is always loaded (at start-up, load, upload, and when it
  appears on disk);
- a (re)load also loads the ``MININN_MAX_OLDER_VERSIONS`` (default 1) next
  newest versions, which count as named;
- an older version is loaded when a request names it (that request waits for
  the load), and stays loaded while it is among the
  ``MININN_MAX_OLDER_VERSIONS`` most recently named older versions;
- when a new newest version arrives, every older version that no request has
  named (the previous newest included) is unloaded. An unloaded version's
  memory goes when the last request holding it finishes.

Following the repository. Every ``MININN_REPOSITORY_POLL_MS`` (250 ms) each
worker process scans the repository (a ``scandir`` and a few ``stat`` calls per
model) and brings itself in line with it: a new newest version is loaded and
swapped in, deleted versions are dropped, a changed ``model.json`` reloads the
model, a new model folder is loaded, a removed one unloaded. So with
``MININN_WORKERS`` > 1, or replicas sharing a volume, every worker serves an
upload within the poll interval plus one load. A model unloaded by request is
left alone until it is loaded again (load and unload concern the worker that
answers).

States follow Triton's repository extension: ``READY``, ``LOADING``,
``UNLOADING``, ``UNAVAILABLE``.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.errors import (
    NotFoundError,
    ServiceError,
    ServiceUnavailableError,
    UnprocessableError,
    unknown_model_error,
)
from app.runtime.metrics import Metrics
from app.runtime.versions import (
    LoadError,
    ModelVersion,
    UnloadedVersions,
    VersionLoader,
    VersionSlot,
    assemble,
    check_spec,
)
from app.settings import Settings
from app.store.repository import (
    SPEC_FILE,
    DiskState,
    FileIdentity,
    ModelRepository,
    ModelSpec,
    is_model_file_name,
    validate_model_name,
)

__all__ = [
    "LoadError",
    "ModelEntry",
    "ModelManager",
    "ModelState",
    "ModelVersion",
    "Publication",
    "VersionSlot",
    "check_spec",
]

logger = logging.getLogger("app.models")


class NoVersionYetError(LoadError):
    """A model with a ``model.json`` and no version yet: a normal step, not a failed load."""


class ModelState(str, enum.Enum):
    """A model's state, as the repository index reports it."""

    READY = "READY"
    LOADING = "LOADING"
    UNLOADING = "UNLOADING"
    UNAVAILABLE = "UNAVAILABLE"


@dataclass
class ModelEntry:
    """What the manager knows about one model name.

    Attributes:
        name: the model's name.
        state: its state.
        reason: why it is not ready (empty when it is).
        versions: a slot per version; the dict is replaced as a whole, never changed in place.
        disk: the model's folder as the last load or repository sync saw it.
        unloaded: unloaded by request; the repository watch leaves it alone.
        requested: versions named by requests, least recently first.
    """

    name: str
    state: ModelState = ModelState.UNAVAILABLE
    reason: str = ""
    versions: dict[int, VersionSlot] = field(default_factory=dict)
    disk: DiskState | None = None
    unloaded: bool = False
    requested: OrderedDict[int, None] = field(default_factory=OrderedDict)

    @property
    def latest(self) -> VersionSlot | None:
        """The slot of the highest version, or None."""
        return self.versions[max(self.versions)] if self.versions else None


@dataclass(frozen=True)
class Publication:
    """What :meth:`ModelManager.publish` did.

    Attributes:
        version: the version number the repository gave the new weights.
        served: whether this process now serves it as the newest version.
        state: the model's state in this process afterwards.
        reason: why it is not ready, if it is not.
    """

    version: int
    served: bool
    state: ModelState
    reason: str


class ModelManager:
    """The models of one service instance.

    Args:
        repository: where models are read from.
        settings: default device, dtype, batch size, queue length and version policy.
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
        # uploads checked at once (each holds about twice its file in memory)
        self.upload_slot = asyncio.Semaphore(1)
        self.loader = VersionLoader(repository, settings, executor, metrics)
        self._unloaded = UnloadedVersions()

    # -- loading -----------------------------------------------------------

    async def load_all(self) -> None:
        """Remove dead writers' leftovers, then load every model side by side; failures are logged."""
        try:
            try:
                await asyncio.to_thread(self.repository.clean_stale)
            except OSError as exc:
                logger.warning("could not clean stale uploads in %s: %s", self.repository.root, exc)
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
        """(Re)load model ``name`` from the repository: a slot per version, the newest loaded.

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
            unknown = unknown_model_error(name, self.repository.model_names())
            raise NotFoundError(f"failed to load '{name}': {unknown.message}")
        async with self._lock(name):
            return await self._load_locked(name, spec)

    async def _load_locked(self, name: str, spec: ModelSpec | None) -> ModelEntry:
        entry = self._entries.setdefault(name, ModelEntry(name))
        was_ready = entry.state is ModelState.READY
        if not was_ready:
            entry.state, entry.reason = ModelState.LOADING, ""
        entry.unloaded = False
        disk = await asyncio.to_thread(self.repository.disk_state, name)
        entry.disk = disk
        try:
            slots = await asyncio.to_thread(self._load_slots, name, spec, disk)
        except NoVersionYetError as exc:  # the documented order: model.json first, then the weights
            self._stop_serving(entry, str(exc))
            logger.info("model %s: %s", name, exc)
            return entry
        except (LoadError, ServiceError) as exc:
            reason = exc.message if isinstance(exc, ServiceError) else str(exc)
            self._record_failure(entry, reason, keep_serving=was_ready)
            raise UnprocessableError(f"failed to load '{name}': {reason}") from None
        newest = max(slots)
        for number, slot in slots.items():  # the older versions loaded count as named
            if slot.loaded is not None and number != newest:
                entry.requested[number] = None
        self._install(entry, slots)
        return entry

    async def unload(self, name: str) -> None:
        """Stop serving model ``name`` (its files stay in the repository).

        Requests already running finish on the version they hold.

        Raises:
            NotFoundError: no such model, loaded or on disk.
        """
        self.entry(name)
        async with self._lock(name):
            entry = self._entries.setdefault(name, ModelEntry(name))
            entry.unloaded = True
            self._stop_serving(entry, "unloaded")
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
        self._stop_serving(entry, reason)
        logger.error("model %s failed to load: %s", entry.name, reason)

    def _stop_serving(self, entry: ModelEntry, reason: str) -> None:
        self._install(entry, {})
        entry.state, entry.reason = ModelState.UNAVAILABLE, reason
        self.metrics.model_ready.labels(entry.name).set(0)

    def _load_slots(
        self, name: str, spec: ModelSpec | None, disk: DiskState | None
    ) -> dict[int, VersionSlot]:
        spec = spec or self.repository.read_spec(name)
        if disk is None or not disk.versions:
            raise NoVersionYetError(
                f"waiting for its first version: upload the weights with PUT /v2/models/{name}/state_dict "
                f"or put them in {name}/1/weights.safetensors in the repository"
            )
        slots = {number: self._new_slot(name, spec, number, source) for number, source in disk.versions}
        for number in sorted(slots)[-(1 + self.settings.max_older_versions) :]:
            self._load_slot(slots[number])
        return slots

    def _new_slot(self, name: str, spec: ModelSpec, version: int, source: FileIdentity | None) -> VersionSlot:
        return self.loader.slot(name, spec, version, source, self._load_on_use)

    def prepare(self, name: str, spec: ModelSpec, servable: Any, where: str = "new version") -> None:
        """:meth:`VersionLoader.prepare <app.runtime.versions.VersionLoader.prepare>` (blocking)."""
        self.loader.prepare(name, spec, servable, where)

    def _load_slot(self, slot: VersionSlot) -> ModelVersion:
        """Load ``slot``'s version if it is not loaded (blocking; one load per slot at a time).

        Raises:
            LoadError: the step that failed.
        """
        with slot.lock:
            if slot.loaded is None:
                loaded = self.loader.load(slot.name, slot.spec, slot.version, slot.statistics)
                if slot.source is not None and loaded.source != slot.source:
                    logger.warning(
                        "model %s version %d changed on disk while loading", slot.name, slot.version
                    )
                slot.loaded = loaded
            return slot.loaded

    def _load_on_use(self, slot: VersionSlot) -> ModelVersion:
        """How a slot loads itself when a request or a caller needs its weights."""
        try:
            loaded = self._load_slot(slot)
        except (LoadError, ServiceError) as exc:
            reason = exc.message if isinstance(exc, ServiceError) else str(exc)
            message = f"failed to load '{slot.name}' version {slot.version}: {reason}"
            raise UnprocessableError(message) from None
        entry = self._entries.get(slot.name)
        if entry is not None and entry.versions.get(slot.version) is slot:
            self._mark_requested(entry, slot.version)
        return loaded

    # -- swapping ----------------------------------------------------------

    def _install(self, entry: ModelEntry, slots: dict[int, VersionSlot]) -> None:
        """Serve ``slots`` from now on (one assignment: a request sees the old or the new set)."""
        previous = entry.versions
        entry.versions = slots
        entry.requested = OrderedDict((n, None) for n in entry.requested if n in slots)
        if slots:
            entry.state, entry.reason = ModelState.READY, ""
            self.metrics.model_ready.labels(entry.name).set(1)
        for number, old in previous.items():
            new = slots.get(number)
            if new is not old:
                self._unload_slot(old, forget_metrics=new is None or new.loaded is None)
        if slots:
            self._unload_unrequested(entry)

    def _unload_unrequested(self, entry: ModelEntry) -> None:
        """Unload the older versions beyond the most recently named ``MININN_MAX_OLDER_VERSIONS``."""
        newest = max(entry.versions)
        named = [n for n in entry.requested if n in entry.versions and n < newest]
        limit = self.settings.max_older_versions
        keep = set(named[len(named) - limit :]) if limit else set()
        for number, slot in entry.versions.items():
            if number != newest and number not in keep:
                self._unload_slot(slot)

    def _unload_slot(self, slot: VersionSlot, *, forget_metrics: bool = True) -> None:
        """Drop the slot's loaded version: requests holding it finish; then its memory goes."""
        if slot.loaded is None:
            return
        self._unloaded.track(slot.loaded.servable)
        if slot.loaded.engine is not None:  # running sequences finish; new ones go to the new version
            slot.loaded.engine.close()
        slot.loaded = None
        logger.info("model %s version %d unloaded", slot.name, slot.version)
        if forget_metrics:
            self.metrics.forget_version(slot.name, slot.version)

    async def publish(
        self,
        name: str,
        spec: ModelSpec,
        servable: Any,
        commit: Callable[[], tuple[int, FileIdentity | None]],
        seconds: float = 0.0,
    ) -> Publication:
        """Commit new weights to the repository and serve them, in one step per model.

        ``commit`` (run on a worker thread, under the model's lock, so the
        repository watch cannot load the same files a second time) writes the
        version and returns its number and weights file identity. The prepared
        ``servable`` (see :meth:`prepare`) then becomes the newest version, unless
        the model was unloaded by request or a newer version is already served.
        """
        async with self._lock(name):
            number, source = await asyncio.to_thread(commit)
            entry = self._entries.setdefault(name, ModelEntry(name))
            latest = entry.latest
            newer_served = latest is not None and entry.state is ModelState.READY and latest.version > number
            if entry.unloaded or newer_served:
                return Publication(number, False, entry.state, entry.reason)
            slot = self._new_slot(name, spec, number, source)
            slot.loaded = self.loader.make_version(
                name, spec, number, servable, source, seconds, slot.statistics
            )
            self._install(entry, {**entry.versions, number: slot})
            return Publication(number, True, entry.state, entry.reason)

    async def put_spec(self, name: str, text: bytes, spec: ModelSpec) -> tuple[bool, ModelEntry, str]:
        """Create or replace ``model.json`` and reload the model from it in this process.

        The architecture is built with the config first (:func:`check_spec`);
        then the file is written atomically and the model reloaded, unless it
        was unloaded by request. A reload that fails (the weights no longer fit)
        keeps a ready model serving its previous versions.

        Returns:
            Whether the model is new, its entry, and the reload's error ("" if none).

        Raises:
            BadRequestError: invalid name.
            UnprocessableError: unknown architecture or bad config (the body lists
                ``architectures`` or ``accepted_keys``).
        """
        validate_model_name(name)
        await asyncio.to_thread(check_spec, spec, self.repository.model_dir(name))
        async with self._lock(name):
            created = await asyncio.to_thread(self.repository.write_spec, name, text)
            logger.info("model %s: model.json %s", name, "created" if created else "replaced")
            error = ""
            entry = self._entries.get(name)
            if entry is None or not entry.unloaded:
                try:
                    await self._load_locked(name, None)
                except UnprocessableError as exc:
                    error = exc.message
        return created, self.entry(name), error

    async def put_file(self, name: str, filename: str, data: bytes) -> tuple[bool, ModelEntry | None, str]:
        """Create or replace a code or data file of the model (arrived over HTTP), then reload it.

        A ``.py`` file of a model whose ``model.json`` names a ``module`` is checked first
        (:func:`~app.runtime.versions.assemble` on a copy of the folder with the new file and
        the newest version), and refused, with nothing changed, when it does not serve.

        Returns:
            Whether the file is new, the model's entry (None while it has no ``model.json``),
            and the reload's error ("" if none).

        Raises:
            BadRequestError: invalid model or file name.
            UnprocessableError: the code does not serve; the message says why.
        """
        validate_model_name(name)
        async with self._lock(name):
            if filename.endswith(".py"):
                await asyncio.to_thread(self._check_code, name, filename, data)
            write = functools.partial(self.repository.write_file, from_http=True)
            created = await asyncio.to_thread(write, name, filename, data)
            logger.info("model %s: %s %s", name, filename, "created" if created else "replaced")
            error = ""
            entry = self._entries.get(name)
            has_spec = (self.repository.model_dir(name) / SPEC_FILE).is_file()
            if has_spec and (entry is None or not entry.unloaded):
                try:
                    await self._load_locked(name, None)
                except UnprocessableError as exc:
                    error = exc.message
        return created, (self.entry(name) if has_spec else None), error

    def _check_code(self, name: str, filename: str, data: bytes) -> None:
        """Compile the file; when the model is code, build, load and warm it up with the file in place."""
        folder = self.repository.model_dir(name)
        try:
            compile(data, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            line = f":{exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
            raise UnprocessableError(f"the uploaded {filename}{line} is not valid Python: {exc}") from None
        try:
            spec = self.repository.read_spec(name)
        except ServiceError:
            return  # no model.json yet: the code is checked when one names it
        if spec.module is None:
            return
        versions = self.repository.versions(name)
        weights = self.repository.weights_path(name, versions[-1]) if versions else None
        device, dtype = self.loader.placement(spec)
        with tempfile.TemporaryDirectory(prefix="mininn-code-check-") as scratch:
            copy = Path(scratch)
            for path in folder.iterdir():
                if path.is_file() and (path.suffix == ".py" or path.name == SPEC_FILE):
                    shutil.copyfile(path, copy / path.name)
                elif path.is_file() and is_model_file_name(path.name):
                    (copy / path.name).symlink_to(path)
                elif path.is_dir() and is_model_file_name(path.name):  # a code package, not a version
                    shutil.copytree(path, copy / path.name)
            (copy / filename).write_bytes(data)
            try:
                assemble(spec, copy, weights, device, dtype, f"with the uploaded {filename}")
            except LoadError as exc:
                raise UnprocessableError(
                    f"the uploaded {filename} does not serve, nothing changed: {exc}"
                ) from None

    async def remove_version(self, name: str, version: int) -> ModelEntry:
        """Delete ``version`` from the repository and stop serving it.

        When it was the newest, the next newest is served before this returns.

        Raises:
            NotFoundError: no such model or version on disk.
        """
        validate_model_name(name)
        async with self._lock(name):
            await asyncio.to_thread(self.repository.delete_version, name, version)
            logger.info("model %s version %d deleted from the repository", name, version)
            await self._sync_locked(name)
        return self.entry(name)

    # -- following the repository -------------------------------------------

    async def watch(self) -> None:
        """Follow the repository forever (every ``MININN_REPOSITORY_POLL_MS``; 0: never).

        Each tick also frees unloaded versions (:meth:`collect_unloaded`).
        """
        follow = self.settings.repository_poll_ms > 0
        interval = self.settings.repository_poll_ms / 1000 if follow else 0.25
        while True:
            await asyncio.sleep(interval)
            self.collect_unloaded()
            if not follow or not self.startup_complete:
                continue
            try:
                await self.sync_with_repository()
            except Exception as exc:  # a watch that dies would silently stop following the repository
                logger.error("repository scan failed: %s", exc, exc_info=exc)

    def collect_unloaded(self) -> int:
        """Free the unloaded versions no request holds any more; how many are still held."""
        return self._unloaded.collect()

    async def sync_with_repository(self) -> None:
        """One scan of the repository; every model that changed on disk is brought in line."""
        scans = await asyncio.to_thread(self._scan_all)
        changed = [name for name, disk in scans.items() if self._out_of_date(name, disk)]
        await asyncio.gather(*(self._sync(name) for name in changed))

    def _out_of_date(self, name: str, disk: DiskState | None) -> bool:
        entry = self._entries.get(name)
        if entry is None:
            return disk is not None
        return not entry.unloaded and entry.disk != disk

    def _scan_all(self) -> dict[str, DiskState | None]:
        names = set(self.repository.model_names()) | set(self._entries)
        return {name: self.repository.disk_state(name) for name in sorted(names)}

    async def _sync(self, name: str) -> None:
        async with self._lock(name):
            try:
                await self._sync_locked(name)
            except ServiceError:
                pass  # logged and recorded in the entry

    async def _sync_locked(self, name: str) -> None:
        """Make the versions of ``name`` match its folder (the model's lock is held)."""
        disk = await asyncio.to_thread(self.repository.disk_state, name)
        entry = self._entries.get(name)
        if entry is not None and entry.unloaded:
            return
        if disk is None:
            if entry is not None:
                self._stop_serving(entry, "removed from the repository")
                entry.disk = None
                logger.info("model %s removed from the repository: unloaded", name)
            return
        latest = entry.latest if entry is not None and entry.state is ModelState.READY else None
        if latest is None or entry is None or entry.disk is None or not entry.disk.same_model(disk):
            logger.info("model %s changed in the repository: reloading", name)
            await self._load_locked(name, None)
            return
        await self._follow_versions(entry, disk, latest.spec)

    async def _follow_versions(self, entry: ModelEntry, disk: DiskState, spec: ModelSpec) -> None:
        """New slots for new versions, none for deleted ones; the newest loaded (same ``model.json``)."""
        entry.disk = disk
        slots: dict[int, VersionSlot] = {}
        for number, source in disk.versions:
            old = entry.versions.get(number)
            slots[number] = (
                old
                if old is not None and old.source == source
                else self._new_slot(entry.name, spec, number, source)
            )
        reason = "no versions left in the repository"
        while slots:
            newest = slots[max(slots)]
            if newest.loaded is not None:
                break
            try:
                await asyncio.to_thread(self._load_slot, newest)
            except (LoadError, ServiceError) as exc:
                reason = exc.message if isinstance(exc, ServiceError) else str(exc)
                self._record_failure(entry, reason, keep_serving=True)
                del slots[newest.version]  # serve the next newest; retried when the folder changes
                continue
            logger.info("model %s: serving version %d from the repository", entry.name, newest.version)
        if not slots:
            self._stop_serving(entry, reason)
            return
        self._install(entry, slots)

    def close(self) -> None:
        """Close every generation engine (at shutdown: running sequences finish, new ones are refused)."""
        for entry in self._entries.values():
            for slot in entry.versions.values():
                loaded = slot.loaded
                if loaded is not None and loaded.engine is not None:
                    loaded.engine.close()

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
        raise unknown_model_error(name, self.repository.model_names())

    def is_known(self, name: str) -> bool:
        """Whether ``name`` is loaded or was tried (cheap; for metric labels)."""
        return name in self._entries

    def version(self, name: str, version: int | None = None) -> ModelVersion:
        """The loaded version to serve: ``version``, or the highest when None.

        An older version that is not loaded is loaded now (see the version
        policy); the caller waits for the load.

        Raises:
            NotFoundError: unknown model, or a version it does not have.
            ServiceUnavailableError: the model is not ready (503 with the reason).
            UnprocessableError: the named version fails to load.
        """
        entry = self.entry(name)
        if entry.state is not ModelState.READY:
            detail = f" ({entry.reason})" if entry.reason else ""
            retry = 1 if entry.state is ModelState.LOADING else None
            raise ServiceUnavailableError(
                f"model '{name}' is not ready: {entry.state.value.lower()}{detail}", retry_after=retry
            )
        if version is None:
            return entry.latest.load()  # type: ignore[union-attr] - READY implies a loaded newest
        slot = entry.versions.get(version)
        if slot is None:
            known = ", ".join(str(v) for v in sorted(entry.versions))
            raise NotFoundError(f"model '{name}' has no version {version}; its versions are {known}")
        loaded = slot.load()
        self._mark_requested(entry, version)
        return loaded

    def _mark_requested(self, entry: ModelEntry, version: int) -> None:
        entry.requested[version] = None
        entry.requested.move_to_end(version)
        self._unload_unrequested(entry)

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
