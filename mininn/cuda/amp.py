"""``torch.cuda.amp``, the older spelling of :mod:`mininn.amp` (``device_type`` is ``"cuda"``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mininn import amp as _amp

__all__ = ["autocast", "custom_bwd", "custom_fwd"]


class autocast(_amp.autocast):  # noqa: N801 - torch's name
    """``torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)``; only disabled."""

    def __init__(self, enabled: bool = True, dtype: Any = None, cache_enabled: bool = True) -> None:
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def custom_fwd(fwd: Callable[..., Any] | None = None, *, cast_inputs: Any = None) -> Any:
    """``torch.cuda.amp.custom_fwd``: the function itself (autocast is never on)."""
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable[..., Any] | None = None) -> Any:
    """``torch.cuda.amp.custom_bwd``: the function itself (autocast is never on)."""
    return _amp.custom_bwd(bwd, device_type="cuda")
