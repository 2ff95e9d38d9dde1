"""Servable: building, input checks, placement on the module's dtype, and outputs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest

import mininn
import models
from mininn import nn
from models import Architecture, InputError, Signature, TensorSpec
from models.serving import to_tensor


@dataclass(frozen=True)
class PairConfig:
    size: int = 3  # features per row


class Pair(nn.Module):
    """``(x * weight + offset, x.sum(1))``: two outputs, one with grad."""

    def __init__(self, config: PairConfig) -> None:
        super().__init__()
        self.weight = nn.Parameter(mininn.full((config.size,), 2.0))
        self.seen: list[mininn.dtype] = []

    def forward(self, x: mininn.Tensor, offset: mininn.Tensor) -> tuple[mininn.Tensor, mininn.Tensor]:
        self.seen.append(x.dtype)
        return x * self.weight + offset.to(x.dtype).unsqueeze(1), x.sum(1)


def pair_signature(config: PairConfig) -> Signature:
    return Signature(
        inputs=[TensorSpec("x", "FP32", (-1, config.size)), TensorSpec("offset", "INT64", (-1,))],
        outputs=[TensorSpec("scaled", "FP32", (-1, config.size)), TensorSpec("total", "FP64", (-1,))],
    )


@pytest.fixture
def pair() -> Iterator[str]:
    name = "test_serving_pair"
    models.register(Architecture(name=name, config_cls=PairConfig, build=Pair, signature=pair_signature,
                                 batchable=False))
    yield name
    models.unregister(name)


def inputs(batch: int = 2, size: int = 3) -> dict[str, np.ndarray]:
    return {"x": np.arange(batch * size, dtype=np.float32).reshape(batch, size),
            "offset": np.arange(batch, dtype=np.int64)}


def test_servable_exposes_architecture_config_specs_and_batchable(pair):
    servable = models.servable(pair, {"size": 4})
    assert servable.architecture == pair
    assert servable.config == PairConfig(size=4)
    assert isinstance(servable.module, Pair)
    assert [s.name for s in servable.inputs] == ["x", "offset"]
    assert [s.name for s in servable.outputs] == ["scaled", "total"]
    assert servable.batchable is False
    assert repr(servable) == f"Servable(architecture='{pair}', config=PairConfig(size=4))"


def test_predict_maps_outputs_in_order_with_declared_dtypes(pair):
    servable = models.servable(pair, {})
    outputs = servable.predict(inputs())  # outside no_grad: outputs that need grad still come back
    np.testing.assert_array_equal(outputs["scaled"], [[0, 2, 4], [7, 9, 11]])
    np.testing.assert_array_equal(outputs["total"], [3, 12])
    assert outputs["scaled"].dtype == np.float32 and outputs["total"].dtype == np.float64


def test_predict_feeds_float_inputs_in_the_modules_dtype(pair):
    servable = models.servable(pair, {})
    servable.module.double()
    with mininn.no_grad():
        outputs = servable.predict(inputs())
    assert servable.module.seen == [mininn.float64]
    assert outputs["scaled"].dtype == np.float32
    servable.module.half()
    with mininn.no_grad():
        servable.predict(inputs())
    assert servable.module.seen[-1] == mininn.float16


def test_integer_inputs_are_accepted_for_float_specs(pair):
    servable = models.servable(pair, {})
    batch = inputs()
    batch["x"] = batch["x"].astype(np.int32)
    with mininn.no_grad():
        np.testing.assert_array_equal(servable.predict(batch)["total"], [3, 12])


def test_missing_input_lists_the_expected_inputs(pair):
    servable = models.servable(pair, {})
    with pytest.raises(InputError) as info:
        servable.predict({"x": inputs()["x"]})
    assert str(info.value) == "missing input 'offset'; expected inputs: x, offset"


def test_unexpected_input_lists_the_expected_inputs(pair):
    servable = models.servable(pair, {})
    with pytest.raises(InputError) as info:
        servable.predict({**inputs(), "y": np.zeros(2)})
    assert str(info.value) == "unexpected input 'y'; expected inputs: x, offset"


def test_wrong_shape_names_both_shapes(pair):
    servable = models.servable(pair, {})
    with pytest.raises(InputError) as info:
        servable.predict(inputs(size=4))
    assert str(info.value) == "input 'x' has shape [2, 4]; expected [-1, 3]"
    with pytest.raises(InputError, match=r"input 'offset' has shape \[2, 1\]; expected \[-1\]"):
        servable.predict({**inputs(), "offset": np.zeros((2, 1), dtype=np.int64)})


def test_wrong_datatype_names_both_datatypes(pair):
    servable = models.servable(pair, {})
    with pytest.raises(InputError) as info:
        servable.predict({**inputs(), "offset": np.zeros(2, dtype=np.float32)})
    assert str(info.value) == "input 'offset' has datatype FP32; expected INT64"
    with pytest.raises(InputError, match="input 'x' has datatype BYTES; expected FP32"):
        servable.predict({**inputs(), "x": np.full((2, 3), b"a", dtype=object)})


def test_inputs_with_different_batch_sizes_are_rejected(pair):
    servable = models.servable(pair, {})
    with pytest.raises(InputError) as info:
        servable.predict({**inputs(), "offset": np.zeros(3, dtype=np.int64)})
    assert str(info.value) == "inputs have different batch sizes [2, 3]"


def test_example_inputs_are_deterministic_and_valid(pair):
    servable = models.servable(pair, {"size": 5})
    first, second = servable.example_inputs(4), servable.example_inputs(4)
    assert first["x"].shape == (4, 5) and first["x"].dtype == np.float32
    assert first["offset"].shape == (4,) and first["offset"].dtype == np.int64
    np.testing.assert_array_equal(first["x"], second["x"])
    with mininn.no_grad():
        assert servable.predict(first)["scaled"].shape == (4, 5)


def test_bad_config_is_reported_before_building(pair):
    with pytest.raises(models.ArchitectureError, match="unknown config key 'width' for architecture"):
        models.servable(pair, {"width": 3})


def test_to_tensor_shares_a_writable_input_with_the_module_input() -> None:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = to_tensor(array, mininn.device("cpu"), mininn.float32)
    assert np.shares_memory(tensor.numpy(), array)


def test_to_tensor_copies_a_read_only_input_once_so_in_place_forwards_work() -> None:
    array = np.frombuffer(np.arange(6, dtype=np.float32).tobytes(), dtype=np.float32).reshape(2, 3)
    tensor = to_tensor(array, mininn.device("cpu"), mininn.float64)
    tensor.sub_(1.0)  # a forward that normalizes its input in place
    assert tensor.dtype is mininn.float64 and tensor.tolist()[0] == [-1.0, 0.0, 1.0]
    assert array[0, 0] == 0.0
