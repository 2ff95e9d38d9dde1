from __future__ import annotations

from pathlib import Path

import pytest

from app.runtime.labels import read_labels
from app.store.repository import ModelSpec, spec_from_document


def spec(labels: object) -> ModelSpec:
    document = {"architecture": "mlp", "config": {"in_features": 4}, "labels": labels}
    return spec_from_document(document, "model.json")


def test_a_labels_file_with_fewer_lines_than_classes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "labels.txt").write_text("cat\ndog\n")
    with pytest.raises(ValueError, match="'labels.txt' has 2 labels but output 'logits' has 3 classes"):
        read_labels(spec("labels.txt"), tmp_path, ["logits"], {"logits": (-1, 3)})


def test_enough_labels_or_an_unknown_class_count_are_read(tmp_path: Path) -> None:
    (tmp_path / "labels.txt").write_text("cat\ndog\nemu\n")
    assert read_labels(spec("labels.txt"), tmp_path, ["logits"], {"logits": (-1, 3)}) == {
        "logits": ("cat", "dog", "emu")
    }
    # a size given per request (-1 past the batch dimension), or no shapes at all: not checked
    assert read_labels(spec({"logits": "labels.txt"}), tmp_path, ["logits"], {"logits": (-1, -1)})
    assert read_labels(spec("labels.txt"), tmp_path, ["logits"])
    # an unbatched output counts every element
    with pytest.raises(ValueError, match="has 3 labels but output 'logits' has 4 classes"):
        read_labels(spec("labels.txt"), tmp_path, ["logits"], {"logits": (2, 2)})
