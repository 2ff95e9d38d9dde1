"""``torch.backends.cudnn``: cuDNN's switches; mininn has no cuDNN, so ``is_available()`` is False.

``enabled``, ``benchmark``, ``deterministic`` and ``allow_tf32`` keep what a file sets (a bool, as
torch checks); they change nothing in mininn's kernels.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

# also the flags enabled, benchmark, deterministic and allow_tf32 (attributes of the module's class)
__all__ = ["benchmark_limit", "is_available", "version", "flags"]

# flag -> the name torch's message gives its setter
_SETTERS = {"enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
            "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cublas"}
_FLAGS: dict[str, bool] = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True}
benchmark_limit: int | None = None


def is_available() -> bool:
    """Whether cuDNN can be used: never in mininn."""
    return False


def version() -> int | None:
    """cuDNN's version: None, as torch answers without cuDNN."""
    return None


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
          allow_tf32: bool = True) -> Iterator[None]:
    """Set the four flags for a block, then restore them (torch's ``cudnn.flags``)."""
    saved = dict(_FLAGS)
    module = sys.modules[__name__]
    for name, value in zip(_SETTERS, (enabled, benchmark, deterministic, allow_tf32)):
        setattr(module, name, value)
    try:
        yield
    finally:
        _FLAGS.update(saved)


class _CudnnModule(types.ModuleType):
    """This module, with the four flags as checked attributes."""

    def __getattr__(self, name: str) -> Any:
        if name in _FLAGS:
            return _FLAGS[name]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SETTERS:
            if not isinstance(value, bool):
                raise RuntimeError(f"{_SETTERS[name]} expects a bool, but got {type(value).__name__}")
            _FLAGS[name] = value
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _CudnnModule
