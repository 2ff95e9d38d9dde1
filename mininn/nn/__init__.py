"""``mininn.nn``: modules, parameters and layers with ``torch.nn``'s names and semantics."""

from mininn.nn import functional, init, modules, utils
from mininn.nn.capture import (
    ActivationCapture,
    ActivationStats,
    CaptureError,
    CaptureLimitError,
    Intervention,
)
from mininn.nn.modules import *  # noqa: F403
from mininn.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    "functional",
    "init",
    "utils",
    "ActivationCapture",
    "ActivationStats",
    "CaptureError",
    "CaptureLimitError",
    "Intervention",
    "Buffer",
    "Parameter",
    "UninitializedBuffer",
    "UninitializedParameter",
]
__all__ += modules.__all__
