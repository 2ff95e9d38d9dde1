"""The steering vector store: files beside the versions, atomic replacement, uploads of every format."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save

from app.errors import BadRequestError, NotFoundError, UnprocessableError
from app.store.repository import ModelRepository
from app.store.steering import SteeringStore, check_directions, read_upload, validate_vector_name

SHAPES = {"model.layers.0": (8,), "model.layers.1": (8,), "model.norm": (8,), "model": None, "lm_head": (50,)}


@pytest.fixture
def repository(tmp_path: Path) -> ModelRepository:
    (tmp_path / "lm" / "1").mkdir(parents=True)
    return ModelRepository(tmp_path)


def test_a_stored_vector_is_read_by_another_store_and_replaced_whole(repository: ModelRepository) -> None:
    first, other = SteeringStore(repository), SteeringStore(repository)  # two workers
    assert first.write("lm", "joy", {"model.layers.1": np.arange(8, dtype=np.float32)}) is True
    np.testing.assert_array_equal(other.read("lm", "joy")["model.layers.1"], np.arange(8))
    assert first.write("lm", "joy", {"model.layers.0": np.ones(8, dtype=np.float32)}) is False
    assert list(other.read("lm", "joy")) == ["model.layers.0"]  # the cache follows the file
    assert other.names("lm") == ["joy"]
    folder = repository.model_dir("lm") / "steering"
    assert sorted(p.name for p in folder.iterdir()) == ["joy.safetensors"]  # no temporary file left
    assert repository.versions("lm") == []  # the folder is not a version
    first.delete("lm", "joy")
    with pytest.raises(UnprocessableError, match="has no steering vector 'joy' \\(stored: none yet\\)"):
        other.read("lm", "joy")
    with pytest.raises(NotFoundError):
        first.delete("lm", "joy")


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "x" * 65, "joy.tmp", "sp ace"])
def test_bad_vector_names_are_refused(name: str) -> None:
    with pytest.raises(BadRequestError, match="is not valid"):
        validate_vector_name(name)


def test_uploads_of_safetensors_and_npz_read_alike() -> None:
    directions = {"model.layers.1": np.linspace(0, 1, 8, dtype=np.float32)}
    buffer = io.BytesIO()
    np.savez(buffer, **directions)
    for data in (save(directions), buffer.getvalue()):
        read = read_upload(data, layers="model.layers", layer_count=2)
        np.testing.assert_array_equal(read["model.layers.1"], directions["model.layers.1"])


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        (b"", BadRequestError, "the body is empty"),
        (b"not a file at all", BadRequestError, "not a safetensors, .npz or GGUF"),
        (save({"model.layers.1": np.ones(8, dtype=np.float32)})[:-3], BadRequestError, "not a safetensors"),
    ],
)
def test_unreadable_uploads_are_400(data: bytes, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        read_upload(data, layers="model.layers", layer_count=2)


def test_gguf_control_vectors_map_direction_n_to_decoder_layer_n(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "cv.gguf"
    writer = gguf.GGUFWriter(str(path), "controlvector")
    writer.add_string("controlvector.model_hint", "llama")
    writer.add_uint32("controlvector.layer_count", 1)
    writer.add_tensor("direction.1", np.arange(8, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    data = path.read_bytes()
    read = read_upload(data, layers="model.layers", layer_count=2)
    np.testing.assert_array_equal(read["model.layers.1"], np.arange(8))
    with pytest.raises(UnprocessableError, match="'direction.1' for layer 1, but this model has 1 decoder"):
        read_upload(data, layers="model.layers", layer_count=1)


@pytest.mark.parametrize(
    ("directions", "match"),
    [
        ({"model.layers.9": np.ones(8)}, "'model.layers.9' is not a module of model 'lm'"),
        ({"model": np.ones(8)}, "has no per-token output"),
        ({"model.norm": np.ones(7)}, "has shape \\[7\\], but that module's output has 8 features"),
        ({"model.norm": np.ones((1, 8))}, "has shape \\[1, 8\\]"),
        ({"model.norm": np.array([np.nan] * 8)}, "NaN or infinite"),
    ],
)
def test_directions_that_do_not_fit_the_model_are_422(directions: dict, match: str) -> None:
    with pytest.raises(UnprocessableError, match=match):
        check_directions(directions, SHAPES, "lm")


def test_fitting_directions_become_float32() -> None:
    checked = check_directions({"lm_head": np.arange(50, dtype=np.float64)}, SHAPES, "lm")
    assert checked["lm_head"].dtype == np.float32
