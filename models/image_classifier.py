"""Square-image classifiers: ``image`` FP32 [-1, C, S, S] in, ``logits`` and ``probabilities`` out.

``lenet5``, ``simple_cnn``, ``zebranet`` and the ResNets register with :func:`image_classifier`;
their configs have ``in_channels``, ``image_size`` (the side S) and ``num_classes``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from models.processing import ClassifierProcessor
from models.registry import Architecture
from models.signature import Signature, image_classifier_signature

if TYPE_CHECKING:
    from mininn.nn import Module

__all__ = ["image_classifier", "square_image_signature"]


def square_image_signature(config: Any) -> Signature:
    """``image`` FP32 [-1, C, S, S] -> ``logits``, ``probabilities`` FP32 [-1, num_classes],
    for a config with ``in_channels`` (C), ``image_size`` (S) and ``num_classes``."""
    size = config.image_size
    return image_classifier_signature(config.in_channels, size, size, config.num_classes)


def image_classifier(
    name: str, config_cls: type, build: Callable[[Any], Module], *, description: str
) -> Architecture:
    """The :class:`Architecture` of a square-image classifier: :func:`square_image_signature`,
    :class:`~models.processing.ClassifierProcessor` (softmax ``probabilities`` beside the logits)."""
    return Architecture(
        name=name,
        config_cls=config_cls,
        build=build,
        signature=square_image_signature,
        processor=ClassifierProcessor,
        description=description,
    )
