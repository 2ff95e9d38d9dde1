"""``benchmarks/compare_revisions.py``: per-case head/base ratios from runs of two trees."""

from __future__ import annotations

import pytest
from _benchmark_modules import benchmark_module

compare_revisions = benchmark_module("compare_revisions")


def _run(**cases: tuple[float, float]) -> dict[str, dict[str, float]]:
    return {name: {"torch_ms": t, "mininn_ms": m} for name, (t, m) in cases.items()}


def test_ratios_are_of_medians_and_the_verdict_uses_time_over_torch_in_the_same_process() -> None:
    runs = {
        "base": [_run(lstm=(10.0, 20.0)), _run(lstm=(10.0, 22.0)), _run(lstm=(20.0, 40.0))],
        # a loaded machine slowed the head's processes alike: mininn 1.5x, its ratio to torch 1.0x
        "head": [_run(lstm=(15.0, 30.0)), _run(lstm=(15.0, 33.0)), _run(lstm=(30.0, 60.0))],
    }
    row = compare_revisions.compare(runs)["lstm"]
    assert (row["base_mininn_ms"], row["head_mininn_ms"]) == (22.0, 33.0)
    assert row["head_over_base"] == 1.5
    assert (row["base_over_torch"], row["head_over_torch"]) == (2.0, 2.0)
    assert row["head_over_base_vs_torch"] == 1.0 and row["within_5_percent"] is True
    assert row["rounds"] == 3


def test_a_slower_head_fails_the_verdict() -> None:
    runs = {"base": [_run(conv=(10.0, 10.0))], "head": [_run(conv=(10.0, 10.6))]}
    row = compare_revisions.compare(runs)["conv"]
    assert row["head_over_base_vs_torch"] == pytest.approx(1.06) and row["within_5_percent"] is False


def test_a_case_missing_from_either_tree_is_left_out() -> None:
    runs = {"base": [_run(old=(1.0, 1.0), both=(1.0, 1.0))], "head": [_run(both=(1.0, 1.0), new=(1.0, 1.0))]}
    assert list(compare_revisions.compare(runs)) == ["both"]


def test_cases_come_from_forward_and_layers_reports_alike() -> None:
    cases = _run(mlp=(1.0, 2.0))
    assert compare_revisions.cases_of({"runs": [{"threads": {}, "cases": cases}]}) == cases
    assert compare_revisions.cases_of({"cases": cases}) == cases
