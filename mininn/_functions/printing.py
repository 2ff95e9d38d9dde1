"""``repr`` of a tensor in torch's style: ``tensor([1.0000, 2.5000], requires_grad=True)``.

Floats print like torch: whole numbers as ``1.``, otherwise 4 decimals, or
scientific notation when the magnitudes span a wide range; elements are padded
to one width, long tensors are summarised with ``...``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._backend import as_device, to_device


def _float_formatter(arr: np.ndarray) -> Callable[[Any], str]:
    finite = arr[np.isfinite(arr)]
    nonzero = np.abs(finite[finite != 0])
    whole = bool(np.all(finite == np.ceil(finite)))
    big = nonzero.size > 0 and nonzero.max() > 1e8
    wide = nonzero.size > 0 and nonzero.max() / nonzero.min() > 1000
    if whole and not (big or wide):
        def fmt(x: Any) -> str:
            return f"{x:.0f}."
    elif nonzero.size and (big or wide or nonzero.min() < 1e-4):
        def fmt(x: Any) -> str:
            return f"{x:.4e}"
    else:
        def fmt(x: Any) -> str:
            return f"{x:.4f}"

    def safe(x: Any) -> str:
        return fmt(x) if np.isfinite(x) else str(float(x))

    shown = _sample(arr)
    width = max((len(fmt(x)) for x in shown[np.isfinite(shown)]), default=0)
    return lambda x: safe(x).rjust(width)


def _complex_formatter(arr: np.ndarray) -> Callable[[Any], str]:
    """torch's complex elements: the real parts formatted together, then the signed imaginary parts."""
    real = _float_formatter(arr.real.astype(np.float64))
    imag = _float_formatter(np.abs(arr.imag).astype(np.float64))

    def fmt(x: Any) -> str:
        sign = "-" if np.signbit(x.imag) else "+"
        return f"{real(x.real)}{sign}{imag(abs(x.imag)).strip()}j"

    return fmt


def _sample(arr: np.ndarray) -> np.ndarray:
    """The elements that get printed (all of them unless the tensor is summarised)."""
    flat = arr.reshape(-1)
    if flat.size <= 1000:
        return flat
    return np.concatenate([flat[:3], flat[-3:], [flat.max(), flat.min()]])


def _body(arr: np.ndarray) -> str:
    if arr.size == 0:
        return "[]"
    kind = arr.dtype.kind
    formatter: dict[str, Callable[[Any], str]]
    if kind == "b":
        width = 5 if not arr.all() else 4
        formatter = {"bool": lambda x: ("True" if x else "False").rjust(width)}
    elif kind in "iu":
        int_width = max(len(str(x)) for x in _sample(arr))
        formatter = {"int": lambda x: str(x).rjust(int_width)}
    elif kind == "c":
        formatter = {"complex_kind": _complex_formatter(arr)}
    else:
        arr = arr.astype(np.float64)
        formatter = {"float_kind": _float_formatter(arr)}
    return np.array2string(
        arr,
        separator=", ",
        prefix="tensor(",
        formatter=formatter,
        threshold=1000,
        edgeitems=3,
        max_line_width=80,
    ).replace(", ..., ", ",  ..., ")  # torch's summary marker is " ..."


def format_tensor(t: Any) -> str:
    """torch-style ``repr`` of tensor ``t``."""
    arr = to_device(t._data, as_device("cpu"))
    extras = []
    if arr.size == 0 and arr.ndim > 1:
        extras.append(f"size={tuple(arr.shape)}")
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    dt = t.dtype
    implicit = (_dtype.get_default_dtype(), _dtype._COMPLEX.get(_dtype.get_default_dtype()), _dtype.int64,
                _dtype.bool)
    if dt not in implicit or (arr.size == 0 and dt is not _dtype.get_default_dtype()):
        extras.append(f"dtype={dt}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + _body(arr) + "".join(", " + e for e in extras) + ")"
