"""The calls of Triton's HTTP example clients, as project tests against a real server.

Each test makes the calls one example makes, in its order, with its arguments, and
checks what the example checks (``simple_http_health_metadata``,
``simple_http_infer_client``, ``simple_http_model_control``, and ``image_client``
with ``class_count``), where our answers may differ from Triton's only in the
server's name and the repository's contents.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _app_support import WRITE_HEADERS, Server

from models.digits import load_mnist_5k

httpclient = pytest.importorskip("tritonclient.http")
from tritonclient.utils import InferenceServerException  # noqa: E402


@pytest.fixture
def triton(stock_server: Server) -> Any:
    client = httpclient.InferenceServerClient(url=stock_server.url)
    yield client
    client.close()


def test_health_metadata_and_an_unknown_models_message_over_http(triton: Any) -> None:
    assert triton.is_server_live(query_params={"trace": "on", "attempt": 1})
    assert triton.is_server_ready()
    assert triton.is_model_ready("simple")
    assert triton.get_server_metadata()["name"] == "mininn-serve"  # Triton's example wants "triton"
    metadata = triton.get_model_metadata("simple", query_params={"trace": "on", "attempt": 1})
    assert metadata["name"] == "simple"
    with pytest.raises(InferenceServerException) as raised:
        triton.get_model_metadata("no-such-model")
    assert "Request for unknown model" in raised.value.message()


def _simple_inputs(input0: np.ndarray, input1: np.ndarray) -> list[Any]:
    inputs = [
        httpclient.InferInput("INPUT0", [1, 16], "INT32"),
        httpclient.InferInput("INPUT1", [1, 16], "INT32"),
    ]
    inputs[0].set_data_from_numpy(input0, binary_data=False)
    inputs[1].set_data_from_numpy(input1, binary_data=True)
    return inputs


@pytest.mark.parametrize("compression", [None, "gzip", "deflate"])
def test_simple_adds_and_subtracts_over_json_binary_and_compressed_http(
    triton: Any, compression: str | None
) -> None:
    input0 = np.expand_dims(np.arange(16, dtype=np.int32), axis=0)
    input1 = np.full((1, 16), -1, dtype=np.int32)
    outputs = [
        httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
        httpclient.InferRequestedOutput("OUTPUT1", binary_data=False),
    ]
    compressed = {"request_compression_algorithm": compression, "response_compression_algorithm": compression}
    query = {"trace": "on", "attempt": 1}
    results = triton.infer(
        "simple", _simple_inputs(input0, input1), outputs=outputs, query_params=query, **compressed
    )
    statistics = triton.get_inference_statistics(model_name="simple")
    assert len(statistics["model_stats"]) == 1
    np.testing.assert_array_equal(results.as_numpy("OUTPUT0"), input0 + input1)
    np.testing.assert_array_equal(results.as_numpy("OUTPUT1"), input0 - input1)

    results = triton.infer(
        "simple", _simple_inputs(input0, input1), outputs=None, query_params=query, **compressed
    )
    np.testing.assert_array_equal(results.as_numpy("OUTPUT0"), input0 + input1)
    np.testing.assert_array_equal(results.as_numpy("OUTPUT1"), input0 - input1)

    with pytest.raises(InferenceServerException) as raised:
        triton.infer("no-such-model", _simple_inputs(input0, input1), outputs=outputs)
    assert raised.value.message().startswith("Request for unknown model")


def test_load_unload_and_a_config_override_lasting_one_load(triton: Any, stock_server: Server) -> None:
    on_disk = sorted(p.name for p in stock_server.repository.iterdir())
    assert [row["name"] for row in triton.get_model_repository_index()] == on_disk
    triton.load_model("simple", headers=WRITE_HEADERS)
    assert triton.is_model_ready("simple")

    with pytest.raises(InferenceServerException) as raised:  # the example's deliberately malformed config
        triton.load_model(
            "simple", config='"parameters": {"config": {{"max_batch_size": "16"}}}', headers=WRITE_HEADERS
        )
    assert "failed to load" in raised.value.message()

    triton.load_model("simple", config='{"max_batch_size":"16"}', headers=WRITE_HEADERS)
    assert triton.get_model_config("simple")["max_batch_size"] == 16

    triton.unload_model("simple", headers=WRITE_HEADERS)
    assert not triton.is_model_ready("simple")

    with pytest.raises(InferenceServerException) as raised:
        triton.load_model("no-such-model", headers=WRITE_HEADERS)
    assert "failed to load" in raised.value.message()
    triton.load_model("simple", headers=WRITE_HEADERS)  # as the other tests expect it
    assert triton.get_model_config("simple")["max_batch_size"] == 8  # the override was not written


def _image_client_parse_model(triton: Any, model_name: str) -> tuple[int, str, str, int, int, int, str]:
    """What ``image_client.py``'s ``parse_model`` reads and checks of the model, the same way."""
    metadata, config = triton.get_model_metadata(model_name), triton.get_model_config(model_name)
    assert len(metadata["inputs"]) == 1 and len(metadata["outputs"]) == 1
    assert len(config["input"]) == 1
    input_metadata, input_config, output_metadata = (
        metadata["inputs"][0],
        config["input"][0],
        metadata["outputs"][0],
    )
    assert output_metadata["datatype"] == "FP32"
    batched = config["max_batch_size"] > 0
    non_one = [d for d in output_metadata["shape"][1 if batched else 0 :] if d > 1]
    assert len(non_one) <= 1, "expecting the model's output to be a vector"
    assert len(input_metadata["shape"]) == 3 + batched
    assert input_config["format"] in ("FORMAT_NCHW", "FORMAT_NHWC")
    if input_config["format"] == "FORMAT_NHWC":
        h, w, c = input_metadata["shape"][1 if batched else 0 :]
    else:
        c, h, w = input_metadata["shape"][1 if batched else 0 :]
    return (
        config["max_batch_size"],
        input_metadata["name"],
        output_metadata["name"],
        c,
        h,
        w,
        input_metadata["datatype"],
    )


