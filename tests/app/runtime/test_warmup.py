"""``model_warmup``: the warm-up forwards a model.json asks for, checked against the model's inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _spotter_support import ANY_LENGTH, write_spotter

from app.errors import UnprocessableError
from app.runtime.versions import LoadError, assemble, build_servable
from app.runtime.warmup import warmup_batches, warmup_hint
from app.store.repository import ModelSpec


@pytest.fixture
def spotter(tmp_path: Path) -> Any:
    """The keyword spotter's servable (input ``mfcc`` [-1, 40, -1]) and its folder."""
    folder = write_spotter(tmp_path, "kws", ANY_LENGTH)
    return build_servable(ModelSpec.model_validate(ANY_LENGTH), folder), folder


def _spec(warmup: Any, **keys: Any) -> ModelSpec:
    return ModelSpec.model_validate({**ANY_LENGTH, "model_warmup": warmup, **keys})


def test_without_model_warmup_the_example_inputs_warm_up(spotter: Any) -> None:
    servable, _ = spotter
    [batch] = warmup_batches(ModelSpec.model_validate(ANY_LENGTH), servable, batched=True)
    assert (batch.label, batch.shapes, batch.count) == ("the example inputs", "mfcc [1, 40, 1]", 1)


def test_a_batched_model_s_dims_leave_out_the_batch_dimension(spotter: Any) -> None:
    servable, _ = spotter
    spec = _spec([{"name": "long", "batch_size": 2, "count": 3, "inputs": {"mfcc": {"dims": [40, 100]}}}])
    [batch] = warmup_batches(spec, servable, batched=True)
    assert (batch.label, batch.shapes, batch.count) == ("model_warmup[0] ('long')", "mfcc [2, 40, 100]", 3)
    assert batch.inputs["mfcc"].dtype == np.float32 and not batch.inputs["mfcc"].any()  # zero_data


def test_an_unbatched_model_s_dims_are_the_whole_shape(spotter: Any) -> None:
    servable, _ = spotter
    spec = _spec([{"inputs": {"mfcc": {"dims": [1, 40, 7], "random_data": True, "data_type": "TYPE_FP32"}}}])
    [batch] = warmup_batches(spec, servable, batched=False)
    assert batch.shapes == "mfcc [1, 40, 7]"
    again = warmup_batches(spec, servable, batched=False)[0]
    assert batch.inputs["mfcc"].any() and np.array_equal(batch.inputs["mfcc"], again.inputs["mfcc"])


