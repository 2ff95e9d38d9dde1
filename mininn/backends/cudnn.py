"""``torch.backends.cudnn``: its flags (kept, without effect: mininn has no cuDNN) and queries."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

__all__ = ["allow_tf32", "benchmark", "deterministic", "enabled", "flags", "is_available", "version"]

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: mininn does not use cuDNN."""
    return False


def version() -> None:
    """None, as torch answers without cuDNN."""
    return None


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True, fp32_precision: str = "none",
          depthwise_kernel: str = "auto") -> Iterator[None]:
    """Set the four flags for a block and restore them after, as ``torch.backends.cudnn.flags``.

    ``benchmark_limit``, ``fp32_precision`` and ``depthwise_kernel`` tune cuDNN's own kernel search
    and are accepted as torch accepts them.
    """
    module = sys.modules[__name__]
    names = ("enabled", "benchmark", "deterministic", "allow_tf32")
    saved = {name: getattr(module, name) for name in names}
    for name, value in zip(names, (enabled, benchmark, deterministic, allow_tf32)):
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
