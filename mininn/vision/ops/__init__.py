"""torchvision.ops on mininn."""

__all__: list[str] = []

from mininn.vision.ops.misc import (  # noqa: E402 - appended per part
    MLP,
    Conv2dNormActivation,
    Conv3dNormActivation,
    Permute,
    SqueezeExcitation,
)
from mininn.vision.ops.stochastic_depth import StochasticDepth, stochastic_depth  # noqa: E402

__all__ += ["Conv2dNormActivation", "Conv3dNormActivation", "MLP", "Permute", "SqueezeExcitation",
            "StochasticDepth", "stochastic_depth"]
