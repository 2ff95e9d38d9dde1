"""The data plane: what every transport asks of the served models, in one place.

A transport (the HTTP routes in :mod:`app.routes`, the gRPC servicer in
:mod:`app.grpc.servicer`) reads and decodes a request, calls one method here and encodes what
comes back. Everything between belongs to this module and the objects it
drives: which version answers, the batching policy and the deadline of an
inference, cancelling it when the client goes away, activation captures,
per-version statistics, and the metadata, configuration, parameters and
module tree of a model.

::

    transport: read, decompress, decode  ->  DataPlane.infer(...)  ->  encode, compress
                                                  |
                     ModelManager.version -> ModelRunner -> BatchQueue -> servable.predict

    transport: prompt -> encode_prompt / encode_chat -> DataPlane.generate(...) -> stream of tokens
                                                  |
                     ModelVersion.engine (continuous batching) -> servable.generator
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from app.errors import BadRequestError, NotFoundError, UnprocessableError
from app.log import request_id_var
from app.runtime.batching import BatchingPolicy
from app.runtime.generation import GenerationRequest, GenerationStream
from app.runtime.inspection import module_tree, parameter_table
from app.runtime.labels import label_files
from app.runtime.load_config import apply_load_config, load_config_parameter
from app.runtime.manager import ModelEntry, ModelManager, ModelState, ModelVersion, VersionSlot
from app.runtime.steering import Steering
from app.runtime.token_hooks import check_capture_size, module_shapes
from app.runtime.warmup import WARMUP_KEY
from app.settings import Settings
from app.store.repository import ModelSpec, parse_version
from app.store.steering import SteeringStore
from app.v2 import InferenceRequest, triton_type
from app.v2.captures import INFER_PARAMETERS
from app.v2.classification import check_classification, classify_outputs
from app.v2.parameters import check_request_parameters
from mininn.nn import ActivationCapture
from models.errors import InputError

__all__ = ["PLATFORM", "DataPlane", "InferenceDecoder", "InferenceEncoder"]

logger = logging.getLogger("app.infer")

PLATFORM = "mininn"

R = TypeVar("R")
Outputs = dict[str, Any]
InferenceDecoder = Callable[[], Awaitable[InferenceRequest]]
"""Reads and decodes the request against the model's inputs (its time counts as input time)."""
InferenceEncoder = Callable[[InferenceRequest, Outputs], R]
"""Turns the outputs (and captures) into the transport's response (its time counts as output time)."""


