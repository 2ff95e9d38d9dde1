"""A decoder block in the LLaMA family: RMSNorm, rotary positions as complex rotations, gated SiLU MLP."""

import math

import torch
import torch.nn.functional as F
from torch import nn


def rotations(head_dim, length, base=10000.0):
    """(length, head_dim / 2) unit complex numbers: position t turns pair i by t * base^(-2i / head_dim)."""
    inverse = base ** (-torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(length).float(), inverse)
    return torch.polar(torch.ones_like(angles), angles)


def rotate(x, turns):
    """x: (B, T, heads, head_dim) real; pairs of features rotated by ``turns`` (T, head_dim / 2)."""
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * turns[None, :, None, :]).flatten(-2).type_as(x)


class RotaryBlock(nn.Module):
    def __init__(self, dim=16, heads=2, max_len=8, hidden=48):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.norm_attn = nn.RMSNorm(dim, eps=1e-6)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.norm_mlp = nn.RMSNorm(dim, eps=1e-6)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        self.register_buffer("turns", rotations(self.head_dim, max_len), persistent=False)

    def attend(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).unbind(dim=2)
        q, k = rotate(q, self.turns[:t]), rotate(k, self.turns[:t])
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))  # (B, heads, T, head_dim)
        future = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) + future, dim=-1)
        return self.out((weights @ v).transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = x + self.attend(self.norm_attn(x))
        h = self.norm_mlp(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))
