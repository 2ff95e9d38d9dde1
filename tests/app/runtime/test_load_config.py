from __future__ import annotations

import pytest

from app.errors import BadRequestError
from app.runtime.load_config import LOAD_CONFIG_KEYS, apply_load_config, load_config_parameter
from app.store.repository import spec_from_document

MLP = {"architecture": "mlp", "config": {"in_features": 4}, "max_batch_size": 8, "labels": "labels.txt"}
CODE = {"module": "model.py:Net", "init": {"width": 3}, "inputs": [{"datatype": "FP32", "shape": [-1, 4]}]}


def test_no_parameters_or_no_config_means_the_file_as_it_is() -> None:
    assert load_config_parameter("m", None) is None
    assert load_config_parameter("m", {"unload_dependents": True}) is None


def test_the_given_keys_replace_the_files_and_the_rest_stays() -> None:
    config = load_config_parameter("m", {"config": '{"max_batch_size": "16", "dynamic_batching": false}'})
    spec = apply_load_config("m", spec_from_document(MLP, "model.json"), config)
    assert (spec.max_batch_size, spec.config, spec.model_extra) == (
        16,
        {"in_features": 4},
        {"labels": "labels.txt", "dynamic_batching": False},
    )


def test_architecture_and_module_each_drop_the_others_keys() -> None:
    code = apply_load_config("m", spec_from_document(MLP, "model.json"), dict(CODE))
    assert (code.architecture, code.config, code.module, code.max_batch_size) == (None, {}, "model.py:Net", 8)
    back = apply_load_config("m", code, {"architecture": "mlp"})
    assert (back.architecture, back.module, back.init, back.inputs) == ("mlp", None, {}, None)
    assert apply_load_config("m", None, dict(MLP)).architecture == "mlp"  # no model.json: a whole one


@pytest.mark.parametrize(
    ("group", "device"),
    [
        ([{"kind": "KIND_CPU"}], "cpu"),
        ([{"kind": "KIND_GPU", "gpus": [1], "count": 1}], "cuda:1"),
        ([{"kind": "KIND_GPU"}], "cuda:0"),
    ],
)
def test_an_instance_group_sets_the_device(group: list[dict[str, object]], device: str) -> None:
    # the spec keeps the device as given; mininn checks that it exists when the model is moved there
    spec = apply_load_config("m", spec_from_document(MLP, "model.json"), {"instance_group": group})
    assert spec.device == device


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"config": "[1]"}, "failed to load 'm': load parameter 'config' must hold a JSON object"),
        (
            {"config": '{"platform": "onnx"}'},
            "failed to load 'm': load parameter 'config' has unknown keys platform",
        ),
        ({"config": "{", "x": 1}, "failed to load 'm': load parameter 'config' is not valid JSON"),
    ],
)
def test_bad_configs_are_400_naming_the_problem(parameters: dict[str, object], message: str) -> None:
    with pytest.raises(BadRequestError) as raised:
        load_config_parameter("m", parameters)
    assert raised.value.message.startswith(message)


def test_bad_instance_groups_and_values_are_400() -> None:
    base = spec_from_document(MLP, "model.json")
    for config, message in (
        ({"instance_group": [{"kind": "KIND_MODEL"}]}, "instance_group must be KIND_CPU, or KIND_GPU"),
        ({"instance_group": [{}, {}]}, "'instance_group' must be a list of one group"),
        ({"max_batch_size": "many"}, "key 'max_batch_size'"),
        ({"device": "tpu"}, "key 'device'"),
    ):
        with pytest.raises(BadRequestError, match=message):
            apply_load_config("m", base, config)


def test_every_model_json_key_can_be_given() -> None:
    assert {"max_batch_size", "dynamic_batching", "device", "dtype", "labels", "config", "module"} <= set(
        LOAD_CONFIG_KEYS
    )


@pytest.mark.parametrize("gpus", [[True], [-1], ["0"]])
def test_a_gpu_that_is_not_an_index_is_400_naming_instance_group(gpus: list[object]) -> None:
    base = spec_from_document(MLP, "model.json")
    with pytest.raises(BadRequestError, match=r"instance_group must be .*an integer >= 0"):
        apply_load_config("m", base, {"instance_group": [{"kind": "KIND_GPU", "gpus": gpus}]})


def test_a_labels_value_of_the_wrong_form_is_400_before_the_load() -> None:
    base = spec_from_document(MLP, "model.json")
    with pytest.raises(BadRequestError, match="model.json key 'labels': must be a file name"):
        apply_load_config("m", base, {"labels": 5})
