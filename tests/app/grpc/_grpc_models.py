"""Test architectures of the gRPC servers; ``python _grpc_models.py`` registers them and runs the server.

- ``test-text-length``: ``text`` BYTES [-1] -> ``length`` FP32 [-1] (bytes per element)
  and ``label`` BYTES [-1] (``b"<n> bytes"``): BYTES in and out.
- ``test-sleepy``: ``x`` FP32 [-1, 2] -> ``y`` = ``x``, after sleeping ``seconds`` when
  ``x[0, 0]`` is negative (never in warm-up): slow requests on demand.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

import mininn
import models
from mininn import nn
from models.processing import Processor
from models.signature import Signature, TensorSpec


class Gain(nn.Module):
    """``x * gain`` (``gain`` = 1 in the tests' weights)."""

    def __init__(self, config: object) -> None:
        super().__init__()
        self.gain = nn.Parameter(mininn.ones(1))

    def forward(self, x: mininn.Tensor) -> mininn.Tensor:
        return x * self.gain


@dataclass(frozen=True)
class TextLengthConfig:
    pass


class TextLengthProcessor(Processor):
    """Texts in as byte counts; counts out, and as ``b"<n> bytes"`` labels."""

    def preprocess(self, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        return (np.array([len(item) for item in inputs["text"]], dtype=np.float32),)

    def postprocess(self, results: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        lengths = np.asarray(results[0], dtype=np.float32)
        labels = np.array([f"{int(n)} bytes".encode() for n in lengths], dtype=object)
        return {"length": lengths, "label": labels}


@dataclass(frozen=True)
class SleepyConfig:
    seconds: float = 2.0  # how long a forward with a negative first value sleeps


class Sleepy(Gain):
    def __init__(self, config: SleepyConfig) -> None:
        super().__init__(config)
        self.seconds = config.seconds

    def forward(self, x: mininn.Tensor) -> mininn.Tensor:
        if float(x.reshape(-1)[0]) < 0:
            time.sleep(self.seconds)
        return super().forward(x)


def register() -> None:
    """Register both test architectures (replacing earlier registrations)."""
    models.register(
        models.Architecture(
            name="test-text-length",
            config_cls=TextLengthConfig,
            build=Gain,
            signature=lambda c: Signature(
                [TensorSpec("text", "BYTES", (-1,))],
                [TensorSpec("length", "FP32", (-1,)), TensorSpec("label", "BYTES", (-1,))],
            ),
            processor=TextLengthProcessor,
        ),
        replace=True,
    )
    models.register(
        models.Architecture(
            name="test-sleepy",
            config_cls=SleepyConfig,
            build=Sleepy,
            signature=lambda c: Signature(
                [TensorSpec("x", "FP32", (-1, 2))], [TensorSpec("y", "FP32", (-1, 2))]
            ),
        ),
        replace=True,
    )


if __name__ == "__main__":
    register()
    from app.__main__ import main

    sys.exit(main([]))
