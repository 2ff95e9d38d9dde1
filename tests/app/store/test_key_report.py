"""The prefix that every missing key has in the checkpoint, and the summary of long key lists."""

from __future__ import annotations

import pytest

from app.store.key_report import added_prefix, summary

MODEL = ["fc.weight", "fc.bias", "head.weight"]


@pytest.mark.parametrize(
    ("unexpected", "prefix"),
    [
        (["module." + k for k in MODEL], "module."),
        (["_orig_mod." + k for k in MODEL], "_orig_mod."),
        (["module._orig_mod." + k for k in MODEL], "module._orig_mod."),
        (["module." + k for k in MODEL] + ["module.extra"], "module."),  # extra keys do not hide it
        (["module." + k for k in MODEL[:2]], None),  # one missing key is not there with the prefix
        (["modulefc.weight", "modulefc.bias", "modulehead.weight"], None),  # a prefix ends with a dot
        (["a.fc.weight", "b.fc.bias", "a.head.weight"], None),  # not one common prefix
        ([], None),
    ],
)
def test_added_prefix(unexpected: list[str], prefix: str | None) -> None:
    assert added_prefix(MODEL, unexpected) == prefix


def test_no_missing_keys_means_no_prefix() -> None:
    assert added_prefix([], ["module.fc.weight"]) is None


def test_summary_names_five_keys_of_each_list_and_counts_the_rest() -> None:
    keys = [f"k{i}" for i in range(7)]
    assert summary(keys, ["x"]) == (
        '7 missing key(s): "k0", "k1", "k2", "k3", "k4" and 2 more; 1 unexpected key(s): "x"'
    )
