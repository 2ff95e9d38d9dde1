"""Reverse-mode autograd: grad-mode switches, ``ArrayFunction`` and the engine, and
``Function`` (torch's ``torch.autograd.Function``, for users' own differentiable ops)."""

from mininn.autograd import function
from mininn.autograd.function import Function, FunctionCtx, once_differentiable
from mininn.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from mininn.autograd.gradients import GradcheckError, grad, gradcheck
from mininn.autograd.graph import ArrayFunction, Context, Node
from mininn.autograd.variable import Variable  # torch's deprecated wrapper (issue 30)

__all__ = [
    "Context",
    "ArrayFunction",
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "Node",
    "enable_grad",
    "function",
    "grad",
    "gradcheck",
    "inference_mode",
    "is_grad_enabled",
    "no_grad",
    "once_differentiable",
    "set_grad_enabled",
    "Variable",
]
