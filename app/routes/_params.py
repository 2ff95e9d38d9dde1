"""Path parameters shared by the model routes, with their OpenAPI descriptions."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

__all__ = ["ModelName", "ModelVersionText"]

ModelName = Annotated[
    str,
    Path(description="Model name: 1-64 letters, digits, '_', '.' or '-'.", examples=["digits"]),
]
ModelVersionText = Annotated[
    str,
    Path(
        description="Model version, a positive integer; omit the /versions/{v} part for the highest.",
        examples=["1"],
    ),
]
