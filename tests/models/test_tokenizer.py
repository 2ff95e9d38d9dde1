"""Tokenising text with the model's own tokenizer.json, as sentence-transformers does."""

from __future__ import annotations

import json

import numpy as np
import pytest

from models.errors import ArchitectureError, InputError
from models.tokenizer import TextTokenizer, decode_texts, resource_path


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return TextTokenizer(minilm_dir / "tokenizer.json", max_length=256, pad_id=0)


def test_token_ids_match_the_transformers_fast_tokenizer(minilm_dir, tokenizer, sentences):
    transformers = pytest.importorskip("transformers")
    reference = transformers.AutoTokenizer.from_pretrained(str(minilm_dir), local_files_only=True)
    expected = reference(
        sentences, padding=True, truncation="longest_first", max_length=256, return_tensors="np"
    )
    encoded = tokenizer(sentences)
    np.testing.assert_array_equal(encoded.input_ids, expected["input_ids"])
    np.testing.assert_array_equal(encoded.attention_mask, expected["attention_mask"])
    np.testing.assert_array_equal(encoded.token_type_ids, expected["token_type_ids"])
    assert encoded.input_ids.dtype == np.int64


def test_known_ids_for_a_short_batch_padded_to_the_longest(tokenizer):
    encoded = tokenizer(["Hello world!", "A man is playing a guitar."])
    np.testing.assert_array_equal(
        encoded.input_ids,
        [[101, 7592, 2088, 999, 102, 0, 0, 0, 0], [101, 1037, 2158, 2003, 2652, 1037, 2858, 1012, 102]],
    )
    np.testing.assert_array_equal(encoded.attention_mask, [[1] * 5 + [0] * 4, [1] * 9])


def test_long_text_is_truncated_to_max_length_ending_with_sep(tokenizer):
    encoded = tokenizer(["word " * 1000, "short"])
    assert encoded.input_ids.shape == (2, 256)
    assert encoded.input_ids[0, 0] == 101 and encoded.input_ids[0, -1] == 102
    assert encoded.attention_mask[1].sum() == 3


def test_empty_batch_gives_empty_arrays(tokenizer):
    encoded = tokenizer([])
    assert encoded.input_ids.shape == (0, 0) and encoded.input_ids.dtype == np.int64


def test_unreadable_tokenizer_file_raises_architecture_error(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"not": "a tokenizer"}))
    with pytest.raises(ArchitectureError, match=r"^cannot read tokenizer file '.*tokenizer\.json': "):
        TextTokenizer(path, max_length=8)


def test_decode_texts_accepts_bytes_and_str():
    texts = np.array([b"caf\xc3\xa9", "plain", np.bytes_(b"np")], dtype=object)
    assert decode_texts(texts) == ["café", "plain", "np"]


def test_decode_texts_rejects_invalid_utf8_naming_the_element():
    with pytest.raises(InputError) as info:
        decode_texts(np.array([b"ok", b"\xff\xfe"], dtype=object))
    assert str(info.value).startswith("input 'text' element 1 is not valid UTF-8: ")


def test_decode_texts_rejects_non_text_elements():
    with pytest.raises(InputError) as info:
        decode_texts(np.array([b"ok", 3], dtype=object))
    assert str(info.value) == "input 'text' element 1 is int; expected bytes (BYTES)"


def test_resource_path_needs_a_resource_dir():
    with pytest.raises(ArchitectureError) as info:
        resource_path(None, "tokenizer.json")
    assert str(info.value) == (
        "this architecture needs the resource file 'tokenizer.json' from the model's folder, "
        "but no resource_dir was given"
    )


def test_resource_path_names_the_missing_file(tmp_path):
    with pytest.raises(ArchitectureError) as info:
        resource_path(tmp_path, "tokenizer.json")
    missing = str(tmp_path / "tokenizer.json")
    assert str(info.value) == f"resource file 'tokenizer.json' not found at {missing!r}"
    (tmp_path / "tokenizer.json").write_text("{}")
    assert resource_path(tmp_path, "tokenizer.json") == tmp_path / "tokenizer.json"
