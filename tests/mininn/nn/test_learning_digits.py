"""Learning for real: a small mininn CNN learns scikit-learn's handwritten digits (8x8, 1,797 images).

Conv2d / ReLU / MaxPool2d / Linear trained with ``mininn.optim.SGD`` (momentum)
and ``F.cross_entropy`` on 75% of the images must classify the held-out 25%
with at least 95% accuracy (it reaches about 98%), in a few seconds.

The GEMMs here are tiny (32 x 144 x 512); the run pins BLAS to one thread
because OpenBLAS's worker threads make them ~100x slower on a busy, shared
CPU (the CI runners), while one thread takes well under a millisecond.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn, optim

datasets = pytest.importorskip("sklearn.datasets")
model_selection = pytest.importorskip("sklearn.model_selection")
threadpoolctl = pytest.importorskip("threadpoolctl")  # a scikit-learn dependency


def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    data = datasets.load_digits()
    images = (data.images / 16.0).astype(np.float32)[:, None]  # (1797, 1, 8, 8), pixels in [0, 1]
    return model_selection.train_test_split(
        images, data.target.astype(np.int64), test_size=0.25, random_state=0, stratify=data.target
    )


class DigitsCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),  # (B, 16, 8, 8)
            nn.ReLU(),
            nn.MaxPool2d(2),  # (B, 16, 4, 4)
            nn.Conv2d(16, 32, 3, padding=1),  # (B, 32, 4, 4)
            nn.ReLU(),
            nn.MaxPool2d(2),  # (B, 32, 2, 2)
        )
        self.classifier = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x: mininn.Tensor) -> mininn.Tensor:
        return self.classifier(self.features(x).flatten(1))


def _accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray) -> float:
    model.eval()
    with mininn.no_grad():
        logits = model(mininn.tensor(images)).numpy()
    model.train()
    return float((logits.argmax(axis=1) == labels).mean())


def test_small_cnn_learns_handwritten_digits_to_95_percent_held_out_accuracy():
    x_train, x_test, y_train, y_test = _digits()
    mininn.manual_seed(0)
    model = DigitsCNN()
    opt = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    order = np.random.default_rng(0)
    start = time.perf_counter()
    losses = []
    with threadpoolctl.threadpool_limits(1, "blas"):
        for _epoch in range(12):
            perm = order.permutation(len(x_train))
            for i in range(0, len(perm), 32):
                batch = perm[i : i + 32]
                loss = F.cross_entropy(model(mininn.tensor(x_train[batch])), mininn.tensor(y_train[batch]))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
        accuracy = _accuracy(model, x_test, y_test)
    elapsed = time.perf_counter() - start
    assert np.mean(losses[-20:]) < 0.25 * np.mean(losses[:20])
    assert accuracy >= 0.95, f"held-out accuracy {accuracy:.3f} after {elapsed:.1f}s"
    assert elapsed < 60
