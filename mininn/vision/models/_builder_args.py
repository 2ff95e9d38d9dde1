"""What every torchvision model builder accepts besides the model's own arguments.

``weights=None`` (and the legacy ``pretrained=False``) builds a randomly initialised
model, as torchvision's builders do. Pretrained weights would need a download, which
mininn never does: any other value fails with a message that says how to load them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["refuse_weights"]


def refuse_weights(builder: str, weights: Any, kwargs: dict[str, Any]) -> None:
    """Check a builder's ``weights`` and drop the legacy ``pretrained`` from ``kwargs``.

    Args:
        builder: the builder's name, e.g. ``"mobilenet_v2"``.
        weights: the builder's ``weights`` argument.
        kwargs: the builder's remaining keyword arguments (``pretrained`` is removed).

    Raises:
        ValueError: ``weights`` is not None, or ``pretrained`` is true.
    """
    pretrained = kwargs.pop("pretrained", False)
    if weights is None and not pretrained:
        return
    asked = f"weights={weights!r}" if weights is not None else f"pretrained={pretrained!r}"
    raise ValueError(
        f"{builder}({asked}): mininn does not download pretrained weights. Build the model with "
        f"{builder}(weights=None) and load the weights' state dict instead: upload it with the model "
        f"(PUT /v2/models/<name>/state_dict) or call model.load_state_dict(state_dict)."
    )
