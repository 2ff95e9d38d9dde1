"""Layers and containers; ``Module`` is the base class of all of them.

Each file's ``__all__`` is the one list of what it exports; this package
re-exports the union of them, as ``torch.nn.modules`` does.
"""

from mininn.nn.modules import (
    activation,
    adaptive,
    attention,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    loss_margin,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
)
from mininn.nn.modules.activation import *  # noqa: F403
from mininn.nn.modules.adaptive import *  # noqa: F403
from mininn.nn.modules.attention import *  # noqa: F403
from mininn.nn.modules.channelshuffle import *  # noqa: F403
from mininn.nn.modules.container import *  # noqa: F403
from mininn.nn.modules.conv import *  # noqa: F403
from mininn.nn.modules.distance import *  # noqa: F403
from mininn.nn.modules.dropout import *  # noqa: F403
from mininn.nn.modules.flatten import *  # noqa: F403
from mininn.nn.modules.fold import *  # noqa: F403
from mininn.nn.modules.instancenorm import *  # noqa: F403
from mininn.nn.modules.lazy import *  # noqa: F403
from mininn.nn.modules.linear import *  # noqa: F403
from mininn.nn.modules.loss import *  # noqa: F403
from mininn.nn.modules.loss_margin import *  # noqa: F403
from mininn.nn.modules.module import *  # noqa: F403
from mininn.nn.modules.normalization import *  # noqa: F403
from mininn.nn.modules.padding import *  # noqa: F403
from mininn.nn.modules.pixelshuffle import *  # noqa: F403
from mininn.nn.modules.pooling import *  # noqa: F403
from mininn.nn.modules.rnn import *  # noqa: F403
from mininn.nn.modules.sparse import *  # noqa: F403
from mininn.nn.modules.transformer import *  # noqa: F403
from mininn.nn.modules.upsampling import *  # noqa: F403

__all__: list[str] = []
__all__ += module.__all__
__all__ += activation.__all__
__all__ += adaptive.__all__
__all__ += attention.__all__
__all__ += channelshuffle.__all__
__all__ += container.__all__
__all__ += conv.__all__
__all__ += distance.__all__
__all__ += dropout.__all__
__all__ += flatten.__all__
__all__ += fold.__all__
__all__ += instancenorm.__all__
__all__ += lazy.__all__
__all__ += linear.__all__
__all__ += loss.__all__
__all__ += loss_margin.__all__
__all__ += normalization.__all__
__all__ += padding.__all__
__all__ += pixelshuffle.__all__
__all__ += pooling.__all__
__all__ += rnn.__all__
__all__ += sparse.__all__
__all__ += transformer.__all__
__all__ += upsampling.__all__
