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

:class:`VersionLoader` loads a version: build the servable from ``model.json``
(``models.servable``), load the version's weights strictly, move the module to
its device and dtype (``model.json`` may override ``MININN_DEVICE`` /
``MININN_DTYPE``), ``eval()``, and run one warm-up forward on the servable's
example inputs. A failed step raises :class:`LoadError` naming the step.
:class:`UnloadedVersions` makes sure an unloaded version's memory really goes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mininn
import models
import models.gguf
from app.errors import ServiceError, UnprocessableError
from app.runtime.batching import BatchingPolicy
from app.runtime.generation import TextGenerator
from app.runtime.generation_engine import GenerationEngine
from app.runtime.labels import check_labels_key, read_labels
from app.runtime.metrics import Metrics
from app.runtime.runner import ModelRunner
from app.runtime.statistics import InferenceStatistics
from app.settings import Settings
from app.store.repository import FileIdentity, ModelRepository, ModelSpec, file_identity
from mininn.serialization import load as load_checkpoint
from models.causal_lm import causal_lm_servable
from models.config import accepted_keys

__all__ = [
    "LoadError",
    "ModelVersion",
    "UnloadedVersions",
    "VersionLoader",
    "VersionSlot",
    "assemble",
    "build_servable",
    "check_spec",
    "describe_spec",
    "prepare_servable",
]

logger = logging.getLogger("app.models")


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
        source: the identity of the weights file it was loaded from (None: unknown).
        labels: output name -> its class labels (``"labels"`` in ``model.json``; :mod:`app.runtime.labels`).
        batching: its batching policy (``dynamic_batching``/``batch_delay_ms`` over the settings),
            read once when the version loads.
        engine: its generation engine, for a text-generation model (started with the version,
            closed when it is unloaded); None for other models.
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
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    batching: BatchingPolicy = field(default_factory=BatchingPolicy)
    engine: GenerationEngine | None = None

    @property
    def generator(self) -> TextGenerator | None:
        """The servable's text generator (None: not a text-generation model)."""
        return getattr(self.servable, "generator", None)

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

    @functools.cached_property
    def output_datatypes(self) -> dict[str, str]:
        """Output name -> V2 datatype, for encoding responses."""
        return {spec.name: spec.datatype for spec in self.servable.outputs}

    @functools.cached_property
    def output_shapes(self) -> dict[str, tuple[int, ...]]:
        """Output name -> declared shape (``-1``: any size; first: the batch dimension)."""
        return {spec.name: tuple(spec.shape) for spec in self.servable.outputs}


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
            self._signature = describe_spec(self.spec)
        return self._signature


