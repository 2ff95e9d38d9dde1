"""Triton's `simple` example model: OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1."""

import torch


class AddSub(torch.nn.Module):
    def forward(self, INPUT0, INPUT1):  # noqa: N803 - Triton's tensor names
        return INPUT0 + INPUT1, INPUT0 - INPUT1
