"""Gradient-recording switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``inference_mode``. Like torch, the switch is per thread, so a server thread
running inference under ``no_grad`` does not change a training thread.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


class _GradState(threading.local):
    enabled: bool = True


_state = _GradState()


def is_grad_enabled() -> bool:
    """Whether operations on this thread record an autograd graph."""
    return _state.enabled


class _GradModeContext:
    """Base: a context manager and decorator that sets grad mode on entry."""

    _mode: bool

    def __enter__(self) -> None:
        self._prev = _state.enabled
        _state.enabled = self._mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled = self._prev

    def __call__(self, func: F) -> F:
        mode_cls = type(self)
        args = self._clone_args()

        @functools.wraps(func)
        def wrapper(*a: Any, **kw: Any) -> Any:
            with mode_cls(*args):
                return func(*a, **kw)

        return wrapper  # type: ignore[return-value]

    def _clone_args(self) -> tuple[Any, ...]:
        return ()


class no_grad(_GradModeContext):  # noqa: N801 - torch's name
    """Disable graph recording: ``with mininn.no_grad():`` or ``@mininn.no_grad()``."""

    _mode = False


class enable_grad(_GradModeContext):  # noqa: N801 - torch's name
    """Enable graph recording inside a ``no_grad`` region."""

    _mode = True


class set_grad_enabled(_GradModeContext):  # noqa: N801 - torch's name
    """Set grad mode to ``mode``; takes effect at once, like torch, and also
    works as a context manager that restores the previous mode on exit."""

    def __init__(self, mode: bool) -> None:
        self._prev = _state.enabled
        self._mode = bool(mode)
        _state.enabled = self._mode

    def __enter__(self) -> None:
        pass

    def _clone_args(self) -> tuple[Any, ...]:
        _state.enabled = self._prev  # as a decorator it must not stay switched
        return (self._mode,)


class inference_mode(_GradModeContext):  # noqa: N801 - torch's name
    """Like ``no_grad`` (mininn has no version counters to skip)."""

    def __init__(self, mode: bool = True) -> None:
        self._mode = not mode

    def _clone_args(self) -> tuple[Any, ...]:
        return (not self._mode,)