@pytest.mark.parametrize(
    ("warmup", "message"),
    [
        ("x", "model.json key 'model_warmup' must be a list of samples, e.g. [{\"batch_size\": 1,"),
        ([], "model.json key 'model_warmup' must be a list of samples"),
        ([3], "model.json key 'model_warmup[0]' must be an object"),
        ([{"inputs": {"mfcc": {"dims": [40, 9]}}, "sizes": 1}],
         "model.json key 'model_warmup[0]': unknown key(s) sizes; accepted keys: batch_size, count, inputs, "
         "name"),
        ([{"batch_size": 0, "inputs": {"mfcc": {"dims": [40, 9]}}}],
         "model.json key 'model_warmup[0].batch_size' must be a positive integer, got 0"),
        ([{"batch_size": 1}], "model.json key 'model_warmup[0].inputs' must map input names to their dims"),
        ([{"inputs": {"mfcc": {"dims": "40,9"}}}],
         "model.json key 'model_warmup[0].inputs.mfcc.dims' must be a list of positive sizes, e.g. "
         "[40, 100]"),
        ([{"inputs": {"mfcc": {"dims": [40, 0]}}}],
         "model.json key 'model_warmup[0].inputs.mfcc.dims' must be a list of positive sizes"),
        ([{"inputs": {"mfcc": {"dims": [40, 9], "zero_data": True, "random_data": True}}}],
         "model.json key 'model_warmup[0].inputs.mfcc': give one of zero_data or random_data, as true"),
        ([{"inputs": {"mfcc": {"dims": [40, 9], "input_data_file": "x.bin"}}}],
         "model.json key 'model_warmup[0].inputs.mfcc.input_data_file' is not supported; use zero_data or"),
    ],
)
def test_a_malformed_model_warmup_names_the_key(spotter: Any, warmup: Any, message: str) -> None:
    servable, _ = spotter
    with pytest.raises(UnprocessableError) as caught:
        warmup_batches(_spec(warmup), servable, batched=True)
    assert caught.value.message.startswith(message), caught.value.message


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"audio": {"dims": [40, 9]}},
         "model.json key 'model_warmup[0].inputs' names 'audio'; the model's inputs are mfcc"),
        ({"mfcc": {"dims": [1, 40, 9]}},
         "model.json key 'model_warmup[0].inputs.mfcc.dims' is [1, 40, 9]; input 'mfcc' has dims [40, -1] "
         "(without the batch dimension, -1: any size, as in GET /v2/models/{m}/config)"),
        ({"mfcc": {"dims": [39, 9]}},
         "model.json key 'model_warmup[0].inputs.mfcc.dims' is [39, 9]; input 'mfcc' has dims [40, -1]"),
        ({"mfcc": {"dims": [40, 9], "data_type": "TYPE_INT64"}},
         "model.json key 'model_warmup[0].inputs.mfcc.data_type' is TYPE_INT64; the input is TYPE_FP32"),
    ],
)
def test_a_sample_that_does_not_fit_the_inputs_names_what_does(
    spotter: Any, inputs: Any, message: str
) -> None:
    servable, _ = spotter
    with pytest.raises(UnprocessableError) as caught:
        warmup_batches(_spec([{"inputs": inputs}]), servable, batched=True)
    assert caught.value.message.startswith(message), caught.value.message


def test_the_hint_gives_a_model_warmup_and_the_flag_for_the_any_size_inputs(spotter: Any) -> None:
    servable, _ = spotter
    spec = ModelSpec.model_validate(ANY_LENGTH)
    assert warmup_hint(spec, servable, batched=True) == (
        '; any-size dimensions (-1) warm up at size 1: give sizes the model accepts in model.json, e.g. '
        '"model_warmup": [{"batch_size": 1, "inputs": {"mfcc": {"dims": [40, 100]}}}] (dims without the '
        "batch dimension, as in GET /v2/models/{m}/config), or with mininn-serve add-model "
        "--warmup-shape mfcc:40,100"
    )
    assert "--warmup-shape mfcc:1,40,100" in warmup_hint(spec, servable, batched=False)


def test_a_failing_warm_up_names_the_shape_it_ran_on_and_how_to_give_another(spotter: Any) -> None:
    _, folder = spotter
    weights = folder / "1" / "weights.safetensors"
    with pytest.raises(LoadError) as caught:
        assemble(ModelSpec.model_validate(ANY_LENGTH), folder, weights, "cpu", "float32", "version 1")
    message = str(caught.value)
    assert message.startswith(
        "version 1: warm-up forward on the example inputs (mfcc [1, 40, 1]): spotter.py:13 in forward: "
        "RuntimeError: max_pool1d() Invalid computed output size: 0; any-size dimensions (-1) warm up at "
        "size 1"
    )
    spec = _spec([{"inputs": {"mfcc": {"dims": [40, 1]}}}])
    with pytest.raises(LoadError) as caught:
        assemble(spec, folder, weights, "cpu", "float32", "version 1")
    assert str(caught.value).endswith(
        "max_pool1d() Invalid computed output size: 0; change the sample's dims in model.json's "
        "'model_warmup' to sizes the model accepts"
    )
    assert "warm-up forward on model_warmup[0] (mfcc [1, 40, 1])" in str(caught.value)


def test_outputs_found_by_a_warm_up_at_a_given_size_keep_their_any_size_dimensions(spotter: Any) -> None:
    _, folder = spotter
    spec = _spec([{"inputs": {"mfcc": {"dims": [40, 50]}}}])
    servable = assemble(spec, folder, folder / "1" / "weights.safetensors", "cpu", "float32", "version 1")
    assert [(o.name, list(o.shape)) for o in servable.outputs] == [("output", [-1, 4])]