class VersionLoader:
    """Loads model versions for one service instance.

    Args:
        repository: where weights are read from.
        settings: default device, dtype, batch size and queue length.
        executor: the inference thread pool the runners share.
        metrics: the service's metrics.
    """

    def __init__(
        self, repository: ModelRepository, settings: Settings, executor: Executor, metrics: Metrics
    ) -> None:
        self.repository, self.settings, self.executor, self.metrics = repository, settings, executor, metrics

    def slot(
        self,
        name: str,
        spec: ModelSpec,
        version: int,
        source: FileIdentity | None,
        loader: Callable[[VersionSlot], ModelVersion],
    ) -> VersionSlot:
        """A not-yet-loaded slot for ``version``, loading itself through ``loader``."""
        device, dtype = self.placement(spec)
        try:
            batchable = spec.module is not None or models.get_architecture(spec.architecture).batchable
        except models.ArchitectureError:
            batchable = False  # it fails to load anyway, with the reason
        return VersionSlot(
            name, version, spec, source, device, dtype, self.batch_limit(spec, batchable), loader
        )

    def load(
        self, name: str, spec: ModelSpec, version: int, statistics: InferenceStatistics | None = None
    ) -> ModelVersion:
        """Build, load, move, and warm up ``version`` of model ``name`` (blocking).

        Raises:
            LoadError: a step failed; the message names it.
        """
        started = time.perf_counter()
        path = self.repository.weights_path(name, version)
        source = file_identity(path)
        device, dtype = self.placement(spec)
        servable = assemble(spec, self.repository.model_dir(name), path, device, dtype, f"version {version}")
        logger.debug("model %s version %d prepared on %s/%s", name, version, device, dtype)
        seconds = time.perf_counter() - started
        return self.make_version(name, spec, version, servable, source, seconds, statistics)

    def prepare(self, name: str, spec: ModelSpec, servable: Any, where: str = "new version") -> None:
        """Move a loaded servable to its device and dtype, ``eval()`` it, and run the warm-up forward.

        Runs on the calling thread (a worker thread: it is slow).

        Raises:
            LoadError: a step failed; the message names it.
        """
        device, dtype = self.placement(spec)
        prepare_servable(servable, device, dtype, where)
        self.labels(name, spec, servable, where)
        logger.debug("model %s %s prepared on %s/%s", name, where, device, dtype)

    def labels(self, name: str, spec: ModelSpec, servable: Any, where: str) -> dict[str, tuple[str, ...]]:
        """The class labels of ``servable``'s outputs, from the files ``model.json``'s ``labels`` names.

        Raises:
            LoadError: a bad ``labels`` key or label file.
        """
        outputs = [output.name for output in servable.outputs]
        shapes = {output.name: output.shape for output in servable.outputs}
        with _step(f"{where}: reading labels"):
            return read_labels(spec, self.repository.model_dir(name), outputs, shapes)

    def make_version(
        self,
        name: str,
        spec: ModelSpec,
        version: int,
        servable: Any,
        source: FileIdentity | None,
        seconds: float,
        statistics: InferenceStatistics | None = None,
    ) -> ModelVersion:
        """The :class:`ModelVersion` of a prepared servable (see :meth:`prepare`): its runner."""
        limit = self.batch_limit(spec, servable.batchable)
        labels = self.labels(name, spec, servable, f"version {version}")
        with _step(f"version {version}: reading its batching keys"):
            batching = BatchingPolicy.for_model(spec, limit, self.settings)
        device, dtype = self.placement(spec)
        statistics = statistics if statistics is not None else InferenceStatistics(name, version)
        runner = ModelRunner(
            name,
            version,
            servable,
            self.executor,
            statistics,
            max_queue=self.settings.max_queue,
            metrics=self.metrics,
        )
        self.metrics.model_load_seconds.labels(name, str(version)).set(seconds)
        engine = self.engine(name, version, servable, statistics)
        logger.info(
            "model %s version %d ready on %s/%s in %.0f ms", name, version, device, dtype, seconds * 1e3
        )
        return ModelVersion(
            name, version, spec, servable, runner, statistics, device, dtype, limit, seconds, source, labels,
            batching, engine,
        )

    def engine(
        self, name: str, version: int, servable: Any, statistics: InferenceStatistics
    ) -> GenerationEngine | None:
        """A started generation engine for a text-generation servable (None for other models)."""
        generator = getattr(servable, "generator", None)
        if generator is None:
            return None
        return GenerationEngine(
            name,
            version,
            generator,
            max_running=self.settings.max_sequences,
            max_waiting=self.settings.max_waiting_sequences,
            timeout_s=self.settings.generation_timeout_s,
            metrics=self.metrics,
            statistics=statistics,
        )

    def placement(self, spec: ModelSpec) -> tuple[str, str]:
        """The device and dtype of a model: its ``model.json``'s, else the settings'."""
        return spec.device or self.settings.device, spec.dtype or self.settings.dtype

    def batch_limit(self, spec: ModelSpec, batchable: bool) -> int:
        """Largest batch per request (0: not batched)."""
        if not batchable:
            return 0
        return self.settings.max_batch_size if spec.max_batch_size is None else spec.max_batch_size


class UnloadedVersions:
    """Unloaded versions until their memory is really gone.

    A loaded version's objects refer to each other (runner, batch queue), so
    dropping its last reference leaves a cycle for the garbage collector;
    :meth:`collect` runs the collector while unloaded versions are still in
    memory, then gives the freed pages back to the system (glibc
    ``malloc_trim``), so an unload shows in the resident size within a tick
    instead of at some later full collection.
    """

    def __init__(self) -> None:
        self._refs: list[weakref.ref[Any]] = []

    def track(self, servable: Any) -> None:
        """Watch an unloaded version's servable."""
        self._refs.append(weakref.ref(servable))

    def collect(self) -> int:
        """Free what no request holds any more; how many unloaded versions are still held."""
        if not self._refs:
            return 0
        gc.collect()
        held = [ref for ref in self._refs if ref() is not None]
        if len(held) < len(self._refs) and _LIBC is not None:
            _LIBC.malloc_trim(0)
        self._refs = held
        return len(held)


def _load_libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):  # not glibc: nothing to trim
        return None


_LIBC = _load_libc()


def assemble(
    spec: ModelSpec, folder: Path, weights: Path | None, device: str, dtype: str, where: str
) -> models.Servable:
    """Build ``spec`` in ``folder``, load ``weights`` strictly, move, ``eval()`` and warm it up.

    The steps of every load, of ``mininn-serve add-model`` and of a checked code upload.

    Raises:
        LoadError: a step failed; the message starts with ``where`` and names the step.
    """
    with _step(f"{where}: building {spec.built_from}"):
        servable = build_servable(spec, folder)
    if weights is not None:
        with _step(f"{where}: reading {weights.parent.name}/{weights.name}"):
            state_dict, gguf_reader = _read_weights(weights, servable)
        with _step(f"{where}: loading the state dict"):
            servable.module.load_state_dict(state_dict, strict=True)
        del state_dict
        if gguf_reader is not None:
            with _step(f"{where}: reading the tokenizer in {weights.name}"):
                models.gguf.attach_tokenizer(servable, gguf_reader)
    prepare_servable(servable, device, dtype, where)
    return servable


