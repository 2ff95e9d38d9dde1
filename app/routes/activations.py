"""Activations: ``POST /v2/models/{m}[/versions/{v}]/activations``.

An inference request (JSON or binary tensors, parsed exactly as for
``/infer``) plus capture fields; see :mod:`app.v2.captures` for the fields,
the response and how concurrent requests stay isolated.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from app.http.auth import require_read
from app.http.dependencies import PlaneDep
from app.routes._inference import inference_openapi, inference_responses, serve_rest_inference
from app.routes._params import on_both_forms
from app.runtime.manager import ModelVersion
from app.v2.captures import ACTIVATION_FIELDS, activations_capture

__all__ = ["router"]

router = APIRouter(tags=["activations"], dependencies=[Depends(require_read)])

_REQUEST_EXAMPLE = {
    "inputs": [{"name": "image", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": [0.0] * 784}],
    "modules": ["conv1", "layer1.*"],
    "capture": "output",
    "reduce": "stats",
    "bins": 10,
    "interventions": [{"module": "conv1", "op": "zero", "index": [0, 3]}],
}
_RESPONSE_EXAMPLE = {
    "model_name": "digits",
    "model_version": "1",
    "outputs": [{"name": "logits", "datatype": "FP32", "shape": [1, 10], "data": [0.1] * 10}],
    "activations": [
        {
            "name": "conv1:output",
            "shape": [1, 6, 28, 28],
            "mean": 0.02,
            "std": 0.3,
            "min": -1.1,
            "max": 1.4,
            "l2_norm": 20.5,
            "zero_fraction": 0.0,
            "histogram": [3, 40, 200, 900, 1500, 1400, 500, 120, 40, 1],
            "bin_edges": [-1.1, -0.85, -0.6, -0.35, -0.1, 0.15, 0.4, 0.65, 0.9, 1.15, 1.4],
        }
    ],
}
_OPENAPI = inference_openapi(
    (
        "An Open Inference Protocol request (JSON, or JSON followed by binary tensors) with "
        "the extra keys 'modules' (names or glob patterns over named_modules(); '*' matches "
        "dots too), 'capture' (output | input | both), 'reduce' (none | stats), 'bins' and "
        "'interventions' (a list of {module, op: zero | scale | add | set, value, index, "
        "element}); the keys may also sit in 'parameters'."
    ),
    _REQUEST_EXAMPLE,
)
_RESPONSES = inference_responses(
    _RESPONSE_EXAMPLE,
    e413="body over MININN_MAX_REQUEST_BYTES, or captures over MININN_MAX_ACTIVATION_ELEMENTS",
    e422="a bad field (named), an unknown module (closest names listed), or inputs that do not fit the model",
)


async def activations(model: ModelVersion, request: Request, plane: PlaneDep) -> Response:
    """Run the model (the highest version, or the one in the path) with hooks on the chosen modules."""
    return await serve_rest_inference(request, plane, model, activations_capture, ACTIVATION_FIELDS)


on_both_forms(
    router,
    "POST",
    "/activations",
    activations,
    summary="Inference with activation capture and interventions",
    response_class=Response,
    openapi_extra=_OPENAPI,
    responses=_RESPONSES,
)
