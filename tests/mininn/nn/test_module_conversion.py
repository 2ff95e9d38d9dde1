"""Module.to() argument handling against torch 2.13, beyond the casts in test_module.py:
the argument forms it refuses, and device/non_blocking calls that leave dtypes alone."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import MININN, TORCH, norm, outcome, same  # noqa: E402

_BAD_CALLS = [
    "m.to(L.device('cpu'), True)",
    "m.to(L.long)",
    "m.to(None, True)",
    "m.to(L.device('cpu'), L.long, True)",
    "m.to(L.device('cpu'), dtype=L.long, non_blocking=True)",
    "m.to([])",
    "m.to({}, non_blocking=True)",
    "m.to(long_tensor, non_blocking=True)",
    "m.to(L.device('cpu'), long_tensor, non_blocking=True)",
]


def _call_to(call: str):
    def scenario(ns):
        m = ns.nn.Sequential(ns.Lin(3, 3))
        long_tensor = ns.T(np.array(3, np.int64))
        eval(call, {"m": m, "L": ns.lib, "long_tensor": long_tensor})

    return scenario


@pytest.mark.parametrize("call", _BAD_CALLS)
def test_to_rejects_bad_arguments(call: str) -> None:
    torch_kind, torch_message = norm(outcome(_call_to(call), TORCH))
    kind, message = outcome(_call_to(call), MININN)
    assert kind == torch_kind == "TypeError"
    assert message == torch_message


def test_to_argument_error_ends_like_torchs() -> None:
    same(_call_to(_BAD_CALLS[-1]))


def test_to_refuses_a_copy() -> None:
    kind, _message = same(_call_to("m.to('cpu', copy=True)"))
    assert kind == "RuntimeError"


def test_to_with_device_and_non_blocking_keeps_dtypes() -> None:
    def scenario(ns):
        m = ns.nn.Module()
        m.lin = ns.Lin(2, 2)
        m.indices = ns.nn.Buffer(ns.T(np.array([1], np.int64)))
        m.half()
        returned = m.to(ns.lib.device("cpu"), non_blocking=True)
        return returned is m, [str(v.dtype).split(".")[-1] for v in m.state_dict().values()]

    assert same(scenario) == ("ok", (True, ["int64", "float16", "float16"]))
