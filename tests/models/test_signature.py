"""TensorSpec and Signature: V2 datatypes and shapes."""

from __future__ import annotations

import numpy as np
import pytest

from models.signature import TensorSpec, image_classifier_signature, numpy_dtype


@pytest.mark.parametrize(
    ("datatype", "dtype"),
    [("FP32", np.float32), ("FP16", np.float16), ("FP64", np.float64), ("INT64", np.int64),
     ("INT32", np.int32), ("BOOL", np.bool_), ("BYTES", object)],
)
def test_v2_datatypes_map_to_numpy(datatype, dtype):
    assert numpy_dtype(datatype) == np.dtype(dtype)


def test_unknown_datatype_is_rejected_with_the_choices():
    with pytest.raises(ValueError) as info:
        TensorSpec("x", "FLOAT", (-1,))
    assert str(info.value) == (
        "unknown V2 datatype 'FLOAT'; expected one of BOOL, INT32, INT64, FP16, FP32, FP64, BYTES"
    )


def test_shape_is_stored_as_a_tuple_of_ints():
    spec = TensorSpec("image", "FP32", [-1, 1, 28, 28])  # type: ignore[arg-type]
    assert spec.shape == (-1, 1, 28, 28)
    assert spec.to_dict() == {"name": "image", "datatype": "FP32", "shape": [-1, 1, 28, 28]}


def test_example_shape_fills_batch_and_variable_dimensions():
    assert TensorSpec("x", "FP32", (-1, 3, -1)).example_shape(4) == (4, 3, 1)


def test_image_classifier_signature():
    signature = image_classifier_signature(3, 32, 30, 7)
    assert signature.inputs == [TensorSpec("image", "FP32", (-1, 3, 32, 30))]
    assert signature.outputs == [
        TensorSpec("logits", "FP32", (-1, 7)),
        TensorSpec("probabilities", "FP32", (-1, 7)),
    ]
