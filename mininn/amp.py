"""``torch.amp`` as model files use it: ``custom_fwd``/``custom_bwd`` and a disabled ``autocast``.

mininn never runs automatic mixed precision: autocast is never on, so the two
decorators that custom autograd Functions carry (``@torch.amp.custom_fwd(device_type=
"cuda")``) call the function unchanged, as torch does when autocast is off. A
model that turns autocast *on* is refused, since its numbers would differ from
torch's: cast the model explicitly instead (``model.half()``, ``.to(dtype)``).
``autocast(enabled=False)``, the usual "run this part in float32" block, is a no-op.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "is_autocast_enabled"]


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Always False: mininn has no autocast."""
    return False


def is_autocast_available(device_type: str) -> bool:
    """False: no device of mininn's runs autocast."""
    return False


class autocast:  # noqa: N801 - torch's name
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``; only disabled.

    Raises:
        NotImplementedError: ``enabled=True`` (mininn does not run mixed precision).
    """

    def __init__(self, device_type: str = "cuda", dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if enabled:
            raise NotImplementedError(
                f"autocast(device_type={device_type!r}) is not available in mininn: it serves models in "
                "one dtype. Remove the autocast block, or cast the model explicitly (model.half(), "
                ".to(dtype)); autocast(enabled=False) is accepted")
        self.device_type, self.fast_dtype, self.enabled = device_type, dtype, False

    def __enter__(self) -> autocast:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return run


def custom_fwd(fwd: Callable[..., Any] | None = None, *, device_type: str,
               cast_inputs: Any = None) -> Any:
    """torch's decorator for a custom Function's ``forward``: with autocast off, the function itself."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd: Callable[..., Any] | None = None, *, device_type: str) -> Any:
    """torch's decorator for a custom Function's ``backward``: with autocast off, the function itself."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd
