"""Model metadata, readiness, Triton-style configuration and statistics.

``GET /v2/models/{m}[/versions/{v}]``, ``.../ready``, ``.../config``,
``.../stats``, and ``GET /v2/models/stats`` for every model.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Response

from app.auth import require_read
from app.batching import BatchingPolicy
from app.dependencies import ManagerDep
from app.errors import NotFoundError
from app.model_manager import ModelEntry, ModelManager, ModelState, ModelVersion
from app.protocol import triton_type
from app.repository import parse_version
from app.routes._params import ModelName, ModelVersionText

__all__ = ["PLATFORM", "router"]

PLATFORM = "mininn"

router = APIRouter(tags=["models"], dependencies=[Depends(require_read)])

_METADATA_EXAMPLE = {
    "name": "digits",
    "versions": ["1"],
    "platform": PLATFORM,
    "inputs": [{"name": "image", "datatype": "FP32", "shape": [-1, 1, 28, 28]}],
    "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}],
    "architecture": "lenet5",
    "state": "READY",
    "reason": "",
}


@router.get("/v2/models/stats", summary="Statistics of every model")
async def all_statistics(manager: ManagerDep) -> dict[str, Any]:
    """Triton statistics extension: ``{"model_stats": [...]}`` for every loaded version."""
    rows = [v.statistics.as_dict() for e in manager.entries() for _, v in sorted(e.versions.items())]
    return {"model_stats": rows}


@router.get(
    "/v2/models/{model_name}",
    summary="Model metadata",
    responses={200: {"content": {"application/json": {"example": _METADATA_EXAMPLE}}}},
)
async def model_metadata(model_name: ModelName, manager: ManagerDep) -> dict[str, Any]:
    """Name, versions, platform, inputs and outputs (``-1``: any size), state and reason."""
    return _metadata(manager, model_name, None)


@router.get("/v2/models/{model_name}/versions/{model_version}", summary="Model version metadata")
async def model_version_metadata(
    model_name: ModelName, model_version: ModelVersionText, manager: ManagerDep
) -> dict[str, Any]:
    """Metadata of one version."""
    return _metadata(manager, model_name, parse_version(model_version))


@router.get("/v2/models/{model_name}/ready", summary="Model readiness", response_class=Response)
async def model_ready(model_name: ModelName, manager: ManagerDep) -> Response:
    """200 (empty body) when the model serves; 503 with the reason when not; 404 when unknown."""
    manager.version(model_name)
    return Response(status_code=200)


@router.get(
    "/v2/models/{model_name}/versions/{model_version}/ready",
    summary="Model version readiness",
    response_class=Response,
)
async def model_version_ready(
    model_name: ModelName, model_version: ModelVersionText, manager: ManagerDep
) -> Response:
    """200 when that version serves."""
    manager.version(model_name, parse_version(model_version))
    return Response(status_code=200)


@router.get("/v2/models/{model_name}/config", summary="Triton-style model configuration")
async def model_config(model_name: ModelName, manager: ManagerDep) -> dict[str, Any]:
    """``max_batch_size``, ``input``/``output`` with ``data_type`` and ``dims`` (no batch dim), ..."""
    return _config(manager, manager.version(model_name))


@router.get(
    "/v2/models/{model_name}/versions/{model_version}/config", summary="Triton-style version configuration"
)
async def model_version_config(
    model_name: ModelName, model_version: ModelVersionText, manager: ManagerDep
) -> dict[str, Any]:
    """The configuration of one version."""
    return _config(manager, manager.version(model_name, parse_version(model_version)))


@router.get("/v2/models/{model_name}/stats", summary="Model statistics")
async def model_statistics(model_name: ModelName, manager: ManagerDep) -> dict[str, Any]:
    """Triton statistics extension for every loaded version of the model."""
    entry = manager.entry(model_name)
    return {"model_stats": [v.statistics.as_dict() for _, v in sorted(entry.versions.items())]}


@router.get("/v2/models/{model_name}/versions/{model_version}/stats", summary="Model version statistics")
async def model_version_statistics(
    model_name: ModelName, model_version: ModelVersionText, manager: ManagerDep
) -> dict[str, Any]:
    """Statistics of one loaded version."""
    version = manager.version(model_name, parse_version(model_version))
    return {"model_stats": [version.statistics.as_dict()]}


def _metadata(manager: ModelManager, name: str, version: int | None) -> dict[str, Any]:
    entry = manager.entry(name)
    versions = sorted(entry.versions) or manager.disk_versions(name)
    if version is not None and version not in versions:
        raise NotFoundError(f"model '{name}' has no version {version}; its versions are {_join(versions)}")
    loaded = _pick(entry, version)
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


def _pick(entry: ModelEntry, version: int | None) -> ModelVersion | None:
    if entry.state is not ModelState.READY:
        return None
    return entry.latest if version is None else entry.versions.get(version)


def _tensor(spec: Any) -> dict[str, Any]:
    return {"name": spec.name, "datatype": spec.datatype, "shape": list(spec.shape)}


def _join(versions: list[int]) -> str:
    return ", ".join(str(v) for v in versions) or "(none)"


def _config(manager: ModelManager, version: ModelVersion) -> dict[str, Any]:
    settings = manager.settings
    batched = version.max_batch_size > 0
    config: dict[str, Any] = {
        "name": version.name,
        "platform": PLATFORM,
        "backend": PLATFORM,
        "version_policy": {"all": {}},
        "max_batch_size": version.max_batch_size,
        "input": [_config_tensor(s, batched, is_input=True) for s in version.inputs],
        "output": [_config_tensor(s, batched, is_input=False) for s in version.outputs],
        "instance_group": [_instance_group(version)],
        "parameters": {
            "architecture": {"string_value": version.spec.label},
            "device": {"string_value": version.device},
            "dtype": {"string_value": version.dtype},
        },
        "mininn": {
            "architecture": version.spec.architecture,
            "config": version.spec.config,
            **({"module": version.spec.module, "init": version.spec.init} if version.spec.module else {}),
            "device": version.device,
            "dtype": version.dtype,
            "description": version.spec.description,
        },
    }
    batching = BatchingPolicy.for_model(version.spec, version.max_batch_size, settings)
    if batching.enabled:
        config["dynamic_batching"] = batching.triton_config(
            max_queue=settings.max_queue, timeout_ms=settings.request_timeout_ms
        )
    return config


def _config_tensor(spec: Any, batched: bool, *, is_input: bool) -> dict[str, Any]:
    dims = list(spec.shape[1:] if batched else spec.shape)
    tensor: dict[str, Any] = {"name": spec.name, "data_type": triton_type(spec.datatype), "dims": dims}
    if is_input:
        tensor.update(format="FORMAT_NONE", optional=False)
    return tensor


def _instance_group(version: ModelVersion) -> dict[str, Any]:
    group: dict[str, Any] = {"name": f"{version.name}_0", "count": 1}
    if version.device.startswith("cuda"):
        _, _, index = version.device.partition(":")
        group.update(kind="KIND_GPU", gpus=[int(index or 0)])
    else:
        group["kind"] = "KIND_CPU"
    return group
