"""A model's versions in one process: a slot per version on disk, holding it when it is loaded.

:class:`ModelVersion` is one loaded, warmed-up version: the object a request
takes when it starts and keeps to its end. :class:`VersionSlot` is one version
of the repository as this process knows it, loaded or not: listings and
statistics read slots without loading anything; ``slot.loaded`` is the
:class:`ModelVersion` while the version is loaded, and the manager drops it
to unload the version (requests holding it finish first; its memory goes
with the last of them). A slot offers the same attributes as a
:class:`ModelVersion`; those that need the weights (``servable``, ``runner``,
``module``) load the version on first use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mininn
import models
from app.repository import FileIdentity, ModelSpec
from app.runner import ModelRunner
from app.statistics import InferenceStatistics

__all__ = ["ModelVersion", "VersionSlot"]


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
        source: the identity of the weights file it was loaded from (None: unknown).
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
    source: FileIdentity | None = None

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


class VersionSlot:
    """One version of a model on disk, loaded (``loaded``) or not.

    Args:
        name: the model's name.
        version: the version number.
        spec: the ``model.json`` the version is built from.
        source: the identity of its weights file.
        device: the device it loads onto.
        dtype: its floating dtype name.
        max_batch_size: largest batch per request (0: not batched).
        loader: loads the version (``loader(slot) -> ModelVersion``, blocking),
            for attributes that need the weights.
    """

    def __init__(
        self,
        name: str,
        version: int,
        spec: ModelSpec,
        source: FileIdentity | None,
        device: str,
        dtype: str,
        max_batch_size: int,
        loader: Callable[[VersionSlot], ModelVersion],
    ) -> None:
        self.name, self.version, self.spec, self.source = name, version, spec, source
        self.device, self.dtype, self.max_batch_size = device, dtype, max_batch_size
        self.statistics = InferenceStatistics(name, version)
        self.loaded: ModelVersion | None = None
        self.lock = threading.Lock()  # one load at a time
        self._loader = loader
        self._signature: Any = None

    def __repr__(self) -> str:
        state = "loaded" if self.loaded is not None else "not loaded"
        return f"VersionSlot({self.name!r}, version={self.version}, {state})"

    def load(self) -> ModelVersion:
        """The loaded version, loading it now if needed (blocking)."""
        loaded = self.loaded
        return loaded if loaded is not None else self._loader(self)

    @property
    def servable(self) -> Any:
        """The servable (loads the version)."""
        return self.load().servable

    @property
    def runner(self) -> ModelRunner:
        """The runner (loads the version)."""
        return self.load().runner

    @property
    def module(self) -> mininn.nn.Module:
        """The mininn module (loads the version)."""
        return self.load().module

    @property
    def load_seconds(self) -> float:
        """How long the last load took (0 when not loaded)."""
        loaded = self.loaded
        return loaded.load_seconds if loaded is not None else 0.0

    @property
    def inputs(self) -> list[Any]:
        """The input ``TensorSpec`` list (from the architecture: no load)."""
        loaded = self.loaded
        return loaded.inputs if loaded is not None else list(self._describe().inputs)

    @property
    def outputs(self) -> list[Any]:
        """The output ``TensorSpec`` list (from the architecture: no load)."""
        loaded = self.loaded
        return loaded.outputs if loaded is not None else list(self._describe().outputs)

    def _describe(self) -> Any:
        if self._signature is None:
            architecture = models.get_architecture(self.spec.architecture)
            self._signature = architecture.signature(architecture.make_config(self.spec.config))
        return self._signature
