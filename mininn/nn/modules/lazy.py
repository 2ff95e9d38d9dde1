"""Lazy modules: layers whose input size is inferred from the first input.

A lazy layer starts with ``UninitializedParameter``/``UninitializedBuffer``
placeholders. Its first call runs ``initialize_parameters(input)``, which
materializes them with the inferred shapes and initialises them as the eager
layer would, then the module *becomes* that eager layer (``LazyLinear`` turns
into ``Linear``: its class is swapped, as in torch). A state dict loaded before
the first call materializes the placeholders with the checkpoint's shapes, so a
checkpoint of the eager layer loads into a fresh lazy one. As in torch,
``in_features`` is then filled in at the first call for ``LazyLinear`` only;
the conv and norm layers keep ``in_channels``/``num_features`` at 0.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._factories import tensor
from mininn.autograd.grad_mode import no_grad
from mininn.nn.modules.conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
)
from mininn.nn.modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from mininn.nn.modules.linear import Linear
from mininn.nn.modules.module import Module
from mininn.nn.modules.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from mininn.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from mininn.tensor import Tensor

__all__ = [
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
    "LazyLinear",
]


class LazyModuleMixin:
    """Mixed in before a Module class: shapes of its placeholders are inferred at the first call.

    Subclasses implement ``initialize_parameters(*args, **kwargs)``, which receives the
    first call's arguments, and may set ``cls_to_become`` (the class the module takes
    afterwards).
    """

    cls_to_become: type[Module] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)  # type: ignore[attr-defined]
        self._initialize_hook = self.register_forward_pre_hook(  # type: ignore[attr-defined]
            self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination: dict[str, Any], prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)  # type: ignore[misc]
        for name, value in self._own_tensors():
            if is_lazy(value) and prefix + name in destination:
                destination[prefix + name] = value  # placeholders are saved as they are

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        """Conversions keep a placeholder buffer a placeholder (with the new dtype and device)."""
        lazy = {k: b for k, b in self._buffers.items() if is_lazy(b)}  # type: ignore[attr-defined]
        result = super()._apply(fn, recurse)  # type: ignore[misc]
        for key, old in lazy.items():
            new = self._buffers[key]  # type: ignore[attr-defined]
            if new is not None and not is_lazy(new):
                self._buffers[key] = UninitializedBuffer(  # type: ignore[attr-defined]
                    old.requires_grad, new.device, new.dtype, old.persistent)
        return result

    def _own_tensors(self) -> Any:
        return itertools.chain(self._parameters.items(), self._buffers.items())  # type: ignore[attr-defined]

    def _lazy_load_hook(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        """Materialize each placeholder that the state dict has a real tensor for."""
        for name, param in self._own_tensors():
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                value = state_dict[key]
                if not is_lazy(value):
                    shape = np.shape(value._data if isinstance(value, Tensor) else value)
                    with no_grad():
                        param.materialize(tuple(shape))

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Materialize the placeholders from the first call's arguments (subclasses)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer is still a placeholder."""
        return any(is_lazy(value) for _, value in self._own_tensors())

    def _infer_parameters(self, module: Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None,
                          ) -> None:
        self.initialize_parameters(*args, **(kwargs or {}))
        if self.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")  # type: ignore[attr-defined]
        self._initialize_hook.remove()
        self._load_hook.remove()
        del self._initialize_hook
        del self._load_hook
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is the last dim of its first input.

    Args:
        out_features: size of each output sample.
        bias: whether to learn an additive bias. Default ``True``.
        device: where the parameters live.
        dtype: parameter dtype.
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:  # loaded from a state dict before the first call
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal "
                                     f"to in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` from dim 1 of the first input (dim 0 when unbatched)."""

    in_channels: int
    out_channels: int
    groups: int
    transposed: bool
    kernel_size: tuple[int, ...]
    _nd: int
    weight: Any
    bias: Any

    def _lazy_init(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        with no_grad():
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:
        unbatched = self._nd + 1
        if input.ndim not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.ndim == unbatched + 1 else input.shape[0]


class _LazyConvNd(_LazyConvXdMixin):
    """``ConvNd``'s arguments but ``in_channels``, which the first input gives."""

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                         device=device, dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class _LazyConvTransposeNd(_LazyConvXdMixin):
    """``ConvTransposeNd``'s arguments but ``in_channels``, which the first input gives."""

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                         padding_mode, device=device, dtype=dtype)
        self._lazy_init(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConvNd, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` comes from the first input; ``Conv1d``'s other arguments."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` comes from the first input; ``Conv2d``'s other arguments."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` comes from the first input; ``Conv3d``'s other arguments."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` comes from the first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` comes from the first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` comes from the first input."""

    cls_to_become = ConvTranspose3d


class _LazyNormBase(LazyModuleMixin):
    """``num_features`` from dim 1 of the first input (torch's rule, also for unbatched input)."""

    num_features: int
    affine: bool
    track_running_stats: bool
    weight: Any
    bias: Any
    running_mean: Any
    running_var: Any

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=bias)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=_dtype.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Tensor) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with no_grad():
            for name in ("weight", "bias", "running_mean", "running_var"):
                value = getattr(self, name)
                if value is not None and is_lazy(value):
                    value.materialize((self.num_features,))
            self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """A ``BatchNorm1d`` whose ``num_features`` comes from the first input; its other arguments."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """A ``BatchNorm2d`` whose ``num_features`` comes from the first input; its other arguments."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """A ``BatchNorm3d`` whose ``num_features`` comes from the first input; its other arguments."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    """An ``InstanceNorm1d`` whose ``num_features`` comes from the first input.

    Unlike the eager layer, ``affine`` and ``track_running_stats`` default to ``True`` (as in torch).
    """

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    """An ``InstanceNorm2d`` whose ``num_features`` comes from the first input.

    Unlike the eager layer, ``affine`` and ``track_running_stats`` default to ``True`` (as in torch).
    """

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    """An ``InstanceNorm3d`` whose ``num_features`` comes from the first input.

    Unlike the eager layer, ``affine`` and ``track_running_stats`` default to ``True`` (as in torch).
    """

    cls_to_become = InstanceNorm3d
