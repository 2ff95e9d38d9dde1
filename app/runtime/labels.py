"""Class labels of a model: ``"labels"`` in ``model.json``, read when a version loads.

``"labels": "labels.txt"`` names a file in the model's folder with one label per
line (line ``i`` is class ``i``); it applies to every output. ``"labels":
{"logits": "labels.txt"}`` names a file per output. The classification extension
(:mod:`app.v2.classification`) appends the label to each ``score:index`` it returns,
and the Triton-style configuration lists the file as the output's ``label_filename``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from app.errors import ServiceError, UnprocessableError
from app.store.repository import ModelSpec, validate_file_name

__all__ = ["check_labels_key", "label_files", "read_labels"]


def check_labels_key(spec: ModelSpec) -> None:
    """Check the form of ``model.json``'s ``labels`` (the files are read at load).

    Raises:
        UnprocessableError: not a file name, nor an object of output name -> file name.
    """
    try:
        _files(spec.model_extra or {}, None)
    except ValueError as exc:
        raise UnprocessableError(f"model.json key 'labels': {exc}") from None


def label_files(spec: ModelSpec, outputs: Sequence[str]) -> dict[str, str]:
    """Output name -> its label file name, for the outputs that have one (unchecked)."""
    try:
        return _files(spec.model_extra or {}, outputs)
    except ValueError:
        return {}


def read_labels(
    spec: ModelSpec,
    folder: Path,
    outputs: Sequence[str],
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, tuple[str, ...]]:
    """Output name -> its labels, read from the files ``model.json``'s ``labels`` names.

    Args:
        shapes: output name -> declared shape (``-1`` first: batched); with it, a file with
            fewer labels than an output has classes is refused.

    Raises:
        ValueError: a bad ``labels`` key, a file name that is not plain, a file that is
            missing, empty or not UTF-8, with fewer lines than its output has classes,
            or an output the model does not have.
    """
    files = _files(spec.model_extra or {}, outputs)
    read = {file: _read_file(folder, file) for file in sorted(set(files.values()))}
    for output, file in files.items():
        classes = _class_count((shapes or {}).get(output, ()))
        if classes is not None and len(read[file]) < classes:
            raise ValueError(
                f"labels file {file!r} has {len(read[file])} labels but output '{output}' has {classes} "
                "classes; write one label per class, one per line"
                + ("" if len(files) == 1 else ' (or name a file per output: {"<output>": "<file>"})')
            )
    return {output: read[file] for output, file in files.items()}


def _class_count(shape: Sequence[int]) -> int | None:
    """How many classes an output of declared ``shape`` has (None: unknown, or a size given per request)."""
    dims = list(shape[1:] if shape and shape[0] == -1 else shape)
    if not dims or any(d < 0 for d in dims):
        return None
    return math.prod(dims)


def _files(extra: dict[str, Any], outputs: Sequence[str] | None) -> dict[str, str]:
    value = extra.get("labels")
    if value is None:
        return {}
    if isinstance(value, str):
        _check_name(value)
        return {output: value for output in outputs or ()}
    if not isinstance(value, dict) or not all(isinstance(f, str) for f in value.values()):
        raise ValueError(
            'must be a file name in the model\'s folder ("labels.txt") or an object of output name -> '
            f'file name ({{"logits": "labels.txt"}}), got {value!r}'
        )
    for file in value.values():
        _check_name(file)
    if outputs is not None:
        unknown = sorted(set(value) - set(outputs))
        if unknown:
            raise ValueError(f"no output {', '.join(unknown)}; the outputs are {', '.join(outputs)}")
    return dict(value)


def _check_name(file: str) -> None:
    try:
        validate_file_name(file)
    except ServiceError as exc:
        raise ValueError(exc.message) from None


def _read_file(folder: Path, file: str) -> tuple[str, ...]:
    try:
        text = (folder / file).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"labels file {file!r} is not in the model's folder") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"labels file {file!r} is not UTF-8 text: {exc}") from None
    labels = tuple(text.splitlines())
    if not labels:
        raise ValueError(f"labels file {file!r} is empty; write one label per line")
    return labels
