"""Fold an eval-mode batch norm into the convolution or linear layer before it:
``fuse_conv_bn_eval``, ``fuse_linear_bn_eval`` and their weight-level helpers."""

from __future__ import annotations

import copy
from typing import TypeVar

from mininn._factories import ones_like, zeros_like
from mininn.autograd.grad_mode import no_grad
from mininn.nn.modules.module import Module
from mininn.nn.parameter import Parameter
from mininn.tensor import Tensor

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]

ConvT = TypeVar("ConvT", bound=Module)
LinearT = TypeVar("LinearT", bound=Module)


def _check_eval(layer: Module, bn: Module) -> None:
    """torch's checks (AssertionError, also under ``python -O``): eval mode, running statistics."""
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None, transpose: bool = False,
                         ) -> tuple[Parameter, Parameter]:
    """Weight and bias of one convolution equal to ``bn(conv(x))`` with ``bn`` in eval mode.

    ``transpose`` marks a transposed convolution (output channels on dim 1 of its weight).
    """
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    with no_grad():
        b = zeros_like(bn_rm) if conv_b is None else conv_b
        scale = (ones_like(bn_rm) if bn_w is None else bn_w) * (bn_rv + bn_eps).rsqrt()
        shift = zeros_like(bn_rm) if bn_b is None else bn_b
        shape = [1, -1] if transpose else [-1, 1]
        fused_w = (conv_w * scale.reshape(*shape, *[1] * (conv_w.ndim - 2))).to(weight_dtype)
        fused_b = ((b - bn_rm) * scale + shift).to(bias_dtype)
    return (Parameter(fused_w, conv_w.requires_grad),
            Parameter(fused_b, conv_b.requires_grad if conv_b is not None else False))


def fuse_conv_bn_eval(conv: ConvT, bn: Module, transpose: bool = False) -> ConvT:
    """A copy of ``conv`` that computes ``bn(conv(x))``; both must be in eval mode.

    Raises:
        AssertionError: a module is in training mode or ``bn`` has no running statistics.
    """
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                           bn_eps: float, bn_w: Tensor, bn_b: Tensor) -> tuple[Parameter, Parameter]:
    """Weight and bias of one linear layer equal to ``bn(linear(x))`` with ``bn`` in eval mode."""
    with no_grad():
        b = zeros_like(bn_rm) if linear_b is None else linear_b
        scale = bn_w * (bn_rv + bn_eps).rsqrt()
        fused_w = linear_w * scale.unsqueeze(-1)
        fused_b = (b - bn_rm) * scale + bn_b
    return (Parameter(fused_w, linear_w.requires_grad),
            Parameter(fused_b, linear_b.requires_grad if linear_b is not None else False))


def fuse_linear_bn_eval(linear: LinearT, bn: Module) -> LinearT:
    """A copy of ``linear`` that computes ``bn(linear(x))``; both must be in eval mode.

    Raises:
        AssertionError: a module is in training mode, the sizes differ, or ``bn`` has
            no running statistics.
    """
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}"
        )
    _check_eval(linear, bn)
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
