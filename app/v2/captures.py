"""Activation capture and interventions for served models, over ``/activations`` and ``/infer``.

Two ways in, one mechanism (:class:`mininn.nn.ActivationCapture`):

- ``POST /v2/models/{m}[/versions/{v}]/activations`` takes an inference request
  (JSON or binary tensors) plus the fields ``modules``, ``capture``,
  ``reduce``, ``bins`` and ``interventions`` as top-level keys of the JSON
  header, or inside ``parameters`` (``interventions`` there may be a JSON
  string, since V2 parameters hold scalars); a field may not be in both.
- ``POST .../infer`` with ``"parameters": {"capture": "layer1.*,fc"}`` (comma-
  separated names or patterns), optionally ``"capture_mode"`` (``output``,
  ``input``, ``both``) and ``"interventions"`` (a JSON string): the captures
  come back as extra V2 outputs, so a stock client reads them with
  ``result.as_numpy("layer1.0:output")``.

Responses carry the model's outputs (filtered by ``outputs`` as usual), then
every capture, in ``named_modules()`` order. Captures are binary when the
request asks for binary outputs (``binary_data_output``, or any requested
output with ``binary_data``), JSON otherwise. With ``reduce: "stats"`` the
response's JSON gets an ``activations`` list of ``{"name", "shape", "mean",
"std", "min", "max", "l2_norm", "zero_fraction", "histogram", "bin_edges"}``.

Isolation: the :class:`~mininn.nn.ActivationCapture` is built (and every field
checked) on the event loop, then entered on the inference thread that runs the
request's own forward, which is never batched with other requests. Its hooks
act only in that thread's context, so concurrent requests on the same model
neither see nor change each other's tensors, and the hooks are removed when
the forward ends, failed or not. Requests without capture never register a
hook and keep ``Module.__call__``'s fast path.

The fields become Python objects here and in :mod:`app.v2.capture_fields`
(interventions and their ``index`` forms); :mod:`mininn.nn.capture` sees only
those objects.

Errors: a bad field is a 422 naming it; an unknown module name lists the
closest names; captures over ``MININN_MAX_ACTIVATION_ELEMENTS`` elements are a
413 naming the total the request would have returned.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from app.errors import UnprocessableError
from app.http.json_limits import parse_json
from app.v2 import EncodedResponse, InferenceRequest, RequestedOutput, encode_inference_response
from app.v2.capture_fields import interventions_from_json
from mininn.nn import ActivationCapture, ActivationStats, CaptureError, Intervention, Module
from mininn.nn.capture import CAPTURE_MODES

__all__ = [
    "ACTIVATION_FIELDS",
    "INFER_PARAMETERS",
    "activations_capture",
    "encode_results",
    "infer_capture",
    "with_capture_outputs",
]

ACTIVATION_FIELDS = ("modules", "capture", "reduce", "bins", "interventions")
INFER_PARAMETERS = ("capture", "capture_mode", "interventions", "steering")  # steering: app.runtime.steering


# ---- building a capture from a request -------------------------------------------------------
def activations_capture(request: InferenceRequest, module: Module, *, max_elements: int) -> ActivationCapture:
    """The capture an ``/activations`` request asks for (not entered yet).

    The fields sit at the top level of the request's JSON or in its ``parameters``.

    Raises:
        UnprocessableError: a bad field (named), a field given twice, or neither
            ``modules`` nor ``interventions``.
    """
    document, parameters = request.document, request.parameters
    fields: dict[str, Any] = {}
    for key in ACTIVATION_FIELDS:
        if key in document and key in parameters:
            raise UnprocessableError(
                f"'{key}' is given both at the top level and in 'parameters'; give it once"
            )
        if key in document or key in parameters:
            fields[key] = document[key] if key in document else parameters[key]
    if not fields.get("modules") and not fields.get("interventions"):
        raise UnprocessableError(
            "an activations request needs 'modules' (names or glob patterns of the modules to "
            "capture) or 'interventions'"
        )
    return _build(
        module,
        modules=_modules(fields.get("modules", []), "modules"),
        capture=fields.get("capture", "output"),
        reduce=fields.get("reduce", "none"),
        bins=fields.get("bins", 10),
        interventions=_interventions(fields.get("interventions", []), "interventions"),
        max_elements=max_elements,
    )


def infer_capture(
    request: InferenceRequest, module: Module, *, max_elements: int
) -> ActivationCapture | None:
    """The capture an inference request's ``capture`` parameter asks for, or None.

    Raises:
        UnprocessableError: a bad ``capture``, ``capture_mode`` or ``interventions``
            parameter (named), or ``capture_mode``/``interventions`` without ``capture``.
    """
    parameters = request.parameters
    if "capture" not in parameters:
        for key in ("capture_mode", "interventions"):
            if key in parameters:
                raise UnprocessableError(
                    f"parameter '{key}' needs the parameter 'capture' (modules to capture, comma-separated)"
                )
        return None
    value = parameters["capture"]
    if not isinstance(value, str) or not value.strip():
        raise UnprocessableError(
            "parameter 'capture' must be a comma-separated string of module names or glob "
            f'patterns, such as "layer1.*,fc"; got {value!r}'
        )
    mode = parameters.get("capture_mode", "output")
    if mode not in CAPTURE_MODES:
        raise UnprocessableError(
            f"parameter 'capture_mode' must be one of {', '.join(map(repr, CAPTURE_MODES))}, got {mode!r}"
        )
    interventions = _interventions(parameters.get("interventions", []), "parameter 'interventions'")
    try:
        return ActivationCapture(
            module,
            _modules(value, "parameter 'capture'"),
            capture=mode,
            interventions=interventions,
            max_elements=max_elements,
        )
    except CaptureError as exc:
        where = "capture" if exc.field.startswith("modules") else "interventions"
        raise UnprocessableError(f"parameter '{where}': {exc}") from None


def _build(module: Module, **kwargs: Any) -> ActivationCapture:
    try:
        return ActivationCapture(module, **kwargs)
    except CaptureError as exc:
        raise UnprocessableError(str(exc)) from None


def _modules(value: Any, what: str) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",")]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    raise UnprocessableError(
        f"{what} must be a list of module names or glob patterns, or one comma-separated string; "
        f"got {value!r}"
    )


def _interventions(value: Any, what: str) -> Iterator[Intervention]:
    """The interventions of a JSON list, or of a string holding one (V2 parameters hold scalars)."""
    if isinstance(value, str):
        try:
            value = parse_json(value, what)
        except json.JSONDecodeError as exc:
            raise UnprocessableError(
                f"{what} is a string but not a JSON list of interventions: {exc}"
            ) from None
    return interventions_from_json(value)


# ---- the response ----------------------------------------------------------------------------
def encode_results(
    *,
    model_name: str,
    model_version: str,
    request: InferenceRequest,
    results: Mapping[str, Any],
    datatypes: Mapping[str, str],
) -> EncodedResponse:
    """The response: the requested model outputs, then every capture (tensors or statistics).

    Args:
        model_name: the model that ran.
        model_version: its version.
        request: the parsed request (id, requested outputs, ``binary_data_output``).
        results: the outputs, then the captures (what
            :func:`~app.runtime.runner.predict_capturing` returned; no captures for plain inference).
        datatypes: the model's output name -> V2 datatype; any other result is a capture.
    """
    captures = {name: value for name, value in results.items() if name not in datatypes}
    encoded = encode_inference_response(
        model_name=model_name,
        model_version=model_version,
        request_id=request.id,
        outputs=results,
        requested=with_capture_outputs(request, results, datatypes),
        datatypes=datatypes,
    )
    stats = [
        {"name": name, **value.to_dict()}
        for name, value in captures.items()
        if isinstance(value, ActivationStats)
    ]
    return _with_activations(encoded, stats) if stats else encoded


def with_capture_outputs(
    request: InferenceRequest, results: Mapping[str, Any], datatypes: Mapping[str, str]
) -> list[RequestedOutput]:
    """The request's outputs, then every captured tensor as one more output (statistics are not outputs).

    Captures are binary when the request asks for any binary output.
    """
    requested = request.outputs
    arrays = [
        name
        for name, value in results.items()
        if name not in datatypes and not isinstance(value, ActivationStats)
    ]
    if not arrays:
        return requested
    binary = request.parameters.get("binary_data_output") is True or any(r.binary for r in requested)
    return [*requested, *(RequestedOutput(name, binary) for name in arrays)]


def _with_activations(encoded: EncodedResponse, stats: list[dict[str, Any]]) -> EncodedResponse:
    """``encoded`` with an ``activations`` list added to its JSON header."""
    end = encoded.header_length if encoded.header_length is not None else len(encoded.body)
    document = json.loads(encoded.body[:end])
    document["activations"] = stats
    header = json.dumps(document, separators=(",", ":")).encode()
    if encoded.header_length is None:
        return EncodedResponse(header, None)
    return EncodedResponse(header + encoded.body[end:], len(header))
