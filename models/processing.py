"""Pre- and post-processing between V2 tensors and a module's arguments and results.

A :class:`Processor` is made once per servable (it may load resources such as a
tokenizer) and is then called for every batch. It works on host NumPy arrays only;
:class:`~models.serving.Servable` moves arrays to and from the module's device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from models.signature import Signature, TensorSpec, numpy_dtype

__all__ = ["ClassifierProcessor", "Processor", "softmax"]


class Processor:
    """Tensors in, tensors out: the default for architectures without special processing.

    Inputs are passed to the module positionally in signature order; the module's
    result (one tensor or a tuple) is matched to the declared outputs in order.

    Args:
        config: The architecture's config dataclass.
        signature: The architecture's signature for ``config``.
        resource_dir: The model's folder, where resource files named in the config live.
    """

    def __init__(self, config: Any, signature: Signature, resource_dir: Path | None = None) -> None:
        self.config = config
        self.signature = signature
        self.resource_dir = resource_dir

    def preprocess(self, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        """The module's positional arguments for a batch of validated V2 inputs."""
        return tuple(_as_datatype(inputs[spec.name], spec) for spec in self.signature.inputs)

    def postprocess(self, results: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        """The V2 outputs, keyed by output name, for the module's results (host arrays)."""
        return {spec.name: result for spec, result in zip(self.signature.outputs, results)}

    def example_inputs(self, batch_size: int = 1) -> dict[str, np.ndarray]:
        """A valid, deterministic batch of ``batch_size`` inputs (for warm-up and tests)."""
        rng = np.random.default_rng(0)
        return {spec.name: _example(spec, batch_size, rng) for spec in self.signature.inputs}


class ClassifierProcessor(Processor):
    """Logits in, ``logits`` and softmax ``probabilities`` out."""

    def postprocess(self, results: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        logits = np.asarray(results[0], dtype=np.float32)
        return {"logits": logits, "probabilities": softmax(logits)}


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """A numerically stable softmax along ``axis``."""
    shifted = np.exp(x - x.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _as_datatype(array: np.ndarray, spec: TensorSpec) -> np.ndarray:
    if spec.datatype == "BYTES":
        return np.asarray(array, dtype=object)
    return np.ascontiguousarray(array, dtype=numpy_dtype(spec.datatype))


def _example(spec: TensorSpec, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    shape = spec.example_shape(batch_size)
    if spec.datatype == "BYTES":
        return np.full(shape, b"The quick brown fox jumps over the lazy dog.", dtype=object)
    if spec.datatype == "BOOL":
        return np.ones(shape, dtype=bool)
    if spec.datatype.startswith("INT"):
        return np.zeros(shape, dtype=numpy_dtype(spec.datatype))
    return rng.random(shape).astype(numpy_dtype(spec.datatype))
