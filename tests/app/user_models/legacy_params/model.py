import math

import torch
import torch.nn as nn


class LegacyLinear(nn.Module):
    """A linear layer written the way older repositories do: FloatTensor parameters, .data.uniform_."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.FloatTensor(out_features, in_features))
        self.bias = nn.Parameter(torch.FloatTensor(out_features))
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        self.bias.data.uniform_(-stdv, stdv)

    def forward(self, x):
        return x.matmul(self.weight.t()) + self.bias


class AttentionPool(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.query = nn.Parameter(torch.Tensor(dim))
        self.query.data.normal_(0, 0.1)

    def forward(self, h):  # (B, T, D) -> (B, D)
        weights = torch.softmax(torch.matmul(h, self.query), dim=1)
        return (weights.unsqueeze(-1) * h).sum(1)


class LegacyNet(nn.Module):
    def __init__(self, in_features=6, hidden=16, num_classes=3):
        super().__init__()
        self.proj = LegacyLinear(in_features, hidden)
        self.pool = AttentionPool(hidden)
        self.out = LegacyLinear(hidden, num_classes)
        self.register_buffer("temperature", torch.FloatTensor([2.0]))

    def forward(self, x):
        if not isinstance(x, torch.FloatTensor):
            x = x.type(torch.FloatTensor)
        h = torch.tanh(self.proj(x))
        return self.out(self.pool(h)) / self.temperature
