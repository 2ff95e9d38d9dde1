"""The architecture registry: names, lookup, registration and config errors."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import mininn
import models
from mininn import nn
from models import Architecture, ArchitectureError, Signature, TensorSpec

BUNDLED = [
    "bert_encoder", "lenet5", "llama", "minilm", "mlp", "resnet18", "resnet34", "simple_cnn", "zebranet",
]


@dataclass(frozen=True)
class ScaleConfig:
    size: int = 3  # length of the scale vector


class Scale(nn.Module):
    def __init__(self, config: ScaleConfig) -> None:
        super().__init__()
        self.weight = nn.Parameter(mininn.ones(config.size))

    def forward(self, x: mininn.Tensor) -> mininn.Tensor:
        return x * self.weight


def scale_signature(config: ScaleConfig) -> Signature:
    spec = (-1, config.size)
    return Signature([TensorSpec("x", "FP32", spec)], [TensorSpec("y", "FP32", spec)])


def scale_architecture(name: str, **fields: object) -> Architecture:
    return Architecture(name=name, config_cls=ScaleConfig, build=Scale, signature=scale_signature, **fields)


@pytest.fixture
def scale_name() -> Iterator[str]:
    name = "test_registry_scale"
    yield name
    models.unregister(name)


def test_available_lists_the_bundled_architectures_sorted():
    assert models.available() == BUNDLED


def test_unknown_architecture_lists_the_available_names():
    with pytest.raises(ArchitectureError) as info:
        models.get_architecture("resnet50")
    assert str(info.value) == f"unknown architecture 'resnet50'; available: {', '.join(BUNDLED)}"
    with pytest.raises(ArchitectureError, match="unknown architecture 'nope'"):
        models.create("nope")


def test_create_with_a_misspelt_key_lists_the_accepted_keys():
    with pytest.raises(ArchitectureError) as info:
        models.create("mlp", hiden=3)
    assert str(info.value) == (
        "unknown config key 'hiden' for architecture 'mlp'; "
        "accepted keys: activation, dropout, hidden_sizes, in_features, out_features"
    )


def test_create_with_a_bad_value_names_the_key():
    with pytest.raises(ArchitectureError) as info:
        models.create("mlp", dropout=1.5)
    assert str(info.value) == (
        "invalid value 1.5 for config key 'dropout' of architecture 'mlp': expected a probability in [0, 1]; "
        "accepted keys: activation, dropout, hidden_sizes, in_features, out_features"
    )


@pytest.mark.parametrize("name", BUNDLED)
def test_every_config_has_defaults_and_a_signature(name):
    architecture = models.get_architecture(name)
    config = architecture.make_config({})
    signature = architecture.signature(config)
    assert architecture.name == name
    assert signature.inputs and signature.outputs
    assert all(spec.shape[0] == -1 for spec in signature.inputs + signature.outputs)


def test_register_an_architecture_instance(scale_name):
    architecture = scale_architecture(scale_name)
    assert models.register(architecture) is architecture
    assert scale_name in models.available()
    assert models.get_architecture(scale_name) is architecture
    module = models.create(scale_name, size=5)
    assert isinstance(module, Scale) and module.weight.shape == (5,)


def test_register_as_a_decorator(scale_name):
    register = models.register(scale_name, config_cls=ScaleConfig, signature=scale_signature, batchable=False)
    decorated = register(Scale)
    assert decorated is Scale
    architecture = models.get_architecture(scale_name)
    assert architecture.build is Scale and architecture.batchable is False


def test_registering_a_taken_name_raises_unless_replace(scale_name):
    first = scale_architecture(scale_name)
    second = scale_architecture(scale_name, description="second")
    models.register(first)
    with pytest.raises(ArchitectureError) as info:
        models.register(second)
    assert str(info.value) == f"architecture '{scale_name}' is already registered"
    models.register(second, replace=True)
    assert models.get_architecture(scale_name).description == "second"


def test_unregister_removes_the_name(scale_name):
    models.register(scale_architecture(scale_name))
    models.unregister(scale_name)
    assert scale_name not in models.available()
    with pytest.raises(ArchitectureError):
        models.get_architecture(scale_name)
