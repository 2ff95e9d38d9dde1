"""Writing safetensors checkpoints with ``mininn.*`` metadata, atomically.

The file is written to a temporary name in the target folder, fsynced and renamed,
so a reader sees either no file or the whole file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

__all__ = ["checkpoint_metadata", "write_safetensors"]


def checkpoint_metadata(architecture: str, config: Mapping[str, Any], **extra: str) -> dict[str, str]:
    """``{"mininn.architecture": ..., "mininn.config": <JSON>, "mininn.<key>": ...}``."""
    metadata = {
        "mininn.architecture": architecture,
        "mininn.config": json.dumps(dict(config), sort_keys=True),
    }
    metadata.update({f"mininn.{key}": str(value) for key, value in extra.items()})
    return metadata


def write_safetensors(tensors: Mapping[str, np.ndarray], path: Path, metadata: Mapping[str, str]) -> None:
    """Write ``tensors`` (host arrays) to ``path`` with ``metadata``, atomically."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        arrays = {name: np.ascontiguousarray(array) for name, array in tensors.items()}
        save_file(arrays, tmp, metadata=dict(metadata))
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a checkpoint is as readable as any file
        _fsync(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync(path: str | Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # platforms that cannot open folders
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
