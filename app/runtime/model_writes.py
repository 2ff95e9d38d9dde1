"""Writing a model's folder over HTTP: ``model.json`` and its files, checked before they replace anything.

:class:`ModelWrites` is the part of :class:`~app.runtime.manager.ModelManager` that
writes: ``PUT /v2/repository/models/{m}`` (:meth:`ModelWrites.put_spec`) and
``PUT /v2/repository/models/{m}/files/{name}`` (:meth:`ModelWrites.put_file`). Each
change is loaded the way the server will load it before it is written, under the
model's lock; a change that does not serve is refused with the reason and changes
nothing, on disk or in memory.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from app.errors import ServiceError, UnprocessableError
from app.runtime.versions import LoadError, VersionLoader, VersionSlot, assemble, check_spec
from app.store.repository import (
    SPEC_FILE,
    DiskState,
    ModelRepository,
    ModelSpec,
    is_model_file_name,
    validate_model_name,
)

if TYPE_CHECKING:
    from app.runtime.manager import ModelEntry

__all__ = ["ModelWrites"]

logger = logging.getLogger("app.models")


class ModelWrites:
    """The writes of :class:`~app.runtime.manager.ModelManager` (a mix-in: it uses the manager's lock,
    loads and entries)."""

    repository: ModelRepository
    loader: VersionLoader
    _entries: dict[str, ModelEntry]

    if TYPE_CHECKING:

        def _lock(self, name: str) -> asyncio.Lock: ...

        async def _load_locked(self, name: str, spec: ModelSpec | None) -> ModelEntry: ...

        def _load_slots(
            self, name: str, spec: ModelSpec | None, disk: DiskState | None
        ) -> dict[int, VersionSlot]: ...

        async def _serve_checked(self, name: str, slots: dict[int, VersionSlot] | None) -> None: ...

        def entry(self, name: str) -> ModelEntry: ...

    async def put_spec(self, name: str, text: bytes, spec: ModelSpec) -> tuple[bool, ModelEntry]:
        """Create or replace ``model.json`` once it serves, and serve the model from it in this process.

        Nothing is written unless the new ``model.json`` serves: it is built (:func:`check_spec`),
        then loaded with the newest version's weights and warmed up, as a reload would; a
        model without versions yet is built and warmed up on its initial weights (its state
        dict is checked when the first version is uploaded). Only then is the file written
        atomically and the versions just loaded served, unless the model was unloaded by
        request (it then stays unloaded).

        Returns:
            Whether the model is new, and its entry.

        Raises:
            BadRequestError: invalid name.
            UnprocessableError: unknown architecture or bad config (the body lists
                ``architectures`` or ``accepted_keys``), or a ``model.json`` that does not
                load or warm up; the file and the served model are as they were.
        """
        validate_model_name(name)
        await asyncio.to_thread(check_spec, spec, self.repository.model_dir(name))
        async with self._lock(name):
            entry = self._entries.get(name)
            serve = entry is None or not entry.unloaded
            disk = await asyncio.to_thread(self.repository.disk_state, name)
            try:
                slots = await asyncio.to_thread(self._check_spec_loads, name, spec, disk, serve)
            except (LoadError, ServiceError) as exc:
                raise _refused_spec(name, exc, disk) from None
            created = await asyncio.to_thread(self.repository.write_spec, name, text)
            logger.info("model %s: model.json %s", name, "created" if created else "replaced")
            if serve:
                await self._serve_checked(name, slots)
        return created, self.entry(name)

    def _check_spec_loads(
        self, name: str, spec: ModelSpec, disk: DiskState | None, keep: bool
    ) -> dict[int, VersionSlot] | None:
        """Load ``spec`` as a reload would (blocking): the loaded slots if ``keep``, else None.

        Raises:
            LoadError: the step that failed.
        """
        folder = self.repository.model_dir(name)
        device, dtype = self.loader.placement(spec)
        if disk is None or not disk.versions:
            assemble(spec, folder, None, device, dtype, "no version yet, on its initial weights")
            return None
        if keep:
            return self._load_slots(name, spec, disk)
        newest = disk.numbers[-1]
        assemble(spec, folder, self.repository.weights_path(name, newest), device, dtype, f"version {newest}")
        return None

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


def _refused_spec(name: str, exc: LoadError | ServiceError, disk: DiskState | None) -> UnprocessableError:
    """422 for a ``model.json`` that does not load: what failed, and that nothing changed."""
    reason = exc.message if isinstance(exc, ServiceError) else str(exc)
    hint = ""
    if disk is not None and disk.versions and ": loading the state dict: " in reason:
        hint = (
            f". A model.json for other weights needs a model name of its own, or the versions it does not "
            f"fit deleted first (DELETE /v2/models/{name}/versions/{{v}}; its versions: "
            f"{', '.join(map(str, disk.numbers))})"
        )
    return UnprocessableError(f"model.json refused, nothing changed: {reason}{hint}")