@dataclass
class DataPlane:
    """The served models, as the transports see them.

    Args:
        manager: the loaded models.
        settings: the service's configuration (timeouts, batching, capture limits).
    """

    manager: ModelManager
    settings: Settings

    @cached_property
    def steering(self) -> Steering:
        """The steering vectors of the models, and the per-token fields of generation requests."""
        return Steering(self, SteeringStore(self.manager.repository))

    # ---- which model --------------------------------------------------------------------------
    async def model(self, name: str, version: str | int | None = None) -> ModelVersion:
        """The version ``version`` of ``name`` (None or ``""``: the highest), for a request.

        An older version that is not loaded is loaded first, off the event loop; the
        request waits for that load (and shares it with other requests for the version).

        Raises:
            BadRequestError: ``version`` is not a positive integer.
            NotFoundError: no such model or version.
            ServiceUnavailableError: the model is not ready.
            UnprocessableError: the version fails to load.
        """
        return await self.manager.load_version(name, parse_version(version))

    def check_ready(self, name: str, version: str | int | None = None) -> None:
        """Return if ``name`` (or its version ``version``) is ready to serve; loads nothing.

        Raises:
            BadRequestError: ``version`` is not a positive integer.
            NotFoundError: no such model or version.
            ServiceUnavailableError: the model is not ready, or the version is loading or not
                loaded; the message says which.
        """
        self.manager.version(name, parse_version(version))

    # ---- inference ----------------------------------------------------------------------------
    async def infer(
        self,
        model: ModelVersion,
        decode: InferenceDecoder,
        encode: InferenceEncoder[R],
        *,
        capture_for: Callable[[InferenceRequest], ActivationCapture | None] | None = None,
        wait: Callable[[Awaitable[Outputs]], Awaitable[Outputs]] | None = None,
        accepts: Collection[str] = INFER_PARAMETERS,
    ) -> R:
        """Decode, run and encode one inference request on ``model``; statistics record every try.

        The deadline is the request's ``timeout`` parameter (microseconds) or
        ``MININN_REQUEST_TIMEOUT_MS``; the model's batching policy decides
        whether the request waits to join others. A request with a capture
        runs alone, with the capture's hooks active around its forward.
        Request parameters nobody reads are refused before the model runs
        (:mod:`app.v2.parameters`); outputs asked for with ``classification``
        come back as their top classes (:mod:`app.v2.classification`).

        Args:
            model: the version that answers (:meth:`model`).
            decode: reads and parses the request.
            encode: builds the response from the request and its outputs.
            capture_for: the activation capture the parsed request asks for (None: none).
            wait: wraps the wait for the outputs, e.g. to cancel it when the client leaves.
            accepts: the request parameters the endpoint reads besides ``timeout`` and
                ``binary_data_output`` (default: ``/infer``'s capture parameters).

        Raises:
            ServiceError: a bad request, a full queue (503), a passed deadline (504), a
                model that rejected the inputs (422).
        """
        started = time.perf_counter_ns()
        ok, batch_size, input_ns, output_ns = False, 1, 0, 0
        try:
            request = await decode()
            if request.parameters:
                check_request_parameters(request.parameters, model=model.name, accepts=accepts)
            check_classification(request.outputs, model.output_datatypes)
            capture = capture_for(request) if capture_for is not None else None
            if request.parameters.get("steering") is not None:
                capture = self.steering.infer_capture(
                    model, request.parameters["steering"], capture, self.settings.max_activation_elements
                )
            batch_size, input_ns = request.batch_size, time.perf_counter_ns() - started
            timeout_ms = request.timeout_us / 1e3 if request.timeout_us else self.settings.request_timeout_ms
            work = model.runner.infer(
                request.inputs,
                parameters=request.parameters,
                deadline=time.monotonic() + timeout_ms / 1e3,
                batch_size=batch_size,
                capture=capture,
                batching=model.batching,
            )
            outputs = await (wait(work) if wait is not None else work)
            inferred_at = time.perf_counter_ns()
            outputs = classify_outputs(
                request.outputs, outputs, shapes=model.output_shapes, labels=model.labels
            )
            response = encode(request, outputs)
            output_ns, ok = time.perf_counter_ns() - inferred_at, True
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "request %s: model %s version %d, batch %d, %.2f ms",
                    request_id_var.get(),
                    model.name,
                    model.version,
                    batch_size,
                    (time.perf_counter_ns() - started) / 1e6,
                )
            return response
        finally:
            model.statistics.record_request(
                ok=ok,
                total_ns=time.perf_counter_ns() - started,
                batch_size=batch_size,
                input_ns=input_ns,
                output_ns=output_ns,
            )

    # ---- text generation ----------------------------------------------------------------------
    async def generation_model(self, name: str, version: str | int | None = None) -> ModelVersion:
        """The version of ``name`` that generates text (:meth:`model`, then a check).

        Raises:
            BadRequestError: ``version`` is not a positive integer.
            NotFoundError: no such model or version.
            ServiceUnavailableError: the model is not ready.
            UnprocessableError: the model does not generate text.
        """
        model = await self.model(name, version)
        if model.engine is None:
            raise _not_text_model(name)
        return model

    async def generate(self, model: ModelVersion, request: GenerationRequest) -> GenerationStream:
        """Start generating ``request`` on ``model``; its stream of tokens, then the result.

        Everything about the request is checked before this returns (the stream raises only
        for a passed deadline or a model failure). Closing the stream cancels the sequence.

        Raises:
            UnprocessableError: not a text model, a prompt over the context length,
                ``max_tokens`` over what remains, a token id outside the vocabulary.
            ServiceUnavailableError: the engine is full (``Retry-After``) or the version unloaded.
        """
        if model.engine is None:
            raise _not_text_model(model.name)
        if request.token_fields:
            fields = self.steering.request_fields(model, request.token_fields)
            request = dataclasses.replace(request, token_fields=None, **fields)
        if request.edits or request.capture is not None:  # found once per model, off the event loop
            await asyncio.to_thread(module_shapes, model.generator)
            check_capture_size(
                request.capture, model.generator, prompt_length=len(request.prompt_ids),
                limit=self.settings.max_activation_elements,
            )
        stream = model.engine.submit(request)
        logger.debug(
            "request %s: model %s version %d, generating from %d prompt tokens",
            request.request_id or request_id_var.get(),
            model.name,
            model.version,
            len(request.prompt_ids),
        )
        return stream

    def tokenizer(self, model: ModelVersion) -> Any:
        """The tokenizer of text model ``model``.

        Raises:
            UnprocessableError: not a text model, or one without a tokenizer (token ids only).
        """
        generator = model.generator
        if generator is None:
            raise _not_text_model(model.name)
        tokenizer = generator.tokenizer
        if tokenizer is None:
            raise UnprocessableError(
                f"model '{model.name}' has no tokenizer (no tokenizer.json in its folder): send the prompt "
                "as token ids"
            )
        return tokenizer

    def encode_prompt(
        self, model: ModelVersion, text: str, *, add_special_tokens: bool = True
    ) -> tuple[int, ...]:
        """The token ids of prompt ``text`` (as transformers' ``tokenizer(text).input_ids``).

        Raises:
            UnprocessableError: not a text model, or one without a tokenizer.
        """
        if not isinstance(text, str):
            raise BadRequestError(f"the prompt must be a string, got {type(text).__name__}")
        ids = self.tokenizer(model).encode(text, add_special_tokens=add_special_tokens)
        return tuple(int(i) for i in ids)

    def render_chat(
        self, model: ModelVersion, messages: list[dict[str, Any]], *, add_generation_prompt: bool = True
    ) -> str:
        """Chat ``messages`` rendered with the model's chat template (``apply_chat_template``'s text).

        Raises:
            UnprocessableError: no tokenizer, no chat template, or a malformed message (its
                index and the problem).
        """
        tokenizer = self.tokenizer(model)
        if not getattr(tokenizer, "has_chat_template", False):
            raise UnprocessableError(
                f"model '{model.name}' has no chat template: send a plain prompt to the completions "
                "route instead of chat messages"
            )
        try:
            return str(tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt))
        except InputError as exc:
            raise UnprocessableError(f"model '{model.name}': {exc}") from None

    def encode_chat(
        self, model: ModelVersion, messages: list[dict[str, Any]], *, add_generation_prompt: bool = True
    ) -> tuple[int, ...]:
        """The prompt token ids of chat ``messages``: the rendered template, encoded without
        adding special tokens again (the template holds them), as transformers'
        ``apply_chat_template(..., tokenize=True)``.

        Raises:
            UnprocessableError: see :meth:`render_chat`.
        """
        text = self.render_chat(model, messages, add_generation_prompt=add_generation_prompt)
        ids = self.tokenizer(model).encode(text, add_special_tokens=False)
        return tuple(int(i) for i in ids)

    # ---- describing models --------------------------------------------------------------------
    def metadata(self, name: str, version: str | int | None = None) -> dict[str, Any]:
        """The V2 metadata of ``name`` (inputs and outputs once loaded), with its state and reason.

        Answers for a model that is loading or failed too: its versions on disk, state and reason.

        Raises:
            NotFoundError: no such model, or no such version.
        """
        wanted = parse_version(version)
        entry = self.manager.entry(name)
        versions = sorted(entry.versions) or self.manager.disk_versions(name)
        if wanted is not None and wanted not in versions:
            listed = ", ".join(str(v) for v in versions) or "(none)"
            raise NotFoundError(f"model '{name}' has no version {wanted}; its versions are {listed}")
        loaded = _ready_version(entry, wanted)
        spec = loaded.spec if loaded else None
        code = {"module": spec.module} if spec is not None and spec.module is not None else {}
        return {
            "name": name,
            "versions": [str(v) for v in versions],
            "platform": PLATFORM,
            "inputs": [_tensor(s) for s in loaded.inputs] if loaded else [],
            "outputs": [_tensor(s) for s in loaded.outputs] if loaded else [],
            "architecture": spec.architecture if spec else None,
            **code,
            "state": entry.state.value,
            "reason": entry.reason,
        }

    def config(self, model: ModelVersion) -> dict[str, Any]:
        """Triton's model configuration of ``model`` (what ``get_model_config`` reads)."""
        batched = model.max_batch_size > 0
        spec = model.spec
        labels = label_files(spec, list(model.labels))
        config: dict[str, Any] = {
            "name": model.name,
            "platform": PLATFORM,
            "backend": PLATFORM,
            "version_policy": {"all": {}},
            "max_batch_size": model.max_batch_size,
            "input": [_config_input(s, batched) for s in model.inputs],
            "output": [_config_output(s, batched, labels.get(s.name)) for s in model.outputs],
            "instance_group": [_instance_group(model)],
            "parameters": {
                "architecture": {"string_value": spec.label},
                "device": {"string_value": model.device},
                "dtype": {"string_value": model.dtype},
            },
            "mininn": {
                "architecture": spec.architecture,
                "config": spec.config,
                **({"module": spec.module, "init": spec.init} if spec.module else {}),
                "device": model.device,
                "dtype": model.dtype,
                "description": spec.description,
            },
        }
        generation = _generation_facts(model)
        if generation is not None:
            config["mininn"]["generation"] = generation
        warmup = (spec.model_extra or {}).get(WARMUP_KEY)
        if warmup:
            config["model_warmup"] = warmup
        batching = model.batching
        if batching.enabled:
            config["dynamic_batching"] = batching.triton_config(
                max_queue=self.settings.max_queue, timeout_ms=self.settings.request_timeout_ms
            )
        return config

    def statistics(self, name: str | None = None, version: str | int | None = None) -> dict[str, Any]:
        """Triton's statistics: of every version of every model, of one model, or of one version.

        Loads nothing: a version that is not loaded reports what it served while it was.

        Raises:
            NotFoundError: no such model or version (with ``version``: also 503 when not ready).
        """
        if name is None:
            entries = list(self.manager.entries())
        elif version is not None:
            slot = self.manager.slot(name, parse_version(version))
            return {"model_stats": [slot.statistics.as_dict()]}
        else:
            entries = [self.manager.entry(name)]
        rows = [v.statistics.as_dict() for e in entries for _, v in sorted(e.versions.items())]
        return {"model_stats": rows}

    async def parameters(self, model: ModelVersion, *, stats: bool = False, bins: int = 20) -> dict[str, Any]:
        """Every parameter and buffer of ``model`` with totals, and statistics per tensor if ``stats``."""
        # statistics of a large model take a while: keep the event loop free
        table = await asyncio.to_thread(parameter_table, model.module, stats=stats, bins=bins)
        return {"model_name": model.name, "model_version": str(model.version), **table}

    def modules(self, model: ModelVersion) -> dict[str, Any]:
        """The module tree of ``model``, in ``named_modules()`` order."""
        tree = module_tree(model.module)
        return {"model_name": model.name, "model_version": str(model.version), "root": tree}

    # ---- the repository -----------------------------------------------------------------------
    async def load(self, name: str, parameters: Any = None) -> ModelEntry:
        """Load or reload ``name`` from the repository; ``parameters`` are the load request's.

        ``config`` (a string holding a JSON object, as Triton's ``load_model(config=...)``
        sends) applies its keys over the model's ``model.json`` for this load; it is
        not written to disk (:mod:`app.runtime.load_config`).

        Raises:
            BadRequestError: bad parameters, or a config with unknown keys or bad values.
            UnprocessableError: the model failed to load.
            NotFoundError: no such model in the repository.
        """
        config = load_config_parameter(name, parameters)
        spec = None
        if config is not None and self.manager.repository.has_model(name):
            try:
                base: ModelSpec | None = await asyncio.to_thread(self.manager.repository.read_spec, name)
            except UnprocessableError:  # no or a broken model.json: the config must be a whole one
                base = None
            spec = apply_load_config(name, base, config)
            try:
                BatchingPolicy.for_model(spec, 0, self.settings)
            except UnprocessableError as exc:
                raise BadRequestError(f"failed to load '{name}': {exc.message}") from None
        return await self.manager.load(name, spec)

    async def unload(self, name: str) -> None:
        """Stop serving ``name``; its files stay.

        Raises:
            NotFoundError: no such model.
        """
        await self.manager.unload(name)


