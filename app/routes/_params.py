"""Path parameters shared by the model routes, and one registration for both URL forms of an endpoint."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, get_type_hints

from fastapi import APIRouter, Depends, Path

from app.http.dependencies import PlaneDep
from app.runtime.manager import ModelVersion

__all__ = ["ModelName", "ModelRef", "ModelVersionText", "on_both_forms"]

# The patterns are documented (json_schema_extra) rather than enforced by FastAPI, so that a bad
# name or version gets the service's own 400 message from app.store.repository.
def _documented(description: str, example: str, pattern: str) -> Any:
    return Path(description=description, examples=[example], json_schema_extra={"pattern": pattern})


ModelName = Annotated[
    str,
    _documented(
        "Model name: 1-64 letters, digits, '_', '.' or '-'.",
        "digits",
        "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
    ),
]
ModelVersionText = Annotated[
    str,
    _documented(
        "Model version, a positive integer; omit the /versions/{v} part for the highest.",
        "1",
        "^[1-9][0-9]{0,17}$",
    ),
]


@dataclass(frozen=True)
class ModelRef:
    """A model named in the path, with the version if the path has one (not resolved yet)."""

    name: str
    version: str | None = None


async def _highest(model_name: ModelName, plane: PlaneDep) -> ModelVersion:
    return await plane.model(model_name)


async def _given(model_name: ModelName, model_version: ModelVersionText, plane: PlaneDep) -> ModelVersion:
    return await plane.model(model_name, model_version)


async def _name(model_name: ModelName) -> ModelRef:
    return ModelRef(model_name)


async def _name_version(model_name: ModelName, model_version: ModelVersionText) -> ModelRef:
    return ModelRef(model_name, model_version)


# (path prefix, summary suffix, what a ModelVersion parameter gets, what a ModelRef parameter gets)
_FORMS = (
    ("/v2/models/{model_name}", "", _highest, _name),
    ("/v2/models/{model_name}/versions/{model_version}", " (given version)", _given, _name_version),
)


def on_both_forms(
    router: APIRouter, method: str, tail: str, endpoint: Callable[..., Any], **route: Any
) -> None:
    """Register ``endpoint`` at ``/v2/models/{m}{tail}`` and ``/v2/models/{m}/versions/{v}{tail}``.

    The endpoint is written once: a parameter annotated :class:`ModelVersion`
    receives the version the path names (the highest without ``/versions/{v}``),
    one annotated :class:`ModelRef` the names as given; both forms document
    their path parameters in the OpenAPI schema.
    """
    hints = get_type_hints(endpoint, include_extras=True)
    signature = inspect.signature(endpoint)
    for prefix, suffix, resolve, reference in _FORMS:
        dependency = {ModelVersion: Depends(resolve), ModelRef: Depends(reference)}
        parameters = [
            p.replace(
                annotation=Annotated[hints[p.name], dependency[hints[p.name]]]
                if hints[p.name] in dependency
                else hints[p.name]
            )
            for p in signature.parameters.values()
        ]

        async def form(*args: Any, **kwargs: Any) -> Any:
            return await endpoint(*args, **kwargs)

        form.__signature__ = signature.replace(parameters=parameters, return_annotation=hints.get("return"))  # type: ignore[attr-defined]
        form.__name__, form.__doc__ = endpoint.__name__, endpoint.__doc__
        summary = route.get("summary")
        options = {**route, "summary": f"{summary}{suffix}"} if summary else route
        router.add_api_route(prefix + tail, form, methods=[method], **options)
