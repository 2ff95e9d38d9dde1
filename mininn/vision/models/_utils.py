"""``torchvision.models._utils``: the helpers model files import from it.

``IntermediateLayerGetter`` is how detection and segmentation code (DETR, torchvision's
own FCN/DeepLab) turns a classification backbone into a feature extractor:
``IntermediateLayerGetter(resnet50(), {"layer4": "0"})`` runs the backbone's children in
order up to the last one asked for and returns their outputs by the new names.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from mininn import nn
from mininn.tensor import Tensor
from mininn.vision.models._channels import make_divisible as _make_divisible

__all__ = ["IntermediateLayerGetter", "_make_divisible", "_ovewrite_named_param"]


class IntermediateLayerGetter(nn.ModuleDict):
    """``model``'s direct children up to the last of ``return_layers``, returning those layers' outputs.

    Children must be registered in the order ``forward`` uses them and used once each (as in
    torchvision); only direct children can be returned.

    Args:
        model: the backbone.
        return_layers: child name -> name of its output in the returned dict.

    Raises:
        ValueError: a name in ``return_layers`` is not a direct child of ``model`` (torchvision's message).
    """

    _version = 2

    def __init__(self, model: nn.Module, return_layers: dict[str, str]) -> None:
        if not set(return_layers).issubset([name for name, _ in model.named_children()]):
            raise ValueError("return_layers are not present in model")
        remaining = {str(k): str(v) for k, v in return_layers.items()}
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            remaining.pop(name, None)
            if not remaining:
                break
        super().__init__(layers)
        self.return_layers = return_layers

    def forward(self, x: Tensor) -> OrderedDict[str, Tensor]:
        out: OrderedDict[str, Tensor] = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out


def _ovewrite_named_param(kwargs: dict[str, Any], param: str, new_value: Any) -> None:
    """Set ``kwargs[param]``; a different value the caller gave raises torchvision's ValueError.

    (torchvision's spelling, for files that import it.)
    """
    if param in kwargs and kwargs[param] != new_value:
        raise ValueError(
            f"The parameter '{param}' expected value {new_value} but got {kwargs[param]} instead.")
    kwargs[param] = new_value