@pytest.mark.parametrize("model_name", ["mnist", "digits"])
def test_class_count_gives_each_images_top_classes_with_labels(triton: Any, model_name: str) -> None:
    images, labels = load_mnist_5k()
    images, labels = images[:8], labels[:8]
    if model_name == "mnist":
        max_batch_size, input_name, output_name, c, h, w, dtype = _image_client_parse_model(
            triton, model_name
        )
    else:  # the zoo's classifier has a second output (probabilities): name the one to classify
        max_batch_size, input_name, output_name, c, h, w, dtype = 32, "image", "logits", 1, 28, 28, "FP32"
    assert (max_batch_size, (c, h, w), dtype) == (32, (1, 28, 28), "FP32")
    batch = images.reshape(-1, c, h, w).astype(np.float32)
    image_input = httpclient.InferInput(input_name, list(batch.shape), dtype)
    image_input.set_data_from_numpy(batch, binary_data=True)
    output = httpclient.InferRequestedOutput(output_name, binary_data=True, class_count=3)
    result = triton.infer(model_name, [image_input], outputs=[output])
    classes = result.as_numpy(output_name)
    assert classes.shape == (8, 3) and classes.dtype == np.object_
    plain = triton.infer(model_name, [image_input], outputs=[httpclient.InferRequestedOutput(output_name)])
    logits = plain.as_numpy(output_name)
    for row, scores, label in zip(classes, logits, labels):
        score, index, name = row[0].decode().split(":")  # image_client prints "score (index) = label"
        assert int(index) == int(label) == int(np.argmax(scores))
        assert name == str(label) and score == "%f" % scores.max()
        assert [int(item.decode().split(":")[1]) for item in row] == list(
            np.argsort(-scores, kind="stable")[:3]
        )


def test_class_count_on_a_model_without_labels(triton: Any) -> None:
    x = np.array([[1.0, -2.0, 0.5, 3.0], [0.0, 1.0, 2.0, 3.0]], np.float32)
    tensor = httpclient.InferInput("input", [2, 4], "FP32")
    tensor.set_data_from_numpy(x)
    for binary in (True, False):
        output = httpclient.InferRequestedOutput("output", binary_data=binary, class_count=2)
        classes = triton.infer("mlp", [tensor], outputs=[output]).as_numpy("output")
        assert classes.shape == (2, 2)
        texts = [item.decode() if binary else item for item in classes.ravel()]  # JSON BYTES come as str
        assert all(len(text.split(":")) == 2 for text in texts), texts
