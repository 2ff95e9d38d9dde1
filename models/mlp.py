"""``mlp``: a multi-layer perceptron, laid out like ``torchvision.ops.MLP`` (no norm layer).

The module is a ``Sequential`` of ``Linear -> activation -> Dropout`` per hidden size,
then ``Linear -> Dropout``, so its state-dict keys are ``0.weight``, ``0.bias``,
``3.weight``, ... exactly as torchvision's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mininn import nn
from models.config import require
from models.processing import Processor
from models.registry import Architecture, register
from models.signature import Signature, TensorSpec

__all__ = ["MLP", "MLPConfig"]

ACTIVATIONS = {"relu": "ReLU", "gelu": "GELU", "tanh": "Tanh", "sigmoid": "Sigmoid"}  # config -> nn class


@dataclass(frozen=True)
class MLPConfig:
    in_features: int = 784  # width of the input vector
    hidden_sizes: tuple[int, ...] = (128, 64)  # one Linear + activation + Dropout per entry
    out_features: int = 10  # width of the output vector
    activation: Literal["relu", "gelu", "tanh", "sigmoid"] = "relu"  # after each hidden Linear
    dropout: float = 0.0  # probability, after every Linear (torchvision's placement)

    def __post_init__(self) -> None:
        require(self.in_features > 0, "in_features", self.in_features, "a positive integer")
        require(self.out_features > 0, "out_features", self.out_features, "a positive integer")
        require(all(h > 0 for h in self.hidden_sizes), "hidden_sizes", self.hidden_sizes,
                "a list of positive integers")
        require(0.0 <= self.dropout <= 1.0, "dropout", self.dropout, "a probability in [0, 1]")


class MLP(nn.Sequential):
    """``[Linear, activation, Dropout] * len(hidden_sizes) + [Linear, Dropout]``."""

    def __init__(self, config: MLPConfig) -> None:
        layers: list[nn.Module] = []
        width = config.in_features
        for hidden in config.hidden_sizes:
            activation = getattr(nn, ACTIVATIONS[config.activation])()
            layers += [nn.Linear(width, hidden), activation, nn.Dropout(config.dropout)]
            width = hidden
        layers += [nn.Linear(width, config.out_features), nn.Dropout(config.dropout)]
        super().__init__(*layers)
        self.config = config

    # forward is Sequential's: (B, in_features) -> (B, out_features)


def signature(config: MLPConfig) -> Signature:
    """``input`` FP32 [-1, in_features] -> ``output`` FP32 [-1, out_features]."""
    return Signature(
        inputs=[TensorSpec("input", "FP32", (-1, config.in_features))],
        outputs=[TensorSpec("output", "FP32", (-1, config.out_features))],
    )


ARCHITECTURE = register(
    Architecture(
        name="mlp",
        config_cls=MLPConfig,
        build=MLP,
        signature=signature,
        processor=Processor,
        description="multi-layer perceptron (torchvision.ops.MLP layout)",
    )
)
