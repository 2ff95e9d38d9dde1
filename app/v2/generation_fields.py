"""The wire form of per-token edits and captures in a generation request.

Three optional fields, the same on every protocol (OpenAI ``extra_body``, Triton generate
``parameters``, V2 parameters); as V2 parameters hold scalars, each may also be a JSON string:

- ``interventions``: the list ``/infer`` and ``/activations`` take (``module``, ``op``, ``value``,
  ``element``; :mod:`app.v2.capture_fields`), plus ``steps`` and ``positions``
  (:mod:`app.runtime.token_edits`). ``index`` picks elements of one token's slice of the
  output: an int or a list of ints are features (its first dimension), a string is an index
  expression over the slice (``"..., 0:8"``).
- ``steering``: ``[{"name", "scale", "modules", "steps", "positions"}]``: ``scale`` (default 1)
  times the stored vector ``name`` added to each module's output (modules default to all of
  the vector's).
- ``capture``: ``{"modules", "positions", "reduce", "bins"}``, or a comma-separated string of
  modules: recorded at every step (positions default ``"last"``).

:func:`token_fields` turns them into the ``edits`` and ``capture`` of a
:class:`~app.runtime.generation.GenerationRequest`; the engine checks them against the model.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from app.errors import UnprocessableError
from app.runtime.token_edits import (
    LAST_POSITIONS,
    SelectorError,
    TokenCapture,
    TokenEdit,
    parse_positions,
    parse_steps,
)
from app.v2.capture_fields import IndexExpression, intervention_from_json, parse_index
from mininn.nn import CaptureError, Intervention

__all__ = ["TOKEN_FIELDS", "VectorLookup", "steering_edits", "token_fields"]

TOKEN_FIELDS = ("interventions", "steering", "capture")
STEERING_KEYS = ("name", "scale", "modules", "steps", "positions")
CAPTURE_KEYS = ("modules", "positions", "reduce", "bins")

VectorLookup = Callable[[str], Mapping[str, np.ndarray]]
"""A stored steering vector's directions by name (module -> 1-D array); raises for an unknown name."""


def token_fields(source: Mapping[str, Any], vectors: VectorLookup) -> dict[str, Any]:
    """``{"edits": (...), "capture": ...}`` for a GenerationRequest, from a request's fields.

    Args:
        source: the request's JSON (or parameters); only :data:`TOKEN_FIELDS` are read.
        vectors: finds a stored steering vector by name.

    Raises:
        UnprocessableError: a bad field, named (``steering[0].scale``), or an unknown vector.
    """
    try:
        edits = [*_interventions(_json(source.get("interventions"), "interventions"))]
        edits += _steering(_json(source.get("steering"), "steering"), vectors)
        capture = _capture(_json(source.get("capture"), "capture"))
    except (CaptureError, SelectorError) as exc:
        raise UnprocessableError(str(exc)) from None
    return {"edits": tuple(edits), "capture": capture}


def steering_edits(value: Any, vectors: VectorLookup) -> list[TokenEdit]:
    """The edits of a ``steering`` list (or a string holding one).

    Raises:
        UnprocessableError: a bad entry (named) or an unknown vector.
    """
    try:
        return _steering(_json(value, "steering"), vectors)
    except (CaptureError, SelectorError) as exc:
        raise UnprocessableError(str(exc)) from None


def _json(value: Any, what: str) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise UnprocessableError(f"{what} is a string but not valid JSON: {exc}") from None
    return value


# ---- interventions ---------------------------------------------------------------------------
def _interventions(value: Any) -> list[TokenEdit]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise CaptureError("interventions", f"must be a list of interventions, got {value!r}")
    return [_intervention(spec, f"interventions[{i}]") for i, spec in enumerate(value)]


def _intervention(spec: Any, label: str) -> TokenEdit:
    if not isinstance(spec, Mapping):
        raise CaptureError(label, f"must be an object with 'module' and 'op', got {spec!r}")
    rest = {k: v for k, v in spec.items() if k not in ("steps", "positions", "index")}
    intervention = intervention_from_json(rest, label)
    if "index" in spec:
        intervention = dataclasses.replace(intervention, index=_token_index(spec["index"], label))
    return TokenEdit(
        module=intervention.module,
        intervention=intervention,
        steps=parse_steps(spec.get("steps"), label),
        positions=parse_positions(spec.get("positions"), label),
        label=label,
    )


