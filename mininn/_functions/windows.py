"""Signal windows: ``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window`` and ``kaiser_window`` (periodic by default, as in torch).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._factories import _finish
from mininn._layout import check_dense

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]


def _window(values: Any, dtype: Any, device: Any, requires_grad: bool) -> Any:
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    return _finish(np.asarray(values, dtype=np.float64).astype(dt.np), device, requires_grad)


def _phase(window_length: int, periodic: bool) -> tuple[Any, int]:
    """``2 pi n / N`` for ``n < window_length`` (``N = length`` when periodic, ``length - 1`` otherwise)."""
    n = window_length if periodic else window_length - 1
    return 2 * math.pi * np.arange(window_length) / max(n, 1), n


def _check_length(name: str, window_length: int) -> None:
    if window_length < 0:
        raise RuntimeError(
            f"{name} requires non-negative window_length, got window_length={window_length}"
        )


def _cosine_window(name: str, coefs: tuple[float, ...], window_length: int, periodic: bool, dtype: Any,
                   device: Any, requires_grad: bool) -> Any:
    _check_length(name, window_length)
    if window_length == 1:
        return _window(np.ones(1), dtype, device, requires_grad)
    phase, _ = _phase(window_length, periodic)
    values = sum(c * np.cos(k * phase) * (-1) ** k for k, c in enumerate(coefs))
    return _window(values, dtype, device, requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                requires_grad: bool = False, layout: Any = None, pin_memory: bool | None = False) -> Any:
    """``0.5 - 0.5 cos(2 pi n / N)``."""
    check_dense(layout, pin_memory)
    return _cosine_window("hann_window", (0.5, 0.5), window_length, periodic, dtype, device, requires_grad)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, device: Any = None, requires_grad: bool = False,
                   layout: Any = None, pin_memory: bool | None = False) -> Any:
    """``alpha - beta cos(2 pi n / N)``."""
    check_dense(layout, pin_memory)
    return _cosine_window("hamming_window", (alpha, beta), window_length, periodic, dtype, device,
                          requires_grad)


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                    requires_grad: bool = False, layout: Any = None, pin_memory: bool | None = False) -> Any:
    """``0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``."""
    check_dense(layout, pin_memory)
    return _cosine_window("blackman_window", (0.42, 0.5, 0.08), window_length, periodic, dtype, device,
                          requires_grad)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                    requires_grad: bool = False, layout: Any = None, pin_memory: bool | None = False) -> Any:
    """The triangular window ``1 - |2n / N - 1|``."""
    check_dense(layout, pin_memory)
    _check_length("bartlett_window", window_length)
    if window_length == 1:
        return _window(np.ones(1), dtype, device, requires_grad)
    _, n = _phase(window_length, periodic)
    return _window(1 - np.abs(2 * np.arange(window_length) / n - 1), dtype, device, requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None,
                  device: Any = None, requires_grad: bool = False, layout: Any = None,
                  pin_memory: bool | None = False) -> Any:
    """``I0(beta sqrt(1 - (2n / N - 1)**2)) / I0(beta)``."""
    check_dense(layout, pin_memory)
    _check_length("kaiser_window", window_length)
    if window_length == 1:
        return _window(np.ones(1), dtype, device, requires_grad)
    _, n = _phase(window_length, periodic)
    ratio = 2 * np.arange(window_length) / n - 1
    return _window(np.i0(beta * np.sqrt(np.clip(1 - ratio * ratio, 0, None))) / np.i0(beta), dtype, device,
                   requires_grad)
