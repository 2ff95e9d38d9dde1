"""The twin-test helper itself: a scenario's own crash fails, torch's errors are outcomes."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from _nn_twins import arr, same  # noqa: E402


def test_a_scenario_that_crashes_in_its_own_code_fails() -> None:
    def scenario(ns):
        return ns.Lni(2, 3)  # a typo: both sides raise the same AttributeError

    with pytest.raises(AssertionError, match="crashed in its own code"):
        same(scenario)


def test_a_name_missing_from_an_eval_fails() -> None:
    with pytest.raises(AssertionError, match="NameError"):
        same(lambda ns: eval("ns.T(arr(2))", {"ns": ns}))


def test_an_error_torch_raises_is_an_outcome() -> None:
    def scenario(ns):
        return ns.Lin(2, 3)(ns.T(arr(1, 4)))  # a shape mismatch inside torch's matmul

    kind, _ = same(scenario)
    assert kind == "RuntimeError"


def test_a_torch_module_attribute_error_is_an_outcome() -> None:
    assert same(lambda ns: ns.Lin(2, 3).nope)[0] == "AttributeError"


def test_wrong_arguments_to_a_torch_method_are_an_outcome() -> None:
    assert same(lambda ns: ns.nn.ParameterDict()())[0] == "TypeError"
