"""The classification extension: an output asked for with ``"parameters": {"classification": k}``.

Instead of the tensor, the response carries its ``k`` largest elements as BYTES
strings ``"<score>:<index>"``, or ``"<score>:<index>:<label>"`` when the model has
a label for that index (``"labels"`` in ``model.json``: a file in the model's folder,
one label per line). This is Triton's classification extension, which
``tritonclient``'s ``class_count`` asks for, and the strings are written as
Triton writes them: the score as C's ``%f`` (``"0.931255"``) for floating
outputs and as a plain integer for integer ones, largest first (ties: the lower
index first).

An output whose declared shape starts with the batch dimension (``-1``) is
classified row by row and comes back shaped ``[batch, min(k, row size)]``; any
other output as a whole, shaped ``[min(k, size)]``. Both transports get this
from :meth:`app.runtime.dataplane.DataPlane.infer`, which calls
:func:`classify_outputs` on the model's outputs before encoding them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from app.errors import UnprocessableError
from app.v2.request import RequestedOutput
from app.v2.tensors import host_array

__all__ = ["CLASSIFIABLE_DATATYPES", "check_classification", "classify", "classify_outputs"]

CLASSIFIABLE_DATATYPES = frozenset(
    {"UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "BF16", "FP32", "FP64"}
)
"""Output datatypes the extension ranks (Triton refuses BOOL and BYTES too)."""


def check_classification(requested: Sequence[RequestedOutput], datatypes: Mapping[str, str]) -> None:
    """Refuse classification of an output that holds no numbers, before the model runs.

    Raises:
        UnprocessableError: a requested output's declared datatype cannot be ranked.
    """
    for output in requested:
        datatype = datatypes.get(output.name)
        if output.classification and datatype is not None and datatype not in CLASSIFIABLE_DATATYPES:
            raise UnprocessableError(
                f"class result not available for output '{output.name}' due to unsupported type '{datatype}'"
            )


def classify_outputs(
    requested: Sequence[RequestedOutput],
    outputs: dict[str, Any],
    *,
    shapes: Mapping[str, Sequence[int]],
    labels: Mapping[str, Sequence[str]],
) -> dict[str, Any]:
    """``outputs`` with every output requested with ``classification`` replaced by its top classes.

    Returns ``outputs`` itself when no output asks for classification.

    Args:
        requested: the request's outputs.
        outputs: output name -> array, as the model produced them.
        shapes: output name -> declared shape (``-1`` first: batched).
        labels: output name -> its labels, for the outputs that have a label file.
    """
    wanted = [output for output in requested if output.classification and output.name in outputs]
    if not wanted:
        return outputs
    classified = dict(outputs)
    for output in wanted:
        shape = shapes.get(output.name, ())
        classified[output.name] = classify(
            host_array(outputs[output.name]),
            output.classification,
            labels=labels.get(output.name, ()),
            batched=bool(shape) and shape[0] == -1,
        )
    return classified


def classify(array: np.ndarray, k: int, *, labels: Sequence[str] = (), batched: bool = False) -> np.ndarray:
    """The top ``k`` elements of ``array`` (per row when ``batched``) as ``score:index[:label]`` bytes.

    Raises:
        UnprocessableError: the array holds no numbers (BOOL, BYTES).
    """
    if array.dtype.kind not in "iuf" and array.dtype.name != "bfloat16":
        raise UnprocessableError(
            f"class result not available for an output of dtype {array.dtype}: it holds no scores"
        )
    batched = batched and array.ndim >= 1
    width = int(np.prod(array.shape[1:] if batched else array.shape, dtype=np.int64))
    rows = array.reshape(array.shape[0] if batched else 1, width)
    count = min(k, rows.shape[1])
    result = np.empty((rows.shape[0], count), dtype=object)
    as_integer = array.dtype.kind in "iu"
    for r, row in enumerate(rows):
        for c, index in enumerate(np.argsort(_descending(row), kind="stable")[:count]):
            score = str(int(row[index])) if as_integer else "%f" % float(row[index])
            label = f":{labels[index]}" if index < len(labels) else ""
            result[r, c] = f"{score}:{index}{label}".encode()
    return result if batched else result[0]


def _descending(row: np.ndarray) -> np.ndarray:
    """A key whose ascending order is ``row``'s descending order (no integer overflow, no rounding)."""
    if row.dtype.kind == "u":
        return np.iinfo(row.dtype).max - row
    if row.dtype.kind == "i":
        return ~row  # -x - 1: order-reversing for every value, the smallest included
    return -row.astype(np.float64)
