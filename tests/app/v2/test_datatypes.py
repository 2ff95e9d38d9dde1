from __future__ import annotations

import numpy as np
import pytest

from app.v2.datatypes import DATATYPES, numpy_dtype, triton_type, v2_datatype


@pytest.mark.parametrize(
    ("datatype", "dtype"),
    [
        ("BOOL", np.bool_),
        ("UINT8", np.uint8),
        ("INT8", np.int8),
        ("INT16", np.int16),
        ("INT32", np.int32),
        ("INT64", np.int64),
        ("UINT64", np.uint64),
        ("FP16", np.float16),
        ("FP32", np.float32),
        ("FP64", np.float64),
        ("BYTES", object),
    ],
)
def test_datatype_maps_to_numpy_and_back(datatype: str, dtype: type) -> None:
    assert numpy_dtype(datatype) == np.dtype(dtype)
    assert v2_datatype(np.dtype(dtype)) == datatype


def test_bf16_maps_to_ml_dtypes_bfloat16() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert numpy_dtype("BF16") == np.dtype(ml_dtypes.bfloat16)
    assert v2_datatype(ml_dtypes.bfloat16) == "BF16"


def test_unknown_datatype_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown datatype 'FP33'; expected one of BOOL, UINT8,"):
        numpy_dtype("FP33")


def test_numpy_strings_are_bytes() -> None:
    assert v2_datatype(np.dtype("S5")) == "BYTES"
    assert v2_datatype(np.dtype("U3")) == "BYTES"


def test_complex_has_no_v2_datatype() -> None:
    with pytest.raises(ValueError, match="NumPy dtype complex64 has no Open Inference Protocol datatype"):
        v2_datatype(np.complex64)


def test_triton_type_names() -> None:
    assert triton_type("FP32") == "TYPE_FP32"
    assert triton_type("BYTES") == "TYPE_STRING"
    assert "FP32" in DATATYPES and "BYTES" in DATATYPES
