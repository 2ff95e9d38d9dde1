"""``Identity``, ``Linear`` and ``Bilinear``."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

import math
from typing import Any

from mininn.nn import functional as F
from mininn.nn import init
from mininn.nn.modules._utils import register_weight_and_bias, reset_kaiming_uniform
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input unchanged; any constructor arguments are ignored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``.

    Args:
        in_features: size of each input sample (last dim).
        out_features: size of each output sample.
        bias: whether to learn an additive bias. Default ``True``.
        device: where the parameters live. Default cpu.
        dtype: parameter dtype. Default the default float dtype.

    Attributes:
        weight: ``(out_features, in_features)``, initialised from U(-k, k), ``k = 1/sqrt(in_features)``.
        bias: ``(out_features,)``, from U(-k, k), or ``None``.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        register_weight_and_bias(self, (out_features, in_features), out_features, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw ``weight`` with ``kaiming_uniform_(a=sqrt(5))`` and ``bias`` from U(+-1/sqrt(fan_in))."""
        reset_kaiming_uniform(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        params = self._parameters
        if "weight" in params and "bias" in params:
            # what self.weight/self.bias return, read without the failed instance lookup that
            # reaches Module.__getattr__ (an AttributeError raised and caught per access)
            return F.linear(input, params["weight"], params["bias"])
        return F.linear(input, self.weight, self.bias)  # moved out: weight_norm, parametrize, prune

    def extra_repr(self) -> str:
        bias = self.bias is not None
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={bias}"


class Bilinear(Module):
    """``y = x1^T weight x2 + bias`` for each pair of input samples.

    Args:
        in1_features: size of each first input sample (last dim of ``x1``).
        in2_features: size of each second input sample (last dim of ``x2``).
        out_features: size of each output sample.
        bias: whether to learn an additive bias. Default ``True``.
        device: where the parameters live. Default cpu.
        dtype: parameter dtype. Default the default float dtype.

    Attributes:
        weight: ``(out_features, in1_features, in2_features)``, from U(-k, k), ``k = 1/sqrt(in1_features)``.
        bias: ``(out_features,)``, from U(-k, k), or ``None``.
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        weight_shape = (out_features, in1_features, in2_features)
        register_weight_and_bias(self, weight_shape, out_features, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draw ``weight`` and ``bias`` from U(-k, k), ``k = 1/sqrt(in1_features)``."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
