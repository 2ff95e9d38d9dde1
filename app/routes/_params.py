"""Path parameters shared by the model routes, with their OpenAPI descriptions."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

__all__ = ["ModelName", "ModelVersionText"]

# The patterns are documented (json_schema_extra) rather than enforced by FastAPI, so that a bad
# name or version gets the service's own 400 message from app.repository.
ModelName = Annotated[
    str,
    Path(
        description="Model name: 1-64 letters, digits, '_', '.' or '-'.",
        examples=["digits"],
        json_schema_extra={"pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"},
    ),
]
ModelVersionText = Annotated[
    str,
    Path(
        description="Model version, a positive integer; omit the /versions/{v} part for the highest.",
        examples=["1"],
        json_schema_extra={"pattern": "^[1-9][0-9]{0,17}$"},
    ),
]
