"""Processors: default tensor mapping, classifier outputs, example inputs."""

from __future__ import annotations

import numpy as np

from models.processing import ClassifierProcessor, Processor, softmax
from models.signature import Signature, TensorSpec, image_classifier_signature


def test_softmax_is_stable_for_large_logits():
    probabilities = softmax(np.array([[1000.0, 1000.0, -1000.0]], dtype=np.float32))
    np.testing.assert_allclose(probabilities, [[0.5, 0.5, 0.0]], atol=1e-7)


def test_classifier_processor_returns_float32_logits_and_probabilities():
    processor = ClassifierProcessor(None, image_classifier_signature(1, 4, 4, 3))
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype=np.float16)
    outputs = processor.postprocess([logits])
    assert list(outputs) == ["logits", "probabilities"]
    assert outputs["logits"].dtype == np.float32
    expected = np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum()
    np.testing.assert_allclose(outputs["probabilities"][0], expected, rtol=1e-6)
    np.testing.assert_allclose(outputs["probabilities"][1], [1 / 3] * 3, rtol=1e-6)


def test_default_processor_passes_inputs_in_signature_order_with_declared_dtypes():
    signature = Signature(
        inputs=[TensorSpec("b", "INT32", (-1,)), TensorSpec("a", "FP32", (-1, 2))],
        outputs=[TensorSpec("y", "FP32", (-1,)), TensorSpec("z", "FP32", (-1,))],
    )
    processor = Processor(None, signature)
    b, a = processor.preprocess({"a": np.ones((1, 2), dtype=np.float64), "b": np.array([3], dtype=np.int64)})
    assert a.dtype == np.float32 and b.dtype == np.int32
    assert list(processor.postprocess([np.zeros(1), np.ones(1)])) == ["y", "z"]


def test_example_inputs_cover_every_datatype():
    signature = Signature(inputs=[
        TensorSpec("f", "FP16", (-1, 2)), TensorSpec("i", "INT64", (-1,)),
        TensorSpec("b", "BOOL", (-1,)), TensorSpec("t", "BYTES", (-1,)), TensorSpec("v", "FP64", (-1, -1, 3)),
    ])
    examples = Processor(None, signature).example_inputs(2)
    assert examples["f"].dtype == np.float16 and examples["f"].shape == (2, 2)
    assert ((examples["f"] >= 0) & (examples["f"] < 1)).all()
    assert examples["i"].dtype == np.int64 and examples["b"].dtype == np.bool_
    assert examples["t"].dtype == object and isinstance(examples["t"][0], bytes)
    assert examples["v"].shape == (2, 1, 3)
