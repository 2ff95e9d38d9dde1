"""What every torchvision model builder accepts besides the model's own arguments.

``weights=None`` (and the legacy ``pretrained=False``) builds a randomly initialised
model, as torchvision's builders do. Pretrained weights would need a download, which
mininn never does: any other value fails with a message that says how to load them.
The weights enums (``MobileNet_V2_Weights``, ...) exist so that model files importing
them load; their members name torchvision's weights and hold nothing else.
"""

from __future__ import annotations

import sys
import warnings
from enum import Enum
from typing import Any, NoReturn

__all__ = ["WeightsEnum", "weights_enum", "refuse_weights"]


def _no_download(what: str) -> NoReturn:
    raise RuntimeError(
        f"{what}: mininn does not download pretrained weights. Build the model with weights=None and load "
        f"the weights' state dict instead: upload it with the model (PUT /v2/models/<name>/state_dict) or "
        f"call model.load_state_dict(state_dict)."
    )


class WeightsEnum(Enum):
    """The names of a builder's pretrained weights in torchvision (``DEFAULT`` is an alias of one)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    def get_state_dict(self, *args: Any, **kwargs: Any) -> NoReturn:
        """Always raises: the weights would have to be downloaded."""
        _no_download(f"{self!r}.get_state_dict()")

    @property
    def url(self) -> NoReturn:
        """Always raises: mininn keeps no download addresses."""
        _no_download(f"{self!r}.url")

    @property
    def meta(self) -> NoReturn:
        """Always raises: mininn keeps no metadata of pretrained weights."""
        _no_download(f"{self!r}.meta")

    @property
    def transforms(self) -> NoReturn:
        """Always raises: mininn keeps no preprocessing presets of pretrained weights."""
        raise RuntimeError(
            f"{self!r}.transforms: mininn keeps no preprocessing presets of pretrained weights; compose "
            f"the preprocessing from torchvision.transforms (Resize, CenterCrop, ToTensor, Normalize)."
        )


def weights_enum(name: str, members: list[str], default: str, module: str) -> type[WeightsEnum]:
    """A :class:`WeightsEnum` called ``name`` (in ``module``): ``members``, and ``DEFAULT`` as ``default``."""
    pairs = [(m, m) for m in members] + [("DEFAULT", default)]
    return WeightsEnum(name, pairs, module=module)  # type: ignore[return-value]


def refuse_weights(builder: str, weights: Any, kwargs: dict[str, Any]) -> None:
    """Check a builder's ``weights``; drop a legacy ``pretrained`` from ``kwargs`` (warning as torchvision).

    Args:
        builder: the builder's name, e.g. ``"mobilenet_v2"``.
        weights: the builder's ``weights`` argument.
        kwargs: the builder's remaining keyword arguments (``pretrained`` is removed).

    Raises:
        ValueError: ``weights`` is not None, or ``pretrained`` is true.
    """
    if "pretrained" in kwargs:
        pretrained = kwargs.pop("pretrained")
        if weights is None:
            _warn_legacy(pretrained)
        if pretrained:
            _refuse(builder, f"pretrained={pretrained!r}")
    if weights is not None:
        _refuse(builder, f"weights={weights!r}")


def _refuse(builder: str, asked: str) -> NoReturn:
    raise ValueError(
        f"{builder}({asked}): mininn does not download pretrained weights. Build the model with "
        f"{builder}(weights=None) and load the weights as a state dict: save it where torchvision is "
        f"installed (torch.save({builder}(weights=...).state_dict(), 'weights.pt')) and upload that file "
        "(PUT /v2/models/<name>/state_dict), or call model.load_state_dict(...) on it."
    )


def _warn_legacy(pretrained: Any) -> None:
    """torchvision's deprecation warnings for ``pretrained=``, pointing at the builder's caller."""
    stacklevel = _first_frame_outside_models()
    warnings.warn(
        "The parameter 'pretrained' is deprecated since 0.13 and may be removed in the future, "
        "please use 'weights' instead.",
        stacklevel=stacklevel,
    )
    if not pretrained:
        warnings.warn(
            "Arguments other than a weight enum or `None` for 'weights' are deprecated since 0.13 and "
            "may be removed in the future. The current behavior is equivalent to passing `weights=None`.",
            stacklevel=stacklevel,
        )


def _first_frame_outside_models() -> int:
    """The ``stacklevel`` (for a warning raised by our caller) of the first frame outside these builders."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(__package__ or ""):
        frame, level = frame.f_back, level + 1
    return level
