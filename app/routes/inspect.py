"""Looking inside a loaded model: ``.../parameters`` and ``.../modules``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from app.auth import require_read
from app.dependencies import ManagerDep
from app.inspection import module_tree, parameter_table
from app.model_manager import ModelVersion
from app.repository import parse_version
from app.routes._params import ModelName, ModelVersionText

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


@router.get(
    "/v2/models/{model_name}/parameters",
    summary="Named parameters and buffers",
    responses={200: {"content": {"application/json": {"example": _PARAMETERS_EXAMPLE}}}},
)
async def parameters(
    model_name: ModelName, manager: ManagerDep, stats: Stats = False, bins: Bins = 20
) -> dict[str, Any]:
    """Every parameter and buffer of the highest version, with totals (and statistics)."""
    return await _parameters(manager.version(model_name), stats, bins)


@router.get("/v2/models/{model_name}/versions/{model_version}/parameters", summary="Parameters of a version")
async def version_parameters(
    model_name: ModelName,
    model_version: ModelVersionText,
    manager: ManagerDep,
    stats: Stats = False,
    bins: Bins = 20,
) -> dict[str, Any]:
    """Every parameter and buffer of one version."""
    return await _parameters(manager.version(model_name, parse_version(model_version)), stats, bins)


@router.get(
    "/v2/models/{model_name}/modules",
    summary="Module tree",
    responses={200: {"content": {"application/json": {"example": _MODULES_EXAMPLE}}}},
)
async def modules(model_name: ModelName, manager: ManagerDep) -> dict[str, Any]:
    """The module tree of the highest version, as ``named_modules()`` walks it."""
    return _modules(manager.version(model_name))


@router.get("/v2/models/{model_name}/versions/{model_version}/modules", summary="Module tree of a version")
async def version_modules(
    model_name: ModelName, model_version: ModelVersionText, manager: ManagerDep
) -> dict[str, Any]:
    """The module tree of one version."""
    return _modules(manager.version(model_name, parse_version(model_version)))


async def _parameters(version: ModelVersion, stats: bool, bins: int) -> dict[str, Any]:
    # statistics of a large model take a while: keep the event loop free
    table = await asyncio.to_thread(parameter_table, version.module, stats=stats, bins=bins)
    return {"model_name": version.name, "model_version": str(version.version), **table}


def _modules(version: ModelVersion) -> dict[str, Any]:
    return {
        "model_name": version.name,
        "model_version": str(version.version),
        "root": module_tree(version.module),
    }