def _read_weights(path: Path, servable: models.Servable) -> tuple[Any, Any]:
    """The state dict in ``path``, and the ``GGUFReader`` when it is a GGUF file (else None).

    A GGUF file's metadata must give the config the servable was built with.
    """
    if path.suffix != ".gguf":
        return load_checkpoint(path), None
    model = models.gguf.read_for_config(path, servable.config)
    return model.tensors, model.reader


def prepare_servable(servable: models.Servable, device: str, dtype: str, where: str) -> None:
    """Move a servable to ``device`` / ``dtype``, ``eval()`` it, and run the warm-up forward.

    Raises:
        LoadError: a step failed; the message starts with ``where`` and names the step.
    """
    with _step(f"{where}: moving the module to {device} / {dtype}"):
        servable.module.to(device, getattr(mininn, dtype))
        servable.module.eval()
    with _step(f"{where}: warm-up forward on the example inputs"), mininn.no_grad():
        servable.predict(servable.example_inputs(1))


def build_servable(spec: ModelSpec, folder: Path) -> models.Servable:
    """A fresh servable for ``spec``: a registered architecture, or the code in ``folder``.

    Raises:
        models.ArchitectureError: unknown architecture, bad config, or model code that fails
            to import or build (``models.ModelCodeError``, naming the file and line).
    """
    if spec.module is not None:
        code = models.CodeSpec(
            spec.module, spec.init, spec.inputs or (), spec.outputs, spec.task, spec.context_length
        )
        if spec.task is not None:
            return causal_lm_servable(folder, code)
        return models.code_servable(folder, code)
    servable = models.servable(spec.architecture, spec.config, resource_dir=folder)
    if spec.task is not None and getattr(servable, "generator", None) is None:
        raise models.ArchitectureError(
            f"architecture {spec.architecture!r} does not generate text: leave \"task\" out, or serve a "
            "language model"
        )
    return servable


def describe_spec(spec: ModelSpec) -> models.Signature:
    """The inputs and outputs ``spec`` declares, without building anything.

    For code in the model's folder, inputs without a name and undeclared outputs are
    only known once a version is loaded: they show as ``input__<i>`` and none.
    """
    if spec.module is None:
        architecture = models.get_architecture(spec.architecture)
        return architecture.signature(architecture.make_config(spec.config))
    if spec.task is not None:  # a language model: input_ids in, logits out (the vocabulary: once loaded)
        return models.Signature(
            [models.TensorSpec("input_ids", "INT64", (-1, -1))],
            [models.TensorSpec("logits", "FP32", (-1, -1, -1))],
        )
    inputs = [
        models.TensorSpec(e.get("name") or f"input__{i}", e["datatype"], tuple(e["shape"]))
        for i, e in enumerate(spec.inputs or ())
    ]
    outputs = [models.TensorSpec(e["name"], e["datatype"], tuple(e["shape"])) for e in spec.outputs or ()]
    return models.Signature(inputs, outputs)


def check_spec(spec: ModelSpec, folder: Path | None = None) -> None:
    """Build ``spec``'s architecture with its config, which checks every key and value.

    For code in the model's folder (``module``), import it and build the module with
    ``init`` in ``folder``.

    Raises:
        UnprocessableError: unknown architecture (``details["architectures"]``), a
            config it refuses (``details["accepted_keys"]``), or code that fails.
    """
    check_labels_key(spec)
    if spec.module is not None:
        try:
            build_servable(spec, folder if folder is not None else Path("."))
        except models.ArchitectureError as exc:
            raise UnprocessableError(f"model.json's module {spec.module!r} does not build: {exc}") from None
        return
    try:
        architecture = models.get_architecture(spec.architecture)
    except models.ArchitectureError as exc:
        raise UnprocessableError(str(exc), details={"architectures": models.available()}) from None
    accepted = {"accepted_keys": accepted_keys(architecture.config_cls)}
    try:
        architecture.create(spec.config)
    except models.ArchitectureError as exc:
        raise UnprocessableError(str(exc), details=accepted) from None
    except (ValueError, TypeError, RuntimeError, OverflowError, MemoryError) as exc:  # MemoryError: sizes
        raise UnprocessableError(
            f"architecture {spec.architecture!r} cannot be built with this config: {_describe(exc)}",
            details=accepted,
        ) from None


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
