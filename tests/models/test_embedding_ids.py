"""An id out of an embedding's range: mininn raises torch's error, and the servable's message
names the input, the embedding's path and size, and the id."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn import functional as F
from models.embedding_ids import describe_out_of_range

torch = pytest.importorskip("torch")


def _encoder(lib):
    class Embeddings(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.word_embeddings = lib.nn.Embedding(50, 4)
            self.position_embeddings = lib.nn.Embedding(8, 4)

        def forward(self, ids):
            positions = lib.arange(ids.shape[1]).unsqueeze(0)
            return self.word_embeddings(ids) + self.position_embeddings(positions)

    class Encoder(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.embeddings = Embeddings()

        def forward(self, ids):
            return self.embeddings(ids).sum(-1)

    return Encoder()


def _raised(model, ids):
    with pytest.raises(IndexError) as info:
        model(mininn.from_numpy(ids))
    return info.value


@pytest.mark.parametrize("bad", [50, 1000, -1])
def test_mininn_raises_torchs_error_type_and_text(bad):
    ids = np.array([[1, 2, bad]], dtype=np.int64)
    with pytest.raises(IndexError) as theirs:
        _encoder(torch)(torch.from_numpy(ids))
    assert str(_raised(_encoder(mininn), ids)) == str(theirs.value) == "index out of range in self"


def test_the_message_names_the_input_the_embedding_its_largest_id_and_the_bad_id():
    model = _encoder(mininn)
    ids = np.array([[1, 2, 3], [4, 50, 7]], dtype=np.int64)
    assert describe_out_of_range(_raised(model, ids), model, {"input_ids": ids}) == (
        "input 'input_ids' has id 50 at [1, 1], but embeddings.word_embeddings (Embedding(50, 4)) "
        "takes ids 0 to 49 (IndexError: index out of range in self)"
    )


def test_a_copied_input_is_found_by_its_values():
    model = _encoder(mininn)
    ids = np.array([[-3, 2]], dtype=np.int64)
    sent = {"mask": np.ones((1, 2), np.int64), "input_ids": ids.copy()}
    assert describe_out_of_range(_raised(model, ids), model, sent).startswith(
        "input 'input_ids' has id -3 at [0, 0], but embeddings.word_embeddings"
    )


def test_ids_the_model_makes_itself_name_the_layer_without_an_input():
    model = _encoder(mininn)
    ids = np.zeros((1, 9), dtype=np.int64)  # 9 positions, 8 position embeddings
    assert describe_out_of_range(_raised(model, ids), model, {"input_ids": ids}) == (
        "the ids given to it include 8 at [0, 8], but embeddings.position_embeddings (Embedding(8, 4)) "
        "takes ids 0 to 7 (IndexError: index out of range in self)"
    )


def test_a_functional_embedding_in_a_users_forward_names_that_module():
    class Lookup(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Parameter(mininn.zeros(5, 2))

        def forward(self, ids):
            return F.embedding(ids, self.table)

    model = nn.Sequential(Lookup())
    ids = np.array([5], dtype=np.int64)
    assert describe_out_of_range(_raised(model, ids), model, {"ids": ids}) == (
        "input 'ids' has id 5 at [0], but 0 (Lookup()) takes ids 0 to 4 "
        "(IndexError: index out of range in self)"
    )


def test_other_errors_are_left_alone():
    model = _encoder(mininn)
    assert describe_out_of_range(IndexError("list index out of range"), model, {}) is None
    try:
        [][0]
    except IndexError as exc:
        assert describe_out_of_range(exc, model, {}) is None
