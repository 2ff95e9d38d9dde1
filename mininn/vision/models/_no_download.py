"""``weights=`` and the legacy ``pretrained=`` of torchvision's builders: mininn downloads nothing.

``weights=None`` and ``pretrained=False`` build a randomly initialised model, as in
torchvision (``pretrained=`` with torchvision's deprecation warnings). Anything that
asks for pretrained weights raises :class:`PretrainedWeightsError`: the weights are
the user's to upload, as a state dict, to the model built with ``weights=None``.
"""

from __future__ import annotations

import warnings
from enum import Enum
from typing import Any

__all__ = ["PretrainedWeightsError", "check_weights", "overwrite_named_param", "weights_enum"]


class PretrainedWeightsError(ValueError):
    """A builder was asked for pretrained weights, which mininn does not download."""

    def __init__(self, builder: str, asked: str) -> None:
        super().__init__(
            f"{builder}({asked}): mininn does not download pretrained weights. Build the model with "
            f"{builder}(weights=None) and load the weights as a state dict: save it where torchvision is "
            f"installed (torch.save({builder}(weights=...).state_dict(), 'weights.pt')) and upload that file "
            "(PUT /v2/models/<name>/state_dict), or call model.load_state_dict(...) on it."
        )
        self.builder = builder


def check_weights(builder: str, weights: Any, kwargs: dict[str, Any]) -> None:
    """Refuse pretrained weights; pop a legacy ``pretrained`` from ``kwargs`` (warning as torchvision).

    Raises:
        PretrainedWeightsError: ``weights`` is not None, or ``pretrained`` is true.
    """
    if "pretrained" in kwargs:
        pretrained = kwargs.pop("pretrained")
        if weights is None:
            _warn_legacy(pretrained)
        if pretrained:
            raise PretrainedWeightsError(builder, f"pretrained={pretrained!r}")
    if weights is not None:
        shown = str(weights) if isinstance(weights, Enum) else repr(weights)
        raise PretrainedWeightsError(builder, f"weights={shown}")


def _warn_legacy(pretrained: Any) -> None:
    warnings.warn(
        "The parameter 'pretrained' is deprecated since 0.13 and may be removed in the future, "
        "please use 'weights' instead.",
        stacklevel=5,  # the line that called the builder
    )
    if not pretrained:
        warnings.warn(
            "Arguments other than a weight enum or `None` for 'weights' are deprecated since 0.13 and "
            "may be removed in the future. The current behavior is equivalent to passing `weights=None`.",
            stacklevel=5,  # the line that called the builder
        )


def overwrite_named_param(kwargs: dict[str, Any], param: str, new_value: Any) -> None:
    """Set ``kwargs[param]``; a different value the caller gave raises torchvision's ValueError."""
    if param in kwargs:
        if kwargs[param] != new_value:
            raise ValueError(
                f"The parameter '{param}' expected value {new_value} but got {kwargs[param]} instead.")
    else:
        kwargs[param] = new_value


def weights_enum(name: str, *members: str, default: str = "IMAGENET1K_V1") -> type[Enum]:
    """torchvision's weights enum ``name`` (``members`` and ``DEFAULT``), so that files naming it import.

    Passing a member to a builder raises :class:`PretrainedWeightsError`.
    """
    values = [(member, member) for member in members] + [("DEFAULT", default)]
    return Enum(name, values, module=__name__)  # type: ignore[return-value]
