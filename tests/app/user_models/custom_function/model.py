"""An MLP whose activation, quantizer and adversarial branch are custom autograd Functions.

- ``SwishFunction``: a memory-efficient Swish that saves only its input and recomputes
  the sigmoid in backward (``once_differentiable``).
- ``RoundSTE``: rounds to a grid in forward; a straight-through gradient in backward
  (inside the clipping range), and None for its non-tensor ``levels``.
- ``GradientReversal``: the identity in forward; the gradient negated and scaled in
  backward (written in the ``setup_context`` style).
"""

import torch
import torch.nn as nn
from torch.autograd import Function
from torch.autograd.function import once_differentiable


class SwishFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad_output * (s * (1 + x * (1 - s)))


class RoundSTE(Function):
    @staticmethod
    def forward(ctx, x, levels):
        ctx.save_for_backward(x)
        return torch.round(x.clamp(-1.0, 1.0) * levels) / levels

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        inside = (x.abs() <= 1.0).to(grad_output.dtype)
        return grad_output * inside, None


class GradientReversal(Function):
    @staticmethod
    def forward(x, alpha):
        return x.view_as(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, alpha = inputs
        ctx.alpha = alpha

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None


class MemoryEfficientSwish(nn.Module):
    def forward(self, x):
        return SwishFunction.apply(x)


class Quantize(nn.Module):
    def __init__(self, levels=8):
        super().__init__()
        self.levels = levels

    def forward(self, x):
        return RoundSTE.apply(x, self.levels)


class SwishQuantMLP(nn.Module):
    """Returns (class logits, domain logits); the domain head learns through a reversed gradient."""

    def __init__(self, d_in=6, d_hidden=16, n_classes=3, levels=8, alpha=0.5):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(d_in, d_hidden),
            MemoryEfficientSwish(),
            nn.Linear(d_hidden, d_hidden),
            MemoryEfficientSwish(),
        )
        self.quant = Quantize(levels)
        self.head = nn.Linear(d_hidden, n_classes)
        self.domain = nn.Linear(d_hidden, 2)
        self.alpha = alpha

    def forward(self, x):
        h = self.quant(self.body(x))  # (B, d_hidden), multiples of 1/levels
        return self.head(h), self.domain(GradientReversal.apply(h, self.alpha))
