"""``mininn.nn.functional``: the stateless ops behind the layers (torch's ``torch.nn.functional``).

``import mininn.nn.functional as F`` then ``F.relu(x)``, ``F.conv2d(x, w)``, ...
"""

from mininn.nn.functional.activation import (
    elu,
    gelu,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    prelu,
    relu,
    relu6,
    sigmoid,
    silu,
    softmax,
    softplus,
    tanh,
)
from mininn.nn.functional.attention import multi_head_attention_forward, scaled_dot_product_attention
from mininn.nn.functional.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d
from mininn.nn.functional.dropout import dropout
from mininn.nn.functional.linear import linear
from mininn.nn.functional.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from mininn.nn.functional.normalization import batch_norm, group_norm, layer_norm, normalize
from mininn.nn.functional.padding import pad
from mininn.nn.functional.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from mininn.nn.functional.sparse import embedding

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv1d",
    "conv2d",
    "conv_transpose1d",
    "conv_transpose2d",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "group_norm",
    "hardtanh",
    "l1_loss",
    "layer_norm",
    "leaky_relu",
    "linear",
    "log_softmax",
    "logsigmoid",
    "max_pool1d",
    "max_pool2d",
    "mse_loss",
    "multi_head_attention_forward",
    "nll_loss",
    "normalize",
    "pad",
    "prelu",
    "relu",
    "relu6",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "tanh",
]
