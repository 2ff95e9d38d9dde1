"""The wire form of interventions: JSON objects into :class:`mininn.nn.Intervention` objects.

An intervention is a JSON object ``{"module", "op", "value", "index",
"element"}``; ``module``, ``op``, ``value`` and ``element`` go to
:class:`~mininn.nn.Intervention` as they are (``element``: a position, a key, or
the path of a tensor in a nested output as its capture name writes it, ``"1.0"``
or ``[1, 0]``). ``index`` has a wire form of its own:

- an int or a non-empty list of ints: positions along dimension 1 (the channels
  of an ``(N, C, H, W)`` map, the features of ``(N, F)``, the tokens of a
  batch-first ``(N, S, E)`` sequence); negative values count from the end;
- a string: a NumPy index expression over all dimensions, made of ints,
  slices and one ``...``: ``":, :, 0"``, ``"..., 3"``, ``"0, 2:5"``.

Errors are :class:`~mininn.nn.CaptureError` naming the request field
(``interventions[1].index``), like the capture's own errors about its arguments.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from typing import Any

from mininn.nn import CaptureError, Intervention

__all__ = ["IndexExpression", "intervention_from_json", "interventions_from_json", "parse_index"]

INTERVENTION_KEYS = ("module", "op", "value", "index", "element")

_INT = re.compile(r"-?\d+")
_SLICE = re.compile(r"(-?\d+)?:(-?\d+)?(?::(-?\d+)?)?")


class IndexExpression(tuple[Any, ...]):
    """A NumPy index tuple read from the wire, shown (in messages) as the request wrote it."""

    source: Any

    def __new__(cls, items: tuple[Any, ...], source: Any) -> IndexExpression:
        expression = super().__new__(cls, items)
        expression.source = source
        return expression

    def __repr__(self) -> str:
        return repr(self.source)


def parse_index(index: Any) -> IndexExpression | None:
    """The ``output[index]`` key that a wire ``index`` means (None: the whole output).

    Raises:
        CaptureError: (field ``index``) not an int, a non-empty list of ints or an
            index expression string, or an expression that cannot be read.
    """
    if index is None:
        return None
    if isinstance(index, str):
        return IndexExpression(_parse_expression(index), index)
    if _is_int(index):
        return IndexExpression((slice(None), index), index)
    if isinstance(index, list):
        if not index or not all(_is_int(i) for i in index):
            raise CaptureError(
                "index",
                f"must be an int, a non-empty list of ints (dimension 1) or an index "
                f"expression string such as ':, :, 0', got {index!r}",
            )
        return IndexExpression((slice(None), index), index)
    raise CaptureError(
        "index",
        f"must be an int, a list of ints (dimension 1) or an index expression string "
        f"such as ':, :, 0', got {index!r}",
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_expression(text: str) -> tuple[Any, ...]:
    items: list[Any] = []
    for part in (p.strip() for p in text.split(",")):
        if part == "...":
            items.append(Ellipsis)
        elif _INT.fullmatch(part):
            items.append(int(part))
        elif (match := _SLICE.fullmatch(part)) is not None:
            start, stop, step = (int(g) if g else None for g in match.groups())
            if step == 0:
                raise CaptureError("index", f"{text!r}: slice step cannot be zero")
            items.append(slice(start, stop, step))
        else:
            raise CaptureError(
                "index",
                f"{text!r}: cannot read {part!r}; use ints, slices (a:b:c) and one '...', "
                "separated by commas",
            )
    if items.count(Ellipsis) > 1:
        raise CaptureError("index", f"{text!r}: an index can only have a single ellipsis ('...')")
    return tuple(items)


def intervention_from_json(spec: Any, label: str) -> Intervention:
    """The :class:`~mininn.nn.Intervention` that the JSON object ``spec`` describes.

    Args:
        spec: ``{"module", "op", "value", "index", "element"}`` (``module`` and ``op`` required).
        label: the field ``spec`` came from (``interventions[0]``), put before every error's field.

    Raises:
        CaptureError: not an object, an unknown or missing key, or a bad value.
    """
    if not isinstance(spec, Mapping):
        raise CaptureError(label, f"must be an object with 'module' and 'op', got {spec!r}")
    unknown = [key for key in spec if key not in INTERVENTION_KEYS]
    if unknown:
        quoted = ", ".join(f"'{key}'" for key in INTERVENTION_KEYS)
        raise CaptureError(f"{label}.{unknown[0]}", f"is not a known key; use {quoted}")
    for key in ("module", "op"):
        if key not in spec:
            raise CaptureError(f"{label}.{key}", "is required")
    arguments = {key: spec[key] for key in INTERVENTION_KEYS if key in spec and key != "index"}
    try:
        intervention = Intervention(**arguments)
        if "index" in spec:  # checked last, after the fields the wire passes through
            intervention = dataclasses.replace(intervention, index=parse_index(spec["index"]))
        return intervention
    except CaptureError as exc:
        raise exc.prefixed(f"{label}.") from None


def interventions_from_json(value: Any) -> Iterator[Intervention]:
    """The interventions of the JSON list ``value``, built one by one as they are read.

    Lazy on purpose: :class:`~mininn.nn.ActivationCapture` reads its
    ``interventions`` after checking its other arguments, so a request with
    several bad fields is told about the same one first as ever.

    Raises:
        CaptureError: ``value`` is not a list, or an element is a bad intervention.
    """
    if not isinstance(value, list):
        raise CaptureError("interventions", f"must be a list of interventions, got {value!r}")
    for position, spec in enumerate(value):
        yield intervention_from_json(spec, f"interventions[{position}]")
