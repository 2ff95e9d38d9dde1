"""Reverse-mode autograd: grad-mode switches, ``ArrayFunction`` and the engine."""

from mininn.autograd.function import ArrayFunction, Context, Node
from mininn.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from mininn.autograd.gradients import GradcheckError, grad, gradcheck
from mininn.autograd.variable import Variable  # torch's deprecated wrapper (issue 30)

__all__ = [
    "Context",
    "ArrayFunction",
    "GradcheckError",
    "Node",
    "enable_grad",
    "grad",
    "gradcheck",
    "inference_mode",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
    "Variable",
]
