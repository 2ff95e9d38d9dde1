"""``torch.amp``: ``autocast`` (see :mod:`mininn.amp.autocast_mode`: mininn has no mixed precision)."""

from __future__ import annotations

from mininn.amp.autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["autocast", "get_autocast_dtype", "is_autocast_enabled"]
