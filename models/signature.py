"""Declared inputs and outputs of an architecture, in Open Inference Protocol (V2) terms."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "DATATYPES",
    "V2_DATATYPES",
    "Signature",
    "TensorSpec",
    "image_classifier_signature",
    "numpy_dtype",
]

V2_DATATYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
    "BYTES": np.dtype(object),
}
"""Every Open Inference Protocol datatype -> the NumPy dtype that carries it (``BF16`` with ``ml_dtypes``).

``BYTES`` tensors are object arrays of ``bytes``. The server's codecs
(``app.v2``) read and write all of them.
"""
try:
    import ml_dtypes

    V2_DATATYPES["BF16"] = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    pass

DATATYPES: dict[str, np.dtype] = {
    name: V2_DATATYPES[name] for name in ("BOOL", "INT32", "INT64", "FP16", "FP32", "FP64", "BYTES")
}
"""The datatypes a model's inputs and outputs may declare (a subset of :data:`V2_DATATYPES`)."""


def numpy_dtype(datatype: str) -> np.dtype:
    """The NumPy dtype that carries a V2 ``datatype`` (``"FP32"`` -> ``float32``).

    Raises:
        ValueError: ``datatype`` is not one of :data:`DATATYPES`.
    """
    try:
        return DATATYPES[datatype]
    except KeyError:
        raise ValueError(
            f"unknown V2 datatype {datatype!r}; expected one of {', '.join(DATATYPES)}"
        ) from None


@dataclass(frozen=True)
class TensorSpec:
    """One named input or output tensor.

    Attributes:
        name: The tensor's name in V2 requests and responses.
        datatype: A V2 datatype: ``"FP32"``, ``"FP16"``, ``"FP64"``, ``"INT64"``, ``"INT32"``,
            ``"BOOL"`` or ``"BYTES"``.
        shape: The shape with ``-1`` for the batch dimension (first) and any other
            variable dimension.
    """

    name: str
    datatype: str
    shape: tuple[int, ...]

    def __post_init__(self) -> None:
        numpy_dtype(self.datatype)
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    def example_shape(self, batch_size: int) -> tuple[int, ...]:
        """The shape with the batch dimension set to ``batch_size`` (other ``-1`` become 1)."""
        return (batch_size, *(1 if d < 0 else d for d in self.shape[1:]))

    def to_dict(self) -> dict[str, object]:
        """The V2 metadata form: ``{"name": ..., "datatype": ..., "shape": [...]}``."""
        return {"name": self.name, "datatype": self.datatype, "shape": list(self.shape)}


@dataclass(frozen=True)
class Signature:
    """The inputs and outputs of an architecture, in call and response order."""

    inputs: list[TensorSpec] = field(default_factory=list)
    outputs: list[TensorSpec] = field(default_factory=list)


def image_classifier_signature(channels: int, height: int, width: int, num_classes: int) -> Signature:
    """``image`` FP32 [-1, C, H, W] -> ``logits`` and ``probabilities`` FP32 [-1, num_classes]."""
    return Signature(
        inputs=[TensorSpec("image", "FP32", (-1, channels, height, width))],
        outputs=[
            TensorSpec("logits", "FP32", (-1, num_classes)),
            TensorSpec("probabilities", "FP32", (-1, num_classes)),
        ],
    )
