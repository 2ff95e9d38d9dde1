"""Loading with a configuration: the ``config`` parameter of a repository load request.

Triton's ``load_model(name, config='{"max_batch_size": 16}')`` posts
``{"parameters": {"config": "<JSON object>"}}``. The keys it gives are applied over
the model's ``model.json`` for that load only: nothing is written to disk, and the
next load (or a change of ``model.json`` on disk) reads the file again. A key
replaces the file's value whole (``config`` too: give every architecture key you
need). Giving ``architecture`` drops the file's ``module`` keys and giving
``module`` drops its ``architecture`` keys, so a whole ``model.json`` still works.

Accepted keys: every ``model.json`` key, plus Triton's ``name`` (must be the
model's) and ``instance_group`` (one group: ``KIND_CPU``, or ``KIND_GPU`` with
one GPU, which sets ``device``). Anything else is refused (400) with its name.
"""

from __future__ import annotations

from typing import Any

from app.errors import BadRequestError, UnprocessableError
from app.http.json_limits import load_json
from app.runtime.labels import check_labels_key
from app.store.repository import ModelSpec, spec_from_document

__all__ = ["LOAD_CONFIG_KEYS", "apply_load_config", "load_config_parameter"]

# model.json keys that are not ModelSpec fields but that the server reads (batching, classification, warm-up)
_EXTRA_KEYS = ("batch_delay_ms", "dynamic_batching", "labels", "model_warmup")
_TRITON_KEYS = ("instance_group", "name")
LOAD_CONFIG_KEYS = tuple(sorted({*ModelSpec.model_fields, *_EXTRA_KEYS, *_TRITON_KEYS}))
"""The keys a load's ``config`` may give."""

_ARCHITECTURE_KEYS = ("architecture", "config")
_MODULE_KEYS = ("module", "init", "inputs", "outputs")


def load_config_parameter(name: str, parameters: Any) -> dict[str, Any] | None:
    """The ``config`` object of a load request's ``parameters`` (None: no config).

    Raises:
        BadRequestError: ``parameters`` is not an object, has ``file:`` overrides, or
            ``config`` is not a string holding a JSON object of known keys.
    """
    if parameters is None:
        return None
    if not isinstance(parameters, dict):
        raise BadRequestError(f"failed to load '{name}': 'parameters' must be a JSON object")
    files = sorted(key for key in parameters if key.startswith("file:"))
    if files:
        raise BadRequestError(
            f"failed to load '{name}': file overrides ({', '.join(files)}) are not supported; put weights "
            f"in the repository under {name}/<version>/weights.safetensors"
        )
    text = parameters.get("config")
    if text is None:
        return None
    if not isinstance(text, str):
        raise BadRequestError(
            f"failed to load '{name}': load parameter 'config' must be a string holding a JSON object "
            f'such as {{"max_batch_size": 16}}, got {type(text).__name__}'
        )
    try:
        config = load_json(text, "load parameter 'config'")
    except BadRequestError as exc:
        raise BadRequestError(f"failed to load '{name}': {exc.message}") from None
    if not isinstance(config, dict):
        raise BadRequestError(f"failed to load '{name}': load parameter 'config' must hold a JSON object")
    unknown = sorted(set(config) - set(LOAD_CONFIG_KEYS))
    if unknown:
        raise BadRequestError(
            f"failed to load '{name}': load parameter 'config' has unknown keys {', '.join(unknown)}; "
            f"accepted keys: {', '.join(LOAD_CONFIG_KEYS)}"
        )
    return config


def apply_load_config(name: str, base: ModelSpec | None, config: dict[str, Any]) -> ModelSpec:
    """``base`` (the model's ``model.json``; None when it has none) with ``config``'s keys applied.

    Raises:
        BadRequestError: the result is not a valid ``model.json`` (the message names the key;
            ``labels`` included), or ``name`` / ``instance_group`` do not fit.
    """
    overrides = dict(config)
    given_name = overrides.pop("name", name)
    if given_name != name:
        raise BadRequestError(
            f"failed to load '{name}': load parameter 'config' names model {given_name!r}, not '{name}'"
        )
    if "instance_group" in overrides:
        overrides["device"] = _device_of(name, overrides.pop("instance_group"))
    document = base.model_dump(exclude_unset=True) if base is not None else {}
    if "architecture" in overrides:
        document = {k: v for k, v in document.items() if k not in _MODULE_KEYS}
    if "module" in overrides:
        document = {k: v for k, v in document.items() if k not in _ARCHITECTURE_KEYS}
    document.update(overrides)
    try:
        spec = spec_from_document(document, "load parameter 'config' over model.json")
        check_labels_key(spec)
    except UnprocessableError as exc:
        raise BadRequestError(f"failed to load '{name}': {exc.message}") from None
    return spec


def _device_of(name: str, groups: Any) -> str:
    """The device of Triton's ``instance_group`` (one group of one instance)."""
    if not isinstance(groups, list) or len(groups) != 1 or not isinstance(groups[0], dict):
        raise BadRequestError(
            f"failed to load '{name}': 'instance_group' must be a list of one group such as "
            f'[{{"kind": "KIND_CPU"}}]: this server runs one instance of a model'
        )
    group = groups[0]
    count, kind, gpus = group.get("count", 1), group.get("kind", "KIND_CPU"), group.get("gpus", [0])
    if count != 1:
        raise BadRequestError(f"failed to load '{name}': instance_group count must be 1, got {count!r}")
    if kind == "KIND_CPU":
        return "cpu"
    if kind == "KIND_GPU" and isinstance(gpus, list) and len(gpus) == 1 and _gpu_index(gpus[0]):
        return f"cuda:{gpus[0]}"
    raise BadRequestError(
        f"failed to load '{name}': instance_group must be KIND_CPU, or KIND_GPU with one GPU index "
        '(an integer >= 0) in \'gpus\', such as [{"kind": "KIND_GPU", "gpus": [0]}]; '
        f"got {group!r}"
    )


def _gpu_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
