"""Triton's generate extension on the wire: a request's fields in, the engine's request out, responses back.

One translation serves ``POST .../generate``, ``.../generate_stream`` and the
gRPC ``ModelStreamInfer`` of a text model. A request has

- ``text_input``: the prompt (or ``input_ids``, token ids, for a model without a tokenizer);
- sampling values (:data:`SAMPLING_KEYS`: ``max_tokens``, ``temperature``, ``top_k``, ``top_p``,
  ``seed``, ``stop``, ...) as top-level fields / model inputs (as TensorRT-LLM's
  ensembles take them), or in ``parameters`` (as the vLLM backend's examples send them),
  or in a ``sampling_parameters`` JSON string (the vLLM backend's input);
- ``exclude_input_in_output`` (default true: ``text_output`` is the generated text only, as
  Triton's vLLM backend gives it with that input set; false puts the prompt in front) and
  ``stream`` (accepted; the route decides whether it streams);
- ``parameters.timeout`` in microseconds, as for ``/infer``; fields of
  :class:`~app.generation_fields.GenerationExtensions`.

Anything else is refused by name. The answer is ``{"model_name", "model_version", "text_output"}``
plus the vLLM backend's ``finish_reason``, ``num_input_tokens`` and ``num_output_tokens``
(and ``output_ids`` when the request sent ``input_ids``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import ValidationError

from app.errors import BadRequestError, UnprocessableError
from app.generation_fields import GenerationExtensions
from app.runtime.generation import GenerationResult, SamplingParams, TokenEvent
from app.runtime.token_edits import captures_json

__all__ = [
    "CONTROL_KEYS",
    "SAMPLING_KEYS",
    "GenerateRequest",
    "final_fields",
    "parse_generate",
    "token_fields",
]

SAMPLING_KEYS = frozenset(SamplingParams.field_names()) - {"logprobs"}
"""Sampling values a generate request may set (``logprobs`` has no place in Triton's answer)."""

CONTROL_KEYS = frozenset({"stream", "exclude_input_in_output", "sampling_parameters"})
"""Fields that steer the answer rather than the sampling."""

_LISTS = frozenset({"stop", "stop_token_ids", "input_ids"})


@dataclass(frozen=True)
class GenerateRequest:
    """A generate request, translated.

    Attributes:
        text_input: the prompt text (None when the request sent ``input_ids``).
        input_ids: the prompt's token ids, when sent as ids.
        sampling: the sampling values (checked by :class:`SamplingParams`).
        exclude_input: whether ``text_output`` leaves the prompt out.
        timeout_s: the request's deadline (``parameters.timeout``), None: the server's.
        extensions: what :class:`GenerationExtensions` fields add to the generation request.
    """

    text_input: str | None
    input_ids: tuple[int, ...] | None
    sampling: SamplingParams
    exclude_input: bool = True
    timeout_s: float | None = None
    extensions: dict[str, Any] = field(default_factory=dict)


def parse_generate(
    fields: Mapping[str, Any],
    parameters: Mapping[str, Any],
    *,
    model: str,
    ignore: frozenset[str] = frozenset(),
) -> GenerateRequest:
    """Translate a generate request: its top-level fields (or gRPC inputs) and its ``parameters``.

    Args:
        fields: the request's fields besides ``parameters`` (values as JSON gives them, or arrays).
        parameters: the request's ``parameters``.
        model: the model's name, for messages.
        ignore: parameter names the transport itself reads.

    Raises:
        BadRequestError: an unknown field or parameter (named), one given twice, a value of the
            wrong type, or bad sampling values.
        UnprocessableError: neither or both of ``text_input`` and ``input_ids``.
    """
    values: dict[str, Any] = {}
    extensions: dict[str, Any] = {}
    for key, value in fields.items():
        _take(values, extensions, key, _scalar(key, value), "field")
    for key, value in parameters.items():
        if key not in ignore:
            _take(values, extensions, key, _scalar(key, value), "parameter")
    if "sampling_parameters" in values:
        for key, value in _sampling_parameters(values.pop("sampling_parameters")).items():
            _take(values, extensions, key, value, "sampling_parameters key")
    text, ids = _prompt(values, model)
    sampling = {key: _sampling_value(key, values[key]) for key in SAMPLING_KEYS if key in values}
    return GenerateRequest(
        text_input=text,
        input_ids=ids,
        sampling=SamplingParams(**sampling),
        exclude_input=_flag(values.get("exclude_input_in_output", True), "exclude_input_in_output"),
        timeout_s=_timeout_s(values.get("timeout")),
        extensions=_extensions(extensions),
    )


def _take(values: dict[str, Any], extensions: dict[str, Any], key: str, value: Any, what: str) -> None:
    known = SAMPLING_KEYS | CONTROL_KEYS | {"text_input", "input_ids", "timeout"}
    target = values if key in known else extensions
    if key not in known and key not in GenerationExtensions.model_fields:
        listed = ", ".join(sorted(known | set(GenerationExtensions.model_fields)))
        raise BadRequestError(f"unknown {what} '{key}' for generate; the accepted names are {listed}")
    if key in values or key in extensions:
        raise BadRequestError(f"'{key}' is given more than once (as a field and a parameter?); give it once")
    target[key] = value


def _scalar(key: str, value: Any) -> Any:
    """A gRPC input's array as the value JSON would give (lists for list fields, else one element)."""
    if not isinstance(value, np.ndarray):
        return value
    items = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v.item() for v in value.reshape(-1)]
    if key in _LISTS:
        return items
    if len(items) != 1:
        raise BadRequestError(f"input '{key}' must hold one element, got {len(items)}")
    return items[0]


