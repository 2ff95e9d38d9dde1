"""A small residual MLP whose hot paths are TorchScript helpers, as in many vision and audio repos."""

from typing import List  # noqa: UP035 - written as TorchScript users write it

import torch
import torch.nn as nn


@torch.jit.script
def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    y = x + bias
    return y * 0.5 * (1.0 + torch.erf(y * 0.70710678))


@torch.jit.script
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class Block(nn.Module):
    __constants__ = ["eps"]
    eps: torch.jit.Final[float]

    def __init__(self, dim, expansion=2, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.norm_weight = nn.Parameter(torch.ones(dim))
        self.up = nn.Linear(dim, dim * expansion, bias=False)
        self.up_bias = nn.Parameter(torch.zeros(dim * expansion))
        self.down = nn.Linear(dim * expansion, dim)

    def forward(self, x):
        h = rms_norm(x, self.norm_weight, self.eps)
        return x + self.down(bias_gelu(self.up(h), self.up_bias))


class ResidualMLP(nn.Module):
    def __init__(self, in_features=8, dim=12, depth=2, num_classes=4):
        super().__init__()
        self.in_features = in_features
        self.stem = nn.Linear(in_features, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim * depth, num_classes)

    @torch.jit.ignore
    def check_input(self, x):
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"expected (batch, {self.in_features}) features, got {tuple(x.shape)}")

    @torch.jit.unused
    def describe(self):
        return f"{len(self.blocks)} blocks"

    def forward(self, x):
        if not torch.jit.is_scripting():
            self.check_input(x)
        x = self.stem(x)
        features = torch.jit.annotate(List[torch.Tensor], [])  # noqa: UP006
        for block in self.blocks:
            x = block(x)
            features.append(x)
        return self.head(torch.cat(features, dim=-1))
