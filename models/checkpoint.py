"""Safetensors checkpoints that carry ``mininn.architecture`` and ``mininn.config`` metadata."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mininn.serialization import save

__all__ = ["checkpoint_metadata", "save_checkpoint"]


def checkpoint_metadata(architecture: str, config: Mapping[str, Any], **extra: object) -> dict[str, str]:
    """``{"mininn.architecture": ..., "mininn.config": <JSON>, "mininn.<key>": str(value), ...}``."""
    metadata = {
        "mininn.architecture": architecture,
        "mininn.config": json.dumps(dict(config), sort_keys=True),
    }
    metadata.update({f"mininn.{key}": str(value) for key, value in extra.items()})
    return metadata


def save_checkpoint(
    tensors: Mapping[str, Any], path: Path, architecture: str, config: Mapping[str, Any], **extra: object
) -> None:
    """Write ``tensors`` (mininn tensors or host arrays) to ``path`` as safetensors with metadata.

    The file is written under a temporary name beside ``path`` and renamed into place.
    """
    metadata = checkpoint_metadata(architecture, config, **extra)
    save(dict(tensors), Path(path), format="safetensors", metadata=metadata)