def _sampling_parameters(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise BadRequestError(f"sampling_parameters is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequestError("sampling_parameters must be a JSON object (or a string holding one)")
    return value


def _prompt(values: dict[str, Any], model: str) -> tuple[str | None, tuple[int, ...] | None]:
    text, ids = values.get("text_input"), values.get("input_ids")
    if (text is None) == (ids is None):
        raise UnprocessableError(
            f"a generate request for model '{model}' needs 'text_input' (the prompt), or 'input_ids' "
            "(token ids) for a model without a tokenizer; send exactly one of them"
        )
    if text is not None and not isinstance(text, str):
        raise BadRequestError(f"'text_input' must be a string, got {type(text).__name__}")
    if ids is None:
        return text, None
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise BadRequestError("'input_ids' must be a list of token ids (integers)")
    return None, tuple(ids)


def _sampling_value(key: str, value: Any) -> Any:
    if key == "stop":
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(s, str) and s for s in value):
            raise BadRequestError("'stop' must be a non-empty string or a list of them")
        return tuple(value)
    if key == "stop_token_ids":
        if not isinstance(value, list):
            raise BadRequestError("'stop_token_ids' must be a list of token ids")
        return tuple(value)
    return value


def _flag(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise BadRequestError(f"'{key}' must be true or false, got {value!r}")
    return value


def _timeout_s(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadRequestError(f"parameter 'timeout' must be a positive integer (microseconds), got {value!r}")
    return value / 1e6


def _extensions(values: dict[str, Any]) -> dict[str, Any]:
    try:
        return GenerationExtensions.model_validate(values).generation_fields()
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise BadRequestError(f"parameter '{where}': {first['msg']}") from None


def token_fields(event: TokenEvent, *, with_ids: bool) -> dict[str, Any]:
    """The fields one token adds to a stream's frame: its text (and id), and ``captures``
    (``{module: [its step's record]}``) when the request asked for them."""
    fields: dict[str, Any] = {"text_output": event.text}
    if with_ids:
        fields["output_ids"] = [event.token_id]
    if event.captures:
        fields["captures"] = captures_json(event.captures)
    return fields


def final_fields(result: GenerationResult) -> dict[str, Any]:
    """What the vLLM backend reports of a finished generation."""
    return {
        "finish_reason": result.finish_reason,
        "num_input_tokens": result.prompt_tokens,
        "num_output_tokens": result.completion_tokens,
    }
