"""Steering vectors of the served language models: store, list, compute, and apply per request.

The HTTP routes (:mod:`app.routes.steering`) and the generation protocols call
:class:`Steering` (``DataPlane.steering``); the files live in :class:`~app.store.steering.SteeringStore`.

Computing a vector (``POST /v2/models/{m}/steering/{name}/compute``): each prompt runs alone
(chat prompts rendered with the model's template as one user message), the outputs of the
named modules at the prompt's last token are recorded, and the direction of each module is
the mean over the positive prompts minus the mean over the negative ones (float64 sums,
stored as float32). The forwards run on a worker thread through an
:class:`~mininn.nn.ActivationCapture`, whose hooks act in that thread only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import mininn
from app.errors import NotFoundError, UnprocessableError
from app.runtime.manager import ModelVersion
from app.runtime.token_edits import ALL_POSITIONS, ALL_STEPS
from app.runtime.token_hooks import module_shapes
from app.store.steering import SteeringStore, check_directions, read_upload, validate_vector_name
from app.v2.generation_fields import steering_edits, token_fields
from app.v2.tensors import host_array
from mininn.nn import ActivationCapture, CaptureError, ModuleList
from mininn.nn.capture import match_modules
from models.errors import InputError

__all__ = ["Steering"]

COMPUTE_KEYS = ("positive", "negative", "modules", "chat")
MAX_COMPUTE_PROMPTS = 256


@dataclass
class Steering:
    """Steering vectors over the data plane's models.

    Args:
        plane: the data plane (``DataPlane``), for models and prompts.
        store: where the vectors live.
    """

    plane: Any
    store: SteeringStore

    # ---- per request -----------------------------------------------------------------------------
    def request_fields(self, model: ModelVersion, source: Mapping[str, Any]) -> dict[str, Any]:
        """The ``edits`` and ``capture`` of a GenerationRequest from a request's fields.

        Raises:
            UnprocessableError: a bad field, or an unknown vector (see :func:`token_fields`).
        """
        return token_fields(source, lambda name: self.store.read(model.name, name))

    def infer_capture(
        self, model: ModelVersion, value: Any, capture: ActivationCapture | None, max_elements: int
    ) -> ActivationCapture:
        """The capture of an inference request (``/infer``, gRPC ``ModelInfer``) with its ``steering``
        parameter's vectors added to the modules' outputs (all positions: one forward).

        Raises:
            UnprocessableError: a bad ``steering`` entry, an unknown vector, or ``steps``/``positions``
                (they select generation steps; an inference is one forward).
        """
        if model.generator is None:
            raise UnprocessableError(
                f"parameter 'steering': model '{model.name}' is not a text-generation model, and steering "
                "vectors belong to those; edit this model's activations with 'interventions' instead"
            )
        edits = steering_edits(value, lambda name: self.store.read(model.name, name))
        for edit in edits:
            if edit.steps != ALL_STEPS or edit.positions != ALL_POSITIONS:
                raise UnprocessableError(
                    f"{edit.label}: steps and positions select generation steps; an inference is one "
                    "forward over every position, so leave them out (or use a generation route)"
                )
        added = [edit.intervention for edit in edits]
        try:
            if capture is None:
                return ActivationCapture(model.module, interventions=added, max_elements=max_elements)
            return ActivationCapture(
                model.module, capture.module_names, capture=capture.capture, reduce=capture.reduce,
                bins=capture.bins, interventions=[*capture.interventions, *added],
                max_elements=capture.max_elements,
            )
        except CaptureError as exc:
            raise UnprocessableError(f"parameter 'steering': {exc}") from None

    # ---- the vectors -----------------------------------------------------------------------------
    def list(self, name: str) -> dict[str, Any]:
        """``{"model", "vectors": [{"name", "modules", "width"}]}``.

        Raises:
            NotFoundError: no such model.
        """
        if not self.plane.manager.repository.has_model(name):  # validates the name too
            raise NotFoundError(f"unknown model '{name}'")
        vectors = []
        for vector in self.store.names(name):
            try:
                directions = self.store.read(name, vector)
            except UnprocessableError:
                continue  # deleted meanwhile
            vectors.append({"name": vector, "modules": list(directions),
                            "width": [int(v.shape[0]) for v in directions.values()]})
        return {"model": name, "vectors": vectors}

    async def upload(self, name: str, vector: str, data: bytes) -> dict[str, Any]:
        """Check an uploaded file against the model and store it as ``vector``.

        Raises:
            BadRequestError: a bad vector name or an unreadable file.
            UnprocessableError: not a loaded text model, or directions that do not fit it.
        """
        validate_vector_name(vector)
        model = await self.plane.generation_model(name)
        shapes = await asyncio.to_thread(module_shapes, model.generator)
        layers, count = _layer_list(model.generator.module)
        directions = check_directions(read_upload(data, layers=layers, layer_count=count), shapes, name)
        return await self._store(name, vector, directions)

    async def compute(self, name: str, vector: str, body: Any) -> dict[str, Any]:
        """Compute ``vector`` from contrasting prompts (see the module docstring) and store it.

        Raises:
            UnprocessableError: a bad body (no prompts, unknown modules), or not a text model.
        """
        validate_vector_name(vector)
        model = await self.plane.generation_model(name)
        positive, negative, modules, chat = _compute_body(body)
        shapes = await asyncio.to_thread(module_shapes, model.generator)
        names = _module_names(model.generator.module, modules, shapes)
        encode = self._encoder(model, chat)
        prompts = [[encode(text) for text in side] for side in (positive, negative)]
        try:
            means = await asyncio.to_thread(_mean_difference, model.generator, names, prompts)
        except InputError as exc:  # a prompt over the context length
            raise UnprocessableError(f"model '{name}': {exc}") from None
        result = await self._store(name, vector, means)
        result["prompts"] = {"positive": len(positive), "negative": len(negative)}
        return result

    async def _store(self, name: str, vector: str, directions: dict[str, np.ndarray]) -> dict[str, Any]:
        created = await asyncio.to_thread(self.store.write, name, vector, directions)
        return {
            "model": name,
            "name": vector,
            "created": created,
            "modules": list(directions),
            "width": [int(v.shape[0]) for v in directions.values()],
        }

    def _encoder(self, model: ModelVersion, chat: bool) -> Any:
        def encode(text: str) -> list[int]:
            if chat:
                return list(self.plane.encode_chat(model, [{"role": "user", "content": text}]))
            return list(self.plane.encode_prompt(model, text))

        return encode


def _compute_body(body: Any) -> tuple[list[str], list[str], list[str], bool]:
    if not isinstance(body, Mapping):
        raise UnprocessableError('the body must be {"positive": [...], "negative": [...], "modules": [...]}')
    unknown = [key for key in body if key not in COMPUTE_KEYS]
    if unknown:
        keys = ", ".join(map(repr, COMPUTE_KEYS))
        raise UnprocessableError(f"'{unknown[0]}' is not a known key; use {keys}")
    sides = []
    for key in ("positive", "negative"):
        value = body.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise UnprocessableError(
                f"'{key}' must be a non-empty list of prompts (strings), got {value!r}: a direction is the "
                "mean over the positive prompts minus the mean over the negative ones"
            )
        if len(value) > MAX_COMPUTE_PROMPTS:
            raise UnprocessableError(f"'{key}' has {len(value)} prompts; send at most {MAX_COMPUTE_PROMPTS}")
        sides.append(value)
    modules = body.get("modules")
    if isinstance(modules, str):
        modules = [modules]
    if not isinstance(modules, list) or not modules or not all(isinstance(m, str) for m in modules):
        raise UnprocessableError(f"'modules' must be a non-empty list of module names, got {modules!r}")
    chat = body.get("chat", True)
    if not isinstance(chat, bool):
        raise UnprocessableError(f"'chat' must be true or false, got {chat!r}")
    return sides[0], sides[1], modules, chat


def _module_names(module: Any, modules: list[str], shapes: dict[str, Any]) -> list[str]:
    try:
        names = [name for name, _ in match_modules(module, modules)]
    except CaptureError as exc:
        raise UnprocessableError(str(exc)) from None
    for name in names:
        if not shapes.get(name):
            raise UnprocessableError(
                f"module '{name}' does not give one (batch, tokens, features) tensor; choose a layer "
                "such as 'model.layers.12'"
            )
    return names


def _layer_list(module: Any) -> tuple[str | None, int]:
    """The name and length of the model's decoder layer list (the first ``...layers`` ModuleList)."""
    for name, sub in module.named_modules():
        if isinstance(sub, ModuleList) and name.split(".")[-1] in ("layers", "h", "blocks"):
            return name, len(sub)
    return None, 0


def _last_token_outputs(generator: Any, names: Sequence[str], ids: list[int]) -> dict[str, np.ndarray]:
    with mininn.no_grad(), ActivationCapture(generator.module, names) as capture:
        seq = generator.new_sequence()
        try:
            generator.prefill(seq, ids)
        finally:
            generator.release(seq)
    results = capture.results
    return {name: host_array(results[f"{name}:output"])[0, -1].astype(np.float64) for name in names}


def _mean_difference(
    generator: Any, names: Sequence[str], prompts: list[list[list[int]]]
) -> dict[str, np.ndarray]:
    sums = []
    for side in prompts:
        total = {name: 0.0 for name in names}
        for ids in side:
            for name, value in _last_token_outputs(generator, names, ids).items():
                total[name] = total[name] + value
        sums.append({name: value / len(side) for name, value in total.items()})
    return {name: (sums[0][name] - sums[1][name]).astype(np.float32) for name in names}
