import torch
import torch.nn as nn


class Backbone(nn.Module):
    def __init__(self, d_in=6, d_hidden=12):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, d_hidden), nn.GELU(), nn.LayerNorm(d_hidden))
        self.cls = nn.Linear(d_hidden, 4)
        self.reg = nn.Linear(d_hidden, 2)


class TupleHeads(Backbone):
    """Returns (class logits, box regression)."""

    def forward(self, x):
        h = self.body(x)
        return self.cls(h), self.reg(h)


class DictHeads(Backbone):
    """Returns {"logits": ..., "box": ...}."""

    def forward(self, x):
        h = self.body(x)
        return {"logits": self.cls(h), "box": torch.sigmoid(self.reg(h))}
