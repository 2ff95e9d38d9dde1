"""Normalisation layers: ``BatchNorm1d/2d/3d``, ``SyncBatchNorm``, ``LayerNorm``, ``GroupNorm``,
``RMSNorm``, ``LocalResponseNorm`` and ``CrossMapLRN2d`` (``InstanceNorm*d`` live in instancenorm.py)."""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

import numbers
from typing import Any

from mininn import _dtype
from mininn._factories import empty, ones, tensor, zeros
from mininn.autograd.grad_mode import no_grad
from mininn.nn import functional as F
from mininn.nn import init
from mininn.nn.functional.normalization import cross_map_lrn2d
from mininn.nn.modules._utils import register_weight_and_bias
from mininn.nn.modules.module import Module
from mininn.nn.parameter import Parameter
from mininn.tensor import Tensor

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "SyncBatchNorm",
    "LayerNorm",
    "GroupNorm",
    "RMSNorm",
    "LocalResponseNorm",
    "CrossMapLRN2d",
]


def _register_affine(module: Module, shape: Any, affine: bool, bias: bool, device: Any, dtype: Any) -> None:
    """``weight`` and ``bias`` of ``shape`` when ``affine`` (``bias`` only with ``bias``), else ``None``."""
    if affine:
        register_weight_and_bias(module, shape, shape, bias, device, dtype)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(weight: Parameter, bias: Parameter | None) -> None:
    """``weight`` 1 and ``bias`` (if any) 0."""
    init.ones_(weight)
    if bias is not None:
        init.zeros_(bias)


def _as_shape(normalized_shape: Any) -> tuple[int, ...]:
    """``normalized_shape`` as a tuple: an int ``n`` is ``(n,)``."""
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)  # type: ignore[return-value]
    return tuple(normalized_shape)


class _NormBase(Module):
    """Per-channel ``weight``/``bias`` and running statistics (torch's ``_NormBase``); no forward."""

    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, ``num_batches_tracked`` 0."""
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self) -> None:
        """Reset the running statistics; ``weight`` 1 and ``bias`` 0."""
        self.reset_running_stats()
        if self.affine:
            _reset_affine(self.weight, self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, local_metadata: dict[str, Any],
                              strict: bool, missing_keys: list[str], unexpected_keys: list[str],
                              error_msgs: list[str]) -> None:
        # Version 2 added num_batches_tracked: older checkpoints load with it at 0.
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                current = self.num_batches_tracked
                state_dict[key] = current if current is not None else tensor(0, dtype=_dtype.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class _BatchNorm(_NormBase):
    """Batch normalisation over dim 1 with running statistics (torch's ``_BatchNorm``)."""

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked._data += 1
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked._data)
        # batch statistics in training, and in eval when there are no running ones
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if track else None,
            self.running_var if track else None,
            self.weight,
            self.bias,
            use_batch,
            factor,
            self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` over all but dim 1.

    Args:
        num_features: ``C``.
        eps: added to the variance. Default 1e-5.
        momentum: running-statistics update factor; ``None`` means a cumulative average.
        affine: learn ``weight`` (1) and ``bias`` (0). Default ``True``.
        track_running_stats: keep ``running_mean``/``running_var``/``num_batches_tracked``
            buffers and use them in eval mode; otherwise they are ``None`` and
            batch statistics are always used.
        bias: with ``affine``, whether to learn ``bias``.
    """

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` over ``N``, ``H`` and ``W`` (see ``BatchNorm1d``)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of ``(N, C, D, H, W)`` over all but dim 1 (see ``BatchNorm1d``)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation of ``(N, C, *)`` whose statistics span a process group in torch.

    mininn runs in one process, as torch does when ``torch.distributed`` is not
    initialised: it then computes exactly what ``BatchNorm`` does. ``process_group``
    is kept for the signature and for ``convert_sync_batchnorm``.

    Args:
        num_features: ``C``.
        eps, momentum, affine, track_running_stats, bias: as in ``BatchNorm1d``.
        process_group: torch's process group; unused here.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group: Any = None,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input: Tensor) -> None:
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every batch-norm layer in it replaced by a ``SyncBatchNorm``.

        The new layers take over the old ones' parameters and buffers (the same
        tensors) and training mode; the other modules are kept and returned.
        """
        output = module
        if isinstance(module, _BatchNorm):
            output = cls(module.num_features, module.eps, module.momentum, module.affine,
                         module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    output.weight = module.weight
                    output.bias = module.bias
            output.running_mean = module.running_mean
            output.running_var = module.running_var
            output.num_batches_tracked = module.num_batches_tracked
            output.training = module.training
            if hasattr(module, "qconfig"):
                output.qconfig = module.qconfig
        for name, child in module.named_children():
            output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return output


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims with the biased variance.

    Args:
        normalized_shape: an int or a shape; the input's last dims must equal it.
        eps: added to the variance. Default 1e-5.
        elementwise_affine: learn ``weight`` (1) and ``bias`` (0) of shape ``normalized_shape``.
        bias: with ``elementwise_affine``, whether to learn ``bias``.
    """

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight`` 1 and ``bias`` 0."""
        if self.elementwise_affine:
            _reset_affine(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
            f"bias={self.bias is not None}"
        )


class GroupNorm(Module):
    """Normalise ``(N, C, *)`` over groups of ``C / num_groups`` channels (and all spatial dims).

    Raises:
        ValueError: ``num_channels`` not divisible by ``num_groups``.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, num_channels, affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight`` 1 and ``bias`` 0."""
        if self.affine:
            _reset_affine(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )




class RMSNorm(Module):
    """Divide by the root mean square over the trailing ``normalized_shape`` dims, then scale.

    Args:
        normalized_shape: an int or a shape; the input's last dims must equal it.
        eps: added to the mean square; ``None`` (default) means the machine
            epsilon of the input's dtype.
        elementwise_affine: learn ``weight`` (1) of shape ``normalized_shape``.
    """

    def __init__(self, normalized_shape: Any, eps: float | None = None, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``weight`` 1."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _ResponseNorm(Module):
    """Settings of a local response normalisation across ``size`` channels; no forward."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LocalResponseNorm(_ResponseNorm):
    """Normalise ``(N, C, *)`` across nearby channels (see ``F.local_response_norm``).

    Args:
        size: how many channels each window spans.
        alpha: multiplies the window's mean of squares. Default 1e-4.
        beta: the exponent. Default 0.75.
        k: added before the exponent. Default 1.
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class CrossMapLRN2d(_ResponseNorm):
    """torch's legacy cross-channel LRN of ``(N, C, H, W)``, with its window and its backward.

    Its window differs from ``LocalResponseNorm``'s (channel 0 stays in every
    window once reached) and its backward is not the exact derivative of its
    forward; both match torch.
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)  # torch's default k is the int 1 here

    def forward(self, input: Tensor) -> Tensor:
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)
