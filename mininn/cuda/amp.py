"""``torch.cuda.amp``: the deprecated spelling of ``torch.amp.autocast("cuda")``."""

from __future__ import annotations

import warnings
from typing import Any

from mininn import _dtype
from mininn.amp.autocast_mode import autocast as _autocast

__all__ = ["autocast"]


class autocast(_autocast):  # noqa: N801 - torch's name
    """``torch.cuda.amp.autocast(enabled=True, dtype=float16, cache_enabled=True)``, with torch's warning."""

    def __init__(self, enabled: bool = True, dtype: Any = _dtype.float16, cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
