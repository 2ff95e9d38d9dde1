"""Shuffles: ``pixel_shuffle``, ``pixel_unshuffle``, ``channel_shuffle``, ``native_channel_shuffle``.

Each is a pure rearrangement, written as reshape -> permute -> reshape on
tensors, so autograd routes gradients back through the same views and every
dtype works.
"""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

from mininn.tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def _int_arg(fn: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{fn}(): argument '{name}' (position 2) must be int, not {type(value).__name__}")
    return value


def _check_pixel_input(fn: str, input: Tensor, name: str, factor: int) -> None:
    if input.ndim < 3:
        raise RuntimeError(
            f"{fn} expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
    if factor <= 0:
        raise RuntimeError(f"{fn} expects a positive {name}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C * r * r, H, W)`` -> ``(*, C, H * r, W * r)``: channel blocks become ``r x r`` pixel tiles."""
    r = _int_arg("pixel_shuffle", "upscale_factor", upscale_factor)
    _check_pixel_input("pixel_shuffle", input, "upscale_factor", r)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
            f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)  # (*, C, H, r, W, r)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H * r, W * r)`` -> ``(*, C * r * r, H, W)``: the inverse of :func:`pixel_shuffle`."""
    r = _int_arg("pixel_unshuffle", "downscale_factor", downscale_factor)
    _check_pixel_input("pixel_unshuffle", input, "downscale_factor", r)
    *lead, c, h, w = input.shape
    for what, n, dim in (("height", h, -2), ("width", w, -1)):
        if n % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but "
                f"input.size({dim})={n} is not divisible by {r}"
            )
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)  # (*, C, r, r, H, W)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``(N, C, *)`` across ``groups``: ``(g, C/g)`` -> ``(C/g, g)``."""
    g = _int_arg("channel_shuffle", "groups", groups)
    if input.ndim <= 2:
        raise RuntimeError(
            f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}"
        )
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{g}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {g} groups."
        )
    x = input.reshape(n, g, c // g, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """:func:`channel_shuffle` under torch's other name (here with a gradient, which torch's lacks)."""
    return channel_shuffle(input, groups)
