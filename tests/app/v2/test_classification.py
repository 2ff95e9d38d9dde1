from __future__ import annotations

import numpy as np
import pytest

from app.errors import UnprocessableError
from app.v2.classification import check_classification, classify, classify_outputs
from app.v2.request import RequestedOutput


def test_scores_are_written_as_c_percent_f_with_the_index_largest_first() -> None:
    logits = np.array([0.25, 3.5, -1.0, 2.0], np.float32)
    assert classify(logits, 3).tolist() == [b"3.500000:1", b"2.000000:3", b"0.250000:0"]


def test_labels_follow_the_index_and_indices_past_the_labels_have_none() -> None:
    scores = np.array([0.1, 0.2, 0.7], np.float64)
    assert classify(scores, 3, labels=["cat", "dog"]).tolist() == [
        b"0.700000:2",
        b"0.200000:1:dog",
        b"0.100000:0:cat",
    ]


def test_a_batched_output_is_classified_row_by_row() -> None:
    rows = np.array([[1, 5, 3], [9, 2, 4]], np.float32)
    result = classify(rows, 2, batched=True)
    assert result.shape == (2, 2)
    assert result.tolist() == [[b"5.000000:1", b"3.000000:2"], [b"9.000000:0", b"4.000000:2"]]


def test_k_larger_than_the_row_gives_the_whole_row() -> None:
    assert classify(np.ones((4, 3), np.float32), 10, batched=True).shape == (4, 3)
    assert classify(np.zeros((0, 3), np.float32), 2, batched=True).shape == (0, 2)


def test_integer_scores_are_plain_integers_and_ties_keep_index_order() -> None:
    assert classify(np.array([5, 9, 9, 1], np.uint8), 3).tolist() == [b"9:1", b"9:2", b"5:0"]
    assert classify(np.array([-128, 5, 127], np.int8), 3).tolist() == [b"127:2", b"5:1", b"-128:0"]
    big = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.int64)
    assert classify(big, 1).tolist() == [f"{np.iinfo(np.int64).max}:1".encode()]


def test_a_non_batched_output_is_ranked_as_a_whole() -> None:
    grid = np.array([[1.0, 8.0], [9.0, 2.0]], np.float32)
    assert classify(grid, 2).tolist() == [b"9.000000:2", b"8.000000:1"]


def test_classify_outputs_replaces_only_the_outputs_asked_for() -> None:
    outputs = {"logits": np.array([[0.0, 1.0]], np.float32), "features": np.ones((1, 4), np.float32)}
    requested = [RequestedOutput("logits", False, classification=1), RequestedOutput("features", False)]
    shapes = {"logits": (-1, 2), "features": (-1, 4)}
    classified = classify_outputs(requested, outputs, shapes=shapes, labels={"logits": ("no", "yes")})
    assert classified["logits"].tolist() == [[b"1.000000:1:yes"]]
    assert classified["features"] is outputs["features"]
    plain = [RequestedOutput("logits", False)]
    assert classify_outputs(plain, outputs, shapes=shapes, labels={}) is outputs


def test_outputs_without_scores_are_refused_with_tritons_words() -> None:
    with pytest.raises(
        UnprocessableError,
        match="class result not available for output 'mask' due to unsupported type 'BOOL'",
    ):
        check_classification([RequestedOutput("mask", False, classification=2)], {"mask": "BOOL"})
    check_classification([RequestedOutput("mask", False)], {"mask": "BOOL"})  # no classification asked
    with pytest.raises(UnprocessableError, match="holds no scores"):
        classify(np.array([b"a"], dtype=object), 1)
