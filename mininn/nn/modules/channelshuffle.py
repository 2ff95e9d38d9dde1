"""``ChannelShuffle``: interleave channels across groups (ShuffleNet)."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from mininn.nn.functional.shuffle import channel_shuffle
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Interleave the channels of ``(N, C, *)`` across ``groups``: ``(g, C/g)`` -> ``(C/g, g)``."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
