"""finfo/iinfo and torch's promotion queries against torch 2.13."""

from __future__ import annotations

import pytest

import mininn
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

_FIELDS = ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_finfo_matches_torch(name):
    ours, theirs = mininn.finfo(getattr(mininn, name)), torch.finfo(getattr(torch, name))
    assert repr(ours) == repr(theirs)
    assert [getattr(ours, f) for f in _FIELDS] == [getattr(theirs, f) for f in _FIELDS]
    assert repr(mininn.finfo()) == repr(torch.finfo())


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name):
    ours, theirs = mininn.iinfo(getattr(mininn, name)), torch.iinfo(getattr(torch, name))
    assert repr(ours) == repr(theirs)
    assert (ours.bits, ours.min, ours.max, ours.dtype) == (theirs.bits, theirs.min, theirs.max, theirs.dtype)


@pytest.mark.parametrize("call", [
    lambda lib: lib.finfo(lib.int32), lambda lib: lib.iinfo(lib.float32), lambda lib: lib.iinfo(lib.bool),
])
def test_info_of_the_wrong_kind_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


_PAIRS = [("int32", "float16"), ("uint8", "int8"), ("bool", "int64"), ("float32", "complex64"),
          ("float64", "complex64"), ("int64", "float32"), ("bool", "bool")]


@pytest.mark.parametrize("a, b", _PAIRS + [(b, a) for a, b in _PAIRS])
def test_promote_types_and_can_cast_match_torch(a, b):
    ours = mininn.promote_types(getattr(mininn, a), getattr(mininn, b))
    assert ours.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).removeprefix("torch.")
    assert mininn.can_cast(getattr(mininn, a), getattr(mininn, b)) == torch.can_cast(getattr(torch, a),
                                                                                     getattr(torch, b))


@pytest.mark.parametrize("call", [
    lambda lib: lib.result_type(lib.tensor([1]), 1.0),
    lambda lib: lib.result_type(lib.tensor([1], dtype=lib.int32), lib.tensor(1)),
    lambda lib: lib.result_type(lib.tensor(1.0, dtype=lib.float64), lib.tensor([1.0])),
    lambda lib: lib.result_type(1, 2.0),
    lambda lib: lib.result_type(True, 2),
    lambda lib: lib.result_type(lib.tensor([1.0]), 1j),
])
def test_result_type_matches_torch(call):
    assert call(mininn).name == str(call(torch)).removeprefix("torch.")
