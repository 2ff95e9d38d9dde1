"""``mininn.nn.utils``: gradient clipping, parameter vectors, weight and spectral
normalization, parametrizations, and conv/batch-norm fusion."""

from mininn.nn.utils import parametrizations, parametrize, rnn, stateless
from mininn.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from mininn.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from mininn.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from mininn.nn.utils.init import skip_init
from mininn.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from mininn.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "get_total_norm",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "skip_init",
    "spectral_norm",
    "stateless",
    "vector_to_parameters",
    "weight_norm",
]