def _token_index(index: Any, label: str) -> IndexExpression | None:
    """An index within one token's slice, put behind ``slice(None)`` (every selected token)."""
    if index is None:
        return None
    if _is_int(index):
        return IndexExpression((slice(None), index), index)
    if isinstance(index, list) and index and all(_is_int(i) for i in index):
        return IndexExpression((slice(None), index), index)
    try:
        parsed = parse_index(index) if isinstance(index, str) else None
    except CaptureError as exc:
        raise CaptureError(f"{label}.index", str(exc).removeprefix("index ")) from None
    if parsed is None:
        raise CaptureError(
            f"{label}.index",
            "must be an int or a non-empty list of ints (features of a token), or an index "
            f"expression string over one token's slice such as '0:8'; got {index!r}",
        )
    return IndexExpression((slice(None), *parsed), index)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _unknown_key(spec: Mapping[str, Any], allowed: tuple[str, ...], label: str) -> None:
    unknown = [key for key in spec if key not in allowed]
    if unknown:
        keys = ", ".join(map(repr, allowed))
        raise CaptureError(f"{label}.{unknown[0]}", f"is not a known key; use {keys}")


# ---- steering --------------------------------------------------------------------------------
def _steering(value: Any, vectors: VectorLookup) -> list[TokenEdit]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise CaptureError("steering", f'must be a list of {{"name", "scale", ...}} objects, got {value!r}')
    edits: list[TokenEdit] = []
    for i, spec in enumerate(value):
        edits += _steer(spec, f"steering[{i}]", vectors)
    return edits


def _steer(spec: Any, label: str, vectors: VectorLookup) -> list[TokenEdit]:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        raise CaptureError(label, f"must be an object with the 'name' of a stored vector, got {spec!r}")
    _unknown_key(spec, STEERING_KEYS, label)
    scale = spec.get("scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not np.isfinite(scale):
        raise CaptureError(f"{label}.scale", f"must be a finite number, got {scale!r}")
    directions = vectors(spec["name"])
    modules = _steered_modules(spec.get("modules"), directions, spec["name"], label)
    steps = parse_steps(spec.get("steps"), label)
    positions = parse_positions(spec.get("positions"), label)
    return [
        TokenEdit(
            module=module,
            intervention=Intervention(module, "add", value=np.float32(scale) * directions[module]),
            steps=steps,
            positions=positions,
            label=label,
        )
        for module in modules
    ]


def _steered_modules(value: Any, directions: Mapping[str, Any], name: str, label: str) -> list[str]:
    if value is None:
        return list(directions)
    modules = [value] if isinstance(value, str) else value
    if not isinstance(modules, list) or not modules or not all(isinstance(m, str) for m in modules):
        raise CaptureError(f"{label}.modules", f"must be a non-empty list of module names, got {value!r}")
    for module in modules:
        if module not in directions:
            raise CaptureError(
                f"{label}.modules",
                f"'{module}' is not a module of steering vector '{name}'; it has "
                f"{', '.join(map(repr, directions))}",
            )
    return modules


# ---- capture ---------------------------------------------------------------------------------
def _capture(value: Any) -> TokenCapture | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = {"modules": [part.strip() for part in value.split(",")]}
    if not isinstance(value, Mapping):
        raise CaptureError("capture", f'must be {{"modules": [...], "positions", "reduce"}} or a '
                           f"comma-separated string of modules, got {value!r}")
    _unknown_key(value, CAPTURE_KEYS, "capture")
    modules = value.get("modules")
    if isinstance(modules, str):
        modules = [part.strip() for part in modules.split(",")]
    if not isinstance(modules, list) or not modules or not all(isinstance(m, str) and m for m in modules):
        raise CaptureError(
            "capture.modules", f"must be a non-empty list of module names or patterns, got {modules!r}"
        )
    bins = value.get("bins", 10)
    if isinstance(bins, bool) or not isinstance(bins, int) or not 1 <= bins <= 10_000:
        raise CaptureError("capture.bins", f"must be an integer from 1 to 10000, got {bins!r}")
    return TokenCapture(
        modules=tuple(modules),
        positions=parse_positions(value.get("positions"), "capture", LAST_POSITIONS),
        reduce=value.get("reduce", "none"),
        bins=bins,
    )
