"""Tensor factories: ``tensor``, ``zeros``, ``randn``, ... and the global RNG."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._backend import array_module, as_device, to_device
from mininn.tensor import Size, Tensor

__all__ = [
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "linspace",
    "rand",
    "randn",
    "randint",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "manual_seed",
    "seed",
    "initial_seed",
    "default_generator",
]


class _Generator:
    """The global random source; ``manual_seed`` makes it reproducible."""

    def __init__(self, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self.manual_seed(seed)

    def manual_seed(self, seed: int) -> _Generator:
        self._seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def initial_seed(self) -> int:
        return self._seed


default_generator = _Generator(np.random.SeedSequence().entropy % (2**63))


def manual_seed(seed: int) -> _Generator:
    """Seed the global generator: the same seed gives the same numbers."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    s = int(np.random.SeedSequence().entropy % (2**63))
    default_generator.manual_seed(s)
    return s


def initial_seed() -> int:
    return default_generator.initial_seed()


def _size(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def _float_dtype(dtype: Any) -> _dtype.dtype:
    return _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)


def _finish(arr: np.ndarray, device: Any, requires_grad: bool) -> Tensor:
    dev = as_device(device)
    if dev.type != "cpu":
        arr = to_device(arr, dev)
    return Tensor(arr, requires_grad=requires_grad)


def _infer_dtype(data: Any) -> _dtype.dtype:
    arr = np.asarray(data)
    kind = arr.dtype.kind
    if kind == "b":
        return _dtype.bool
    if kind in "iu":
        return _dtype.int64 if kind == "i" or arr.dtype.itemsize < 8 else _dtype.int64
    if kind == "f":
        return _dtype.get_default_dtype()
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def tensor(
    data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A new tensor copying ``data`` (Python floats -> float32, ints -> int64)."""
    if isinstance(data, Tensor):
        arr = np.array(to_device(data._data, as_device("cpu")))
        dt = data.dtype if dtype is None else _dtype.as_dtype(dtype)
    elif isinstance(data, np.ndarray):
        arr = np.array(data)
        dt = _dtype.from_numpy_dtype(arr.dtype) if dtype is None else _dtype.as_dtype(dtype)
    else:
        if isinstance(data, Sequence) and any(isinstance(d, Tensor) for d in data):
            data = [np.asarray(d._data) if isinstance(d, Tensor) else d for d in data]
        dt = _infer_dtype(data) if dtype is None else _dtype.as_dtype(dtype)
        arr = np.array(data)
    return _finish(np.array(arr, dtype=dt.np, order="C"), device, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor`` but shares memory with a NumPy array when it can."""
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    if isinstance(data, np.ndarray) and device is None:
        dt = None if dtype is None else _dtype.as_dtype(dtype).np
        return Tensor(np.asarray(data, dtype=dt))
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array``."""
    _dtype.from_numpy_dtype(array.dtype)
    return Tensor(array)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    dt = _float_dtype(dtype)
    xp = array_module(as_device(device))
    return Tensor(xp.zeros(_size(size), dtype=dt.np), requires_grad=requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    dt = _float_dtype(dtype)
    xp = array_module(as_device(device))
    return Tensor(xp.ones(_size(size), dtype=dt.np), requires_grad=requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    dt = _float_dtype(dtype)
    xp = array_module(as_device(device))
    return Tensor(xp.empty(_size(size), dtype=dt.np), requires_grad=requires_grad)


def full(
    size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    if dtype is None:
        dt = _infer_dtype(fill_value)
    else:
        dt = _dtype.as_dtype(dtype)
    xp = array_module(as_device(device))
    return Tensor(xp.full(_size((size,)), fill_value, dtype=dt.np), requires_grad=requires_grad)


def arange(
    start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, end, step))
        dt = _dtype.get_default_dtype() if is_float else _dtype.int64
    else:
        dt = _dtype.as_dtype(dtype)
    arr = np.arange(start, end, step, dtype=np.float64 if dt.is_floating_point else None)
    return _finish(arr.astype(dt.np), device, requires_grad)


def linspace(
    start: float, end: float, steps: int, *, dtype: Any = None, device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    arr = np.linspace(start, end, steps).astype(_float_dtype(dtype).np)
    return _finish(arr, device, requires_grad)


def rand(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
         generator: _Generator | None = None) -> Tensor:
    gen = generator or default_generator
    dt = _float_dtype(dtype)
    with gen._lock:
        arr = gen.rng.random(_size(size), dtype=np.float64).astype(dt.np)
    return _finish(arr, device, requires_grad)


def randn(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
          generator: _Generator | None = None) -> Tensor:
    gen = generator or default_generator
    dt = _float_dtype(dtype)
    with gen._lock:
        arr = gen.rng.standard_normal(_size(size), dtype=np.float64).astype(dt.np)
    return _finish(arr, device, requires_grad)


def randint(low: int, high: Any = None, size: Any = None, *, dtype: Any = None,
            device: Any = None, generator: _Generator | None = None) -> Tensor:
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    gen = generator or default_generator
    dt = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    with gen._lock:
        arr = gen.rng.integers(low, high, size=_size((size,)), dtype=np.int64).astype(dt.np)
    return _finish(arr, device, False)


def _like(t: Tensor, dtype: Any, device: Any) -> tuple[tuple[int, ...], Any, Any]:
    return tuple(t.shape), (t.dtype if dtype is None else dtype), (t.device if device is None else device)


def zeros_like(t: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    s, d, dev = _like(t, dtype, device)
    return zeros(s, dtype=d, device=dev, requires_grad=requires_grad)


def ones_like(t: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    s, d, dev = _like(t, dtype, device)
    return ones(s, dtype=d, device=dev, requires_grad=requires_grad)


def empty_like(t: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    s, d, dev = _like(t, dtype, device)
    return empty(s, dtype=d, device=dev, requires_grad=requires_grad)


def full_like(t: Tensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    s, d, dev = _like(t, dtype, device)
    return full(s, fill_value, dtype=d, device=dev, requires_grad=requires_grad)


def rand_like(t: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    s, d, dev = _like(t, dtype, device)
    return rand(s, dtype=d, device=dev, requires_grad=requires_grad)


def randn_like(t: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    s, d, dev = _like(t, dtype, device)
    return randn(s, dtype=d, device=dev, requires_grad=requires_grad)
