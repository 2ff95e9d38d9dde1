from __future__ import annotations

import json
from pathlib import Path

import pytest
from _app_support import mlp_weights, write_model

from app.errors import BadRequestError, NotFoundError, UnprocessableError
from app.store.repository import ModelRepository, parse_spec, parse_version, validate_model_name


@pytest.mark.parametrize("name", ["a", "mlp", "Model_1.v2-final", "9", "x" * 64])
def test_valid_model_names(name: str) -> None:
    assert validate_model_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "..", ".hidden", "-x", "_x", "a/b", "a\\b", "x" * 65, "näme", "a b", "a\0"]
)
def test_invalid_model_names_are_400(name: str) -> None:
    with pytest.raises(
        BadRequestError, match=r"invalid model name .*: use 1-64 letters, digits, '_', '\.' or '-'"
    ):
        validate_model_name(name)


def test_a_traversal_name_never_becomes_a_path(tmp_path: Path) -> None:
    repository = ModelRepository(tmp_path / "repo")
    (tmp_path / "secret").mkdir()
    with pytest.raises(BadRequestError):
        repository.model_dir("../secret")
    with pytest.raises(BadRequestError):
        repository.read_spec("..")


@pytest.mark.parametrize(("text", "expected"), [(None, None), ("", None), ("1", 1), ("12", 12), (3, 3)])
def test_parse_version(text: str | int | None, expected: int | None) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize("text", ["0", "-1", "01", "1.0", "latest", "1e3"])
def test_bad_versions_are_400(text: str) -> None:
    with pytest.raises(
        BadRequestError, match=f"invalid model version '{text}': versions are positive integers"
    ):
        parse_version(text)


def test_model_names_lists_valid_folders_only(tmp_path: Path) -> None:
    for name in ["b", "a", ".tmp-upload", "_private"]:
        (tmp_path / name).mkdir()
    (tmp_path / "file.txt").write_text("x")
    repository = ModelRepository(tmp_path)
    assert repository.model_names() == ["a", "b"]
    assert not repository.is_empty()


def test_missing_folder_is_empty(tmp_path: Path) -> None:
    repository = ModelRepository(tmp_path / "nowhere")
    assert repository.is_empty() and repository.model_names() == []


def test_versions_are_integer_folders_holding_weights(tmp_path: Path) -> None:
    write_model(tmp_path, "m", {1: mlp_weights(0), 10: mlp_weights(0), 2: mlp_weights(0)})
    (tmp_path / "m" / "3").mkdir()  # being written: no weights yet
    (tmp_path / "m" / "latest").mkdir()
    (tmp_path / "m" / "04").mkdir()
    repository = ModelRepository(tmp_path)
    assert repository.versions("m") == [1, 2, 10]
    assert repository.weights_path("m", 10) == tmp_path / "m" / "10" / "weights.safetensors"


def test_other_checkpoint_formats_are_found(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "weights.pt").write_bytes(b"x")
    assert ModelRepository(tmp_path).weights_path("m", 1).name == "weights.pt"


def test_unknown_model_is_404_and_lists_the_models(tmp_path: Path) -> None:
    write_model(tmp_path, "mlp", {1: mlp_weights(0)})
    unknown = "Request for unknown model: 'nope' is not found; available models: mlp"
    with pytest.raises(NotFoundError, match=unknown):
        ModelRepository(tmp_path).versions("nope")


def test_unknown_model_in_an_empty_repository(tmp_path: Path) -> None:
    unknown = "Request for unknown model: 'nope' is not found; the repository is empty"
    with pytest.raises(NotFoundError, match=unknown):
        ModelRepository(tmp_path).read_spec("nope")


def test_unknown_version_is_404(tmp_path: Path) -> None:
    write_model(tmp_path, "mlp", {1: mlp_weights(0)})
    with pytest.raises(NotFoundError, match="model 'mlp' has no version 7"):
        ModelRepository(tmp_path).weights_path("mlp", 7)


def test_read_spec_parses_model_json(tmp_path: Path) -> None:
    spec = {
        "architecture": "mlp",
        "config": {"in_features": 4},
        "max_batch_size": 4,
        "dtype": "double",
        "extra": 1,
    }
    write_model(tmp_path, "m", {1: mlp_weights(0)}, spec)
    parsed = ModelRepository(tmp_path).read_spec("m")
    assert (parsed.architecture, parsed.config, parsed.max_batch_size) == ("mlp", {"in_features": 4}, 4)
    assert parsed.dtype == "float64" and parsed.device is None
    assert parsed.model_extra == {"extra": 1}


def test_missing_model_json_is_422(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    with pytest.raises(UnprocessableError, match="model 'm' has no model.json"):
        ModelRepository(tmp_path).read_spec("m")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "m/model.json is not valid JSON: Expecting property name"),
        ("[]", "m/model.json must be a JSON object with an 'architecture' or 'module' key"),
        ("{}", r"m/model.json: give either 'architecture' \(a registered one"),
        ('{"architecture": "mlp", "module": "model.py:Net"}', "not both or neither"),
        ('{"module": "model.py:Net"}', "'module' needs 'inputs'"),
        ('{"module": "m.py:Net", "inputs": [{}], "config": {"a": 1}}', "'config' goes with 'architecture'"),
        ('{"architecture": "mlp", "init": {"a": 1}}', "'init', 'inputs' and 'outputs' go with 'module'"),
        (
            '{"architecture": "mlp", "config": []}',
            "m/model.json: key 'config': Input should be a valid dictionary",
        ),
        (
            '{"architecture": "mlp", "max_batch_size": -1}',
            "key 'max_batch_size': Input should be greater than or equal",
        ),
        ('{"architecture": "mlp", "dtype": "int8"}', "key 'dtype': 'int8' is not a floating-point dtype"),
        ('{"architecture": "mlp", "device": "gpu"}', "key 'device': Expected one of cpu, cuda"),
    ],
)
def test_bad_model_json_is_422_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(UnprocessableError, match=message):
        parse_spec(text, "m/model.json")


def test_parse_spec_keeps_unknown_keys() -> None:
    spec = parse_spec(json.dumps({"architecture": "mlp", "dynamic_batching": {"max": 3}}), "x")
    assert spec.model_extra == {"dynamic_batching": {"max": 3}}
