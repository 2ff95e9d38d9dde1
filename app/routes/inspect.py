"""Looking inside a loaded model: ``.../parameters`` and ``.../modules``."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from app.http.auth import require_read
from app.http.dependencies import PlaneDep
from app.routes._params import on_both_forms
from app.runtime.manager import ModelVersion

__all__ = ["router"]

router = APIRouter(tags=["inspection"], dependencies=[Depends(require_read)])

Stats = Annotated[bool, Query(description="Add mean, std, min, max, L2 norm and a histogram per tensor.")]
Bins = Annotated[int, Query(ge=1, le=1000, description="Histogram bins when stats=true.")]

_PARAMETERS_EXAMPLE = {
    "model_name": "mlp",
    "model_version": "1",
    "parameters": [
        {
            "name": "0.weight",
            "shape": [8, 4],
            "datatype": "FP32",
            "dtype": "float32",
            "device": "cpu",
            "numel": 32,
            "bytes": 128,
            "requires_grad": True,
            "persistent": True,
        }
    ],
    "buffers": [],
    "totals": {
        "parameters": 1,
        "parameter_elements": 32,
        "trainable_elements": 32,
        "parameter_bytes": 128,
        "buffers": 0,
        "buffer_elements": 0,
        "persistent_buffer_elements": 0,
        "buffer_bytes": 0,
    },
}
_MODULES_EXAMPLE = {
    "model_name": "mlp",
    "model_version": "1",
    "root": {
        "name": "",
        "type": "MLP",
        "extra_repr": "",
        "training": False,
        "parameters": 0,
        "total_parameters": 58,
        "children": [
            {
                "name": "0",
                "type": "Linear",
                "extra_repr": "in_features=4, out_features=8, bias=True",
                "training": False,
                "parameters": 40,
                "total_parameters": 40,
                "children": [],
            }
        ],
    },
}


async def parameters(
    model: ModelVersion, plane: PlaneDep, stats: Stats = False, bins: Bins = 20
) -> dict[str, Any]:
    """Every parameter and buffer of the version, with totals (and statistics)."""
    return await plane.parameters(model, stats=stats, bins=bins)


async def modules(model: ModelVersion, plane: PlaneDep) -> dict[str, Any]:
    """The module tree of the version, as ``named_modules()`` walks it."""
    return plane.modules(model)


for tail, endpoint, summary, example in (
    ("/parameters", parameters, "Named parameters and buffers", _PARAMETERS_EXAMPLE),
    ("/modules", modules, "Module tree", _MODULES_EXAMPLE),
):
    ok = {200: {"content": {"application/json": {"example": example}}}}
    on_both_forms(router, "GET", tail, endpoint, summary=summary, responses=ok)