def _not_text_model(name: str) -> UnprocessableError:
    return UnprocessableError(
        f"model '{name}' is not a text-generation model: it serves /v2/models/{name}/infer only; "
        'text generation needs a language model (architecture llama, or "task": "text-generation" '
        "in model.json)"
    )


def _ready_version(entry: ModelEntry, version: int | None) -> VersionSlot | None:
    if entry.state is not ModelState.READY:
        return None
    return entry.latest if version is None else entry.versions.get(version)


def _tensor(spec: Any) -> dict[str, Any]:
    return {"name": spec.name, "datatype": spec.datatype, "shape": list(spec.shape)}


def _config_tensor(spec: Any, batched: bool) -> dict[str, Any]:
    dims = list(spec.shape[1:] if batched else spec.shape)
    return {"name": spec.name, "data_type": triton_type(spec.datatype), "dims": dims}


def _config_input(spec: Any, batched: bool) -> dict[str, Any]:
    tensor = _config_tensor(spec, batched)
    return {**tensor, "format": _input_format(spec.datatype, tensor["dims"]), "optional": False}


def _config_output(spec: Any, batched: bool, label_filename: str | None) -> dict[str, Any]:
    tensor = _config_tensor(spec, batched)
    return {**tensor, "label_filename": label_filename} if label_filename else tensor


