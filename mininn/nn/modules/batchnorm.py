"""``torch.nn.modules.batchnorm``: the batch norms under the module path that model files import them by.

``isinstance(m, nn.modules.batchnorm._BatchNorm)`` in weight-init loops is the common use; the classes
themselves live in ``normalization.py`` (and the lazy ones in ``lazy.py``).
"""

from __future__ import annotations

from mininn.nn.modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _NormBase,
)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "_BatchNorm", "_NormBase"]
