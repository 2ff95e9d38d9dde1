"""Instance normalisation layers: ``InstanceNorm1d``, ``InstanceNorm2d``, ``InstanceNorm3d``.

Each channel of each sample is normalised over its spatial dims. Unlike
batch norm, ``affine`` and ``track_running_stats`` default to ``False``, an
input without a batch dim is accepted, and ``num_features`` is only checked
when there are per-channel parameters to match.
"""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

import warnings
from typing import Any

from mininn.nn import functional as F
from mininn.nn.modules._utils import check_optional_batch_dim
from mininn.nn.modules.normalization import _NormBase
from mininn.tensor import Tensor

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    """Instance normalisation of ``(N, C, *spatial)`` or ``(C, *spatial)`` with ``spatial_dims`` dims."""

    spatial_dims = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        check_optional_batch_dim(input, self.spatial_dims + 1)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        dim = input.dim() - self.spatial_dims - 1  # the channel dim
        if input.shape[dim] != self.num_features:
            if self.affine:
                raise ValueError(
                    f"expected input's size at dim={dim} to match num_features ({self.num_features}), "
                    f"but got: {input.shape[dim]}."
                )
            warnings.warn(
                f"input's size at dim={dim} does not match num_features. You can silence this warning "
                "by not passing in num_features, which is not used because affine=False",
                stacklevel=2,
            )
        if dim == 0:  # no batch dim: normalise as a batch of one
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)

    def _apply_instance_norm(self, input: Tensor) -> Tensor:
        return F.instance_norm(
            input,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, local_metadata: dict[str, Any],
                              strict: bool, missing_keys: list[str], unexpected_keys: list[str],
                              error_msgs: list[str]) -> None:
        # Checkpoints without a version come from before running stats became opt-in: refuse theirs.
        if local_metadata.get("version", None) is None and not self.track_running_stats:
            keys = [prefix + name for name in ("running_mean", "running_var") if prefix + name in state_dict]
            if keys:
                name = type(self).__name__
                listed = " and ".join(f'"{k}"' for k in keys)
                error_msgs.append(
                    f"Unexpected running stats buffer(s) {listed} for {name} with track_running_stats=False. "
                    f"If state_dict is a checkpoint saved before 0.4.0, this may be expected because {name} "
                    "does not track running stats by default since 0.4.0. Please remove these keys from "
                    "state_dict. If the running stats are actually needed, instead set "
                    f"track_running_stats=True in {name} to enable them. See the documentation of {name} "
                    "for details."
                )
                for key in keys:
                    state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class InstanceNorm1d(_InstanceNorm):
    """Normalise each channel of ``(N, C, L)`` or ``(C, L)`` over ``L``.

    Args:
        num_features: ``C``.
        eps: added to the variance. Default 1e-5.
        momentum: running-statistics update factor (``None`` leaves them unchanged). Default 0.1.
        affine: learn per-channel ``weight`` (1) and ``bias`` (0). Default ``False``.
        track_running_stats: keep running mean and variance and normalise by them in
            eval mode. Default ``False``.
        bias: with ``affine``, whether to learn ``bias``.
    """

    spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Normalise each channel of ``(N, C, H, W)`` or ``(C, H, W)`` over ``H, W`` (see ``InstanceNorm1d``)."""

    spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Normalise each channel of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` over ``D, H, W``."""

    spatial_dims = 3
