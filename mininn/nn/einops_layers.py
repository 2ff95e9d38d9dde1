"""einops' torch layers as mininn modules: ``Rearrange``, ``Reduce`` and ``EinMix``.

The same classes as ``einops.layers.torch`` (built on einops' own layer mixins,
so patterns, checks, messages and reprs are einops'), with
:class:`mininn.nn.Module` in place of ``torch.nn.Module``: hooks, ``state_dict``
and ``load_state_dict`` behave as for any module, and ``EinMix`` names its
parameters ``weight`` and ``bias`` as einops' torch layer does, so torch state
dicts load. In model code loaded by :func:`mininn.torch_alias.load_code`,
``from einops.layers.torch import Rearrange`` gives these classes.

Example::

    from mininn.nn.einops_layers import Rearrange

    to_patches = Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=4, p2=4)
"""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from typing import Any

import einops
from einops.layers import RearrangeMixin, ReduceMixin
from einops.layers._einmix import _EinmixMixin

import mininn
import mininn.einops  # noqa: F401 - defines einops' backend for mininn tensors, which the mixins look up
from mininn.nn.modules.module import Module
from mininn.nn.parameter import Parameter
from mininn.tensor import Tensor

__all__ = ["EinMix", "Rearrange", "Reduce"]


class Rearrange(RearrangeMixin, Module):
    """``einops.rearrange(input, pattern, **axes_lengths)`` as a layer.

    Args:
        pattern: The rearrangement pattern, e.g. ``"b c h w -> b (h w) c"``.
        **axes_lengths: Lengths of axes the pattern cannot infer.

    Raises:
        einops.EinopsError: the pattern is invalid (at construction) or does not fit the input
            (einops' torch layer raises ``KeyError(ndim)`` for an input of the wrong number of
            dims; this one raises what ``einops.rearrange`` raises, naming the shape).
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._multirecipe:
            einops.rearrange(input, self.pattern, **self.axes_lengths)  # raises its message
        return self._apply_recipe(input)


class Reduce(ReduceMixin, Module):
    """``einops.reduce(input, pattern, reduction, **axes_lengths)`` as a layer.

    Args:
        pattern: The reduction pattern, e.g. ``"b c h w -> b c"``.
        reduction: ``"min"``, ``"max"``, ``"sum"``, ``"mean"``, ``"prod"``, ``"any"`` or ``"all"``.
        **axes_lengths: Lengths of axes the pattern cannot infer.

    Raises:
        einops.EinopsError: the pattern or reduction is invalid, or the pattern does not fit the
            input (for an input of the wrong number of dims, what ``einops.reduce`` raises).
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in self._multirecipe:
            einops.reduce(input, self.pattern, self.reduction, **self.axes_lengths)  # raises its message
        return self._apply_recipe(input)


class EinMix(_EinmixMixin, Module):
    """An einsum of the input with a learned ``weight`` (plus an optional ``bias``), with rearranges.

    Args:
        pattern: Input axes ``->`` output axes, e.g. ``"b t c -> b t d"``.
        weight_shape: The weight's axes, e.g. ``"c d"``.
        bias_shape: The bias's axes (all in the output), or None for no bias.
        **axes_lengths: The length of every weight and bias axis.

    Weight and bias are drawn uniformly from ``±sqrt(3 / fan_in)`` and ``±sqrt(1 / fan_in)``.

    Raises:
        einops.EinopsError: the patterns are inconsistent or a length is missing.
    """

    weight: Parameter
    bias: Parameter | None

    def _create_parameters(self, weight_shape: list[int], weight_bound: float,
                           bias_shape: list[int] | None, bias_bound: float) -> None:
        self.weight = Parameter(mininn.zeros(weight_shape).uniform_(-weight_bound, weight_bound))
        if bias_shape is None:
            self.bias = None
        else:
            self.bias = Parameter(mininn.zeros(bias_shape).uniform_(-bias_bound, bias_bound))

    def _create_rearrange_layers(self, pre_reshape_pattern: str | None,
                                 pre_reshape_lengths: dict[str, Any] | None, post_reshape_pattern: str | None,
                                 post_reshape_lengths: dict[str, Any] | None) -> None:
        self.pre_rearrange = None
        if pre_reshape_pattern is not None:
            self.pre_rearrange = Rearrange(pre_reshape_pattern, **(pre_reshape_lengths or {}))
        self.post_rearrange = None
        if post_reshape_pattern is not None:
            self.post_rearrange = Rearrange(post_reshape_pattern, **(post_reshape_lengths or {}))

    def forward(self, input: Tensor) -> Tensor:
        mixed = input if self.pre_rearrange is None else self.pre_rearrange(input)
        result = mininn.einsum(self.einsum_pattern, mixed, self.weight)
        if self.bias is not None:
            result = result + self.bias
        if self.post_rearrange is not None:
            result = self.post_rearrange(result)
        return result
