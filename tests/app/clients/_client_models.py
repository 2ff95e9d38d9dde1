"""Test architectures of the stock-client servers; ``python _client_models.py`` registers them and serves.

- ``test-client-text``: ``text`` BYTES [-1] -> ``length`` FP32 [-1, 1] (bytes per element)
  and ``length_text`` BYTES [-1] (``b"<n>"``): BYTES in and out, as MLServer's string codec
  and tritonclient's object arrays send and read them.
- ``test-client-sleepy``: ``x`` FP32 [-1, 2] -> ``y`` = ``x``, after sleeping ``seconds``
  when ``x[0, 0]`` is negative (never in warm-up): slow requests on demand, to fill a queue
  or pass a deadline.
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


@dataclass(frozen=True)
class TextConfig:
    pass


class TextProcessor(Processor):
    """Texts in as their byte counts; the counts out as numbers and as text."""

    def preprocess(self, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        return (np.array([[len(item)] for item in inputs["text"]], dtype=np.float32),)

    def postprocess(self, results: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        lengths = np.asarray(results[0], dtype=np.float32)
        return {"length": lengths, "length_text": np.array([b"%d" % n for n in lengths[:, 0]], dtype=object)}


@dataclass(frozen=True)
class SleepyConfig:
    seconds: float = 1.5  # how long a forward with a negative first value sleeps


class Sleepy(nn.Module):
    def __init__(self, config: SleepyConfig) -> None:
        super().__init__()
        self.seconds = config.seconds

    def forward(self, x: mininn.Tensor) -> mininn.Tensor:
        if float(x.reshape(-1)[0]) < 0:
            time.sleep(self.seconds)
        return x * 1.0


def register() -> None:
    """Register both test architectures (replacing earlier registrations)."""
    models.register(
        models.Architecture(
            name="test-client-text",
            config_cls=TextConfig,
            build=lambda config: nn.Identity(),
            signature=lambda config: Signature(
                [TensorSpec("text", "BYTES", (-1,))],
                [TensorSpec("length", "FP32", (-1, 1)), TensorSpec("length_text", "BYTES", (-1,))],
            ),
            processor=TextProcessor,
        ),
        replace=True,
    )
    models.register(
        models.Architecture(
            name="test-client-sleepy",
            config_cls=SleepyConfig,
            build=Sleepy,
            signature=lambda config: Signature(
                [TensorSpec("x", "FP32", (-1, 2))], [TensorSpec("y", "FP32", (-1, 2))]
            ),
        ),
        replace=True,
    )


if __name__ == "__main__":
    register()
    from app.__main__ import main

    sys.exit(main([]))