def _input_format(datatype: str, dims: list[int]) -> str:
    """``FORMAT_NCHW`` for an image: floating, channels (1, 3 or 4) first, then height and width."""
    floating = datatype in ("FP16", "BF16", "FP32", "FP64")
    return "FORMAT_NCHW" if floating and len(dims) == 3 and dims[0] in (1, 3, 4) else "FORMAT_NONE"


def _generation_facts(model: ModelVersion) -> dict[str, Any] | None:
    """What a client needs to talk to text model ``model`` (None: it does not generate).

    ``context_length`` (most prompt + generated tokens), ``tokenizer`` (false: it takes
    token ids only) and ``chat_template`` (false: no chat messages, plain prompts only).
    """
    generator = model.generator
    if generator is None or model.engine is None:
        return None
    tokenizer = generator.tokenizer
    return {
        "context_length": int(generator.context_length),
        "tokenizer": tokenizer is not None,
        "chat_template": bool(tokenizer is not None and getattr(tokenizer, "has_chat_template", False)),
    }


def _instance_group(model: ModelVersion) -> dict[str, Any]:
    group: dict[str, Any] = {"name": f"{model.name}_0", "count": 1}
    if model.device.startswith("cuda"):
        _, _, index = model.device.partition(":")
        group.update(kind="KIND_GPU", gpus=[int(index or 0)])
    else:
        group["kind"] = "KIND_CPU"
    return group
