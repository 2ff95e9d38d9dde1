"""Incremental detokenisation and stop strings, token by token."""

from __future__ import annotations

import pytest
from _tiny_lm import EOS, ByteTokenizer

from app.runtime.detokenize import IncrementalDetokenizer, StopStrings

TEXTS = ["plain ascii", "naïve café — 東京 🎉🎉 ok", "  spaces\n\ttabs  ", "emoji at the end 🙂"]


def stream(tokenizer: object, prompt: list[int], ids: list[int]) -> list[str]:
    detok = IncrementalDetokenizer(tokenizer, prompt)
    pieces = [detok.add(token) for token in ids]
    return [*pieces, detok.flush()]


@pytest.mark.parametrize("text", TEXTS)
def test_bytes_of_a_character_release_it_once_complete(text: str) -> None:
    tokenizer = ByteTokenizer()
    ids = tokenizer.encode(text, add_special_tokens=False)
    pieces = stream(tokenizer, tokenizer.encode("prompt"), ids)
    assert "".join(pieces) == text
    assert not any("\ufffd" in piece for piece in pieces)
    assert pieces.count("") >= len(ids) - len(text)  # a multi-byte character waits for its last byte


def test_special_tokens_are_skipped_and_an_incomplete_end_is_flushed() -> None:
    tokenizer = ByteTokenizer()
    ids = [*b"ok", EOS]
    assert "".join(stream(tokenizer, [], ids)) == "ok"
    broken = [*b"x", 0xE6, 0x9D]  # two of the three bytes of a CJK character
    pieces = stream(tokenizer, [], broken)
    assert pieces[:3] == ["x", "", ""]
    assert pieces[-1] == "\ufffd"  # as the tokenizer decodes the whole sequence


def test_no_tokenizer_gives_empty_text() -> None:
    assert stream(None, [1, 2], [3, 4]) == ["", "", ""]


@pytest.mark.parametrize("text", TEXTS)
def test_a_real_byte_level_bpe_decodes_incrementally_as_a_whole(text: str) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(TEXTS * 20 + ["the quick brown fox jumps over the lazy dog"] * 20, trainer)
    ids = tokenizer.encode(text).ids
    prompt = tokenizer.encode("the prompt ").ids
    pieces = stream(tokenizer, prompt, ids)
    assert "".join(pieces) == tokenizer.decode(ids, skip_special_tokens=True) == text


def test_stop_string_split_across_pieces_is_found_and_excluded() -> None:
    stops = StopStrings(["STOP"])
    released = [stops.feed(piece) for piece in ["abc S", "T", "O", "Pxyz"]]
    assert released == ["abc ", "", "", ""]
    assert stops.stopped


def test_text_that_stops_looking_like_a_stop_string_is_released() -> None:
    stops = StopStrings(["STOP", "\n\n"])
    assert stops.feed("a ST") == "a "
    assert stops.feed("X\n") == "STX"
    assert stops.feed("b") == "\nb"
    assert not stops.stopped
    assert stops.feed("S") == ""
    assert stops.flush() == "S"


def test_the_earliest_of_several_stop_strings_wins() -> None:
    stops = StopStrings(["world", "lo w"])
    assert stops.feed("hello world") == "hel"
    assert stops.stopped
