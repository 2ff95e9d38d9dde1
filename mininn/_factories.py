"""Tensor factories: ``tensor``, ``zeros``, ``randn``, ... and the global RNG."""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mininn import _dtype
from mininn._backend import array_module, as_device, to_device
from mininn._functions._util import torch_type_name
from mininn._functions.inplace import Fill, _tracked, check_leaf, write
from mininn._functions.inplace_view import rebase
from mininn._functions.shape import shape_args
from mininn._layout import check_dense
from mininn._tensor_core import Size, TensorCore
from mininn.autograd.graph import wrap

if TYPE_CHECKING:
    from mininn.tensor import Tensor

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
    "Generator",
    "fill_normal_",
    "fill_uniform_",
    "fill_bernoulli_",
    "fill_random_",
    "fill_exponential_",
]


class Generator:
    """A random source (NumPy's PCG64); ``manual_seed`` makes it reproducible.

    The sequences differ from torch's: the same seed gives the same numbers in
    mininn, not the numbers torch would give.
    """

    def __init__(self, device: Any = "cpu") -> None:
        self._lock = threading.Lock()
        self.device = as_device(device)
        self.manual_seed(int(np.random.SeedSequence().entropy % (2**63)))

    def manual_seed(self, seed: int) -> Generator:
        """Restart the sequence from ``seed``."""
        self._seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def initial_seed(self) -> int:
        """The seed the sequence started from."""
        return self._seed

    def seed(self) -> int:
        """Reseed from fresh entropy and return the new seed."""
        s = int(np.random.SeedSequence().entropy % (2**63))
        self.manual_seed(s)
        return s

    def get_state(self) -> dict[str, Any]:
        """The generator's state (restore it with ``set_state``)."""
        return self.rng.bit_generator.state

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore a state from ``get_state``."""
        self.rng.bit_generator.state = state





default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the global generator: the same seed gives the same numbers."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Reseed the global generator from fresh entropy and return the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed of the global generator."""
    return default_generator.initial_seed()


def get_rng_state() -> dict[str, Any]:
    """The global generator's state."""
    return default_generator.get_state()


def set_rng_state(new_state: dict[str, Any]) -> None:
    """Restore the global generator's state."""
    default_generator.set_state(new_state)


def _size(size: tuple[Any, ...]) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def _sizes(fn: str, args: tuple[Any, ...], size: Any) -> tuple[int, ...]:
    """``*size`` or torch's ``size=`` keyword (``torch.zeros(size=(2, 3))``), never both."""
    if size is None:
        return _size(args)
    if args:
        raise TypeError(f"{fn}() got multiple values for argument 'size'")
    return _size((size,))


def _float_dtype(dtype: Any) -> _dtype.dtype:
    return _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)


def _finish(arr: np.ndarray, device: Any, requires_grad: bool) -> Tensor:
    dev = as_device(device)
    if dev.type != "cpu":
        arr = to_device(arr, dev)
    return wrap(arr, requires_grad)


def _infer_dtype(data: Any) -> _dtype.dtype:
    arr = np.asarray(data)
    kind = arr.dtype.kind
    if kind == "b":
        return _dtype.bool
    if kind in "iu":
        return _dtype.int64 if kind == "i" or arr.dtype.itemsize < 8 else _dtype.int64
    if kind == "f":
        return _dtype.get_default_dtype()
    if kind == "c":
        return _dtype._COMPLEX.get(_dtype.get_default_dtype(), _dtype.complex64)
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def tensor(
    data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A new tensor copying ``data`` (Python floats -> float32, ints -> int64)."""
    check_dense(None, pin_memory)
    if isinstance(data, TensorCore):
        arr = np.array(to_device(data._data, as_device("cpu")))
        dt = data.dtype if dtype is None else _dtype.as_dtype(dtype)
    elif isinstance(data, (np.ndarray, np.generic)):  # NumPy arrays and scalars keep their dtype
        arr = np.array(data)
        dt = _dtype.from_numpy_dtype(arr.dtype) if dtype is None else _dtype.as_dtype(dtype)
    else:
        if isinstance(data, Sequence) and any(isinstance(d, TensorCore) for d in data):
            data = [np.asarray(d._data) if isinstance(d, TensorCore) else d for d in data]
        dt = _infer_dtype(data) if dtype is None else _dtype.as_dtype(dtype)
        arr = np.array(data)
    return _finish(np.array(arr, dtype=dt.np, order="C"), device, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``data`` as a tensor, without a copy where torch makes none.

    A tensor already of ``dtype`` on ``device`` is returned as it is; a NumPy
    array is shared (writes through either show in the other) when it stays on
    the CPU and ``dtype`` is None or its own dtype. Anything else is copied,
    as :func:`tensor` copies.
    """
    dev = None if device is None else as_device(device)
    dt = None if dtype is None else _dtype.as_dtype(dtype)
    if isinstance(data, TensorCore):
        if (dt is None or data.dtype is dt) and (dev is None or _on(data.device, dev)):
            return data  # type: ignore[return-value]
    elif isinstance(data, np.ndarray) and (dev is None or dev.type == "cpu"):
        if dt is None or data.dtype == dt.np:
            return from_numpy(data)
        return wrap(data.astype(dt.np))  # one copy, in the new dtype
    return tensor(data, dtype=dt, device=dev)


def _on(have: Any, want: Any) -> bool:
    """Whether a tensor on ``have`` is on ``want`` (``cuda`` without an index: any CUDA device)."""
    return have.type == want.type and (want.index is None or have.index == want.index)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array`` (writes through either show in the other).

    Raises:
        TypeError: ``array`` is not a NumPy array (torch's message), or its dtype
            has no mininn dtype.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _dtype.from_numpy_dtype(array.dtype)  # unsupported dtypes fail here, naming the choices
    return wrap(array)


def zeros(*sizes: Any, size: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
          pin_memory: bool | None = False, requires_grad: bool = False) -> Tensor:
    check_dense(layout, pin_memory)
    dt = _float_dtype(dtype)
    xp = array_module(as_device(device))
    return wrap(xp.zeros(_sizes("zeros", sizes, size), dtype=dt.np), requires_grad)


def ones(*sizes: Any, size: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
          pin_memory: bool | None = False, requires_grad: bool = False) -> Tensor:
    check_dense(layout, pin_memory)
    dt = _float_dtype(dtype)
    xp = array_module(as_device(device))
    return wrap(xp.ones(_sizes("ones", sizes, size), dtype=dt.np), requires_grad)


def empty(*sizes: Any, size: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
          pin_memory: bool | None = False, requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """An uninitialised tensor; ``memory_format`` only orders strides in torch, the values are the same."""
    check_dense(layout, pin_memory)
    dt = _float_dtype(dtype)
    xp = array_module(as_device(device))
    return wrap(xp.empty(_sizes("empty", sizes, size), dtype=dt.np), requires_grad)


def full(
    size: Any, fill_value: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
    pin_memory: bool | None = False, requires_grad: bool = False,
) -> Tensor:
    check_dense(layout, pin_memory)
    if dtype is None:
        dt = _infer_dtype(fill_value)
    else:
        dt = _dtype.as_dtype(dtype)
    xp = array_module(as_device(device))
    return wrap(xp.full(_size((size,)), fill_value, dtype=dt.np), requires_grad)


def arange(
    start: Any = 0, end: Any = None, step: Any = 1, *, dtype: Any = None, layout: Any = None,
    device: Any = None, pin_memory: bool | None = False, requires_grad: bool = False,
) -> Tensor:
    check_dense(layout, pin_memory)
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, end, step))
        dt = _dtype.get_default_dtype() if is_float else _dtype.int64
    else:
        dt = _dtype.as_dtype(dtype)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    arr = np.arange(start, end, step, dtype=np.float64 if dt.is_floating_point else None)
    return _finish(arr.astype(dt.np), device, requires_grad)


def linspace(
    start: float, end: float, steps: int, *, dtype: Any = None, layout: Any = None, device: Any = None,
    pin_memory: bool | None = False, requires_grad: bool = False,
) -> Tensor:
    check_dense(layout, pin_memory)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    arr = np.linspace(start, end, steps).astype(_float_dtype(dtype).np)
    return _finish(arr, device, requires_grad)


def rand(*sizes: Any, size: Any = None, generator: Generator | None = None, dtype: Any = None,
         layout: Any = None, device: Any = None, pin_memory: bool | None = False,
         requires_grad: bool = False) -> Tensor:
    check_dense(layout, pin_memory)
    return _float_samples("random", _sizes("rand", sizes, size), dtype, device, requires_grad, generator)


def randn(*sizes: Any, size: Any = None, generator: Generator | None = None, dtype: Any = None,
          layout: Any = None, device: Any = None, pin_memory: bool | None = False,
          requires_grad: bool = False) -> Tensor:
    check_dense(layout, pin_memory)
    shape = _sizes("randn", sizes, size)
    return _float_samples("standard_normal", shape, dtype, device, requires_grad, generator)


def _float_samples(method: str, size: tuple[Any, ...], dtype: Any, device: Any, requires_grad: bool,
                   generator: Generator | None) -> Tensor:
    """Float64 samples of the NumPy generator's ``method`` (``random``, ...), cast to the float ``dtype``."""
    gen = generator or default_generator
    dt = _float_dtype(dtype)
    with gen._lock:
        arr = getattr(gen.rng, method)(_size(size), dtype=np.float64).astype(dt.np)
    return _finish(arr, device, requires_grad)


def randint(low: int, high: Any = None, size: Any = None, *, generator: Generator | None = None,
            dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: bool | None = False,
            requires_grad: bool = False) -> Tensor:
    check_dense(layout, pin_memory)
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    gen = generator or default_generator
    dt = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    with gen._lock:
        arr = gen.rng.integers(low, high, size=_size((size,)), dtype=np.int64).astype(dt.np)
    return _finish(arr, device, requires_grad)


def _like(t: Tensor, dtype: Any, device: Any) -> tuple[tuple[int, ...], Any, Any]:
    return tuple(t.shape), (t.dtype if dtype is None else dtype), (t.device if device is None else device)


def _like_factory(factory: Callable[..., Tensor], name: str) -> Callable[..., Tensor]:
    """``<factory>_like``: ``factory`` with ``input``'s shape, and its dtype and device unless given."""

    def like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: bool | None = False, requires_grad: bool = False,
             memory_format: Any = None) -> Tensor:
        check_dense(layout, pin_memory)
        s, d, dev = _like(input, dtype, device)
        return factory(s, dtype=d, device=dev, requires_grad=requires_grad)

    return _named(like, name, factory)


def _random_like_factory(factory: Callable[..., Tensor], name: str) -> Callable[..., Tensor]:
    """``rand_like``/``randn_like``: as ``_like_factory``, drawing from ``generator`` when given."""

    def like(input: Tensor, *, generator: Generator | None = None, dtype: Any = None, layout: Any = None,
             device: Any = None, pin_memory: bool | None = False, requires_grad: bool = False,
             memory_format: Any = None) -> Tensor:
        check_dense(layout, pin_memory)
        s, d, dev = _like(input, dtype, device)
        return factory(s, generator=generator, dtype=d, device=dev, requires_grad=requires_grad)

    return _named(like, name, factory)


def _named(like: Callable[..., Tensor], name: str, factory: Callable[..., Tensor]) -> Callable[..., Tensor]:
    like.__name__ = like.__qualname__ = name
    like.__doc__ = (f"``{factory.__name__}`` with ``input``'s shape, and its dtype and device unless "
                    "given (``memory_format`` only orders strides in torch: the values are the same).")
    return like


zeros_like = _like_factory(zeros, "zeros_like")
ones_like = _like_factory(ones, "ones_like")
empty_like = _like_factory(empty, "empty_like")
rand_like = _random_like_factory(rand, "rand_like")
randn_like = _random_like_factory(randn, "randn_like")


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, layout: Any = None,
              device: Any = None, pin_memory: bool | None = False, requires_grad: bool = False,
              memory_format: Any = None) -> Tensor:
    check_dense(layout, pin_memory)
    s, d, dev = _like(input, dtype, device)
    return full(s, fill_value, dtype=d, device=dev, requires_grad=requires_grad)


# ---- Tensor.new_* (this tensor's dtype and device by default) ------------------------------
def new_tensor(self, data: Any, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, pin_memory: bool = False) -> Any:
    """A new tensor from ``data`` with this tensor's dtype and device by default."""
    check_dense(None, pin_memory)
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                  requires_grad=requires_grad)


def new_zeros(self, *sizes: Any, size: Any = None, dtype: Any = None, layout: Any = None,
              device: Any = None, pin_memory: bool | None = False, requires_grad: bool = False) -> Any:
    """Zeros with this tensor's dtype and device by default."""
    check_dense(layout, pin_memory)
    return _new(self, _sizes("new_zeros", sizes, size), 0, dtype, device, requires_grad)


def new_ones(self, *sizes: Any, size: Any = None, dtype: Any = None, layout: Any = None,
             device: Any = None, pin_memory: bool | None = False, requires_grad: bool = False) -> Any:
    """Ones with this tensor's dtype and device by default."""
    check_dense(layout, pin_memory)
    return _new(self, _sizes("new_ones", sizes, size), 1, dtype, device, requires_grad)


def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: bool | None = False, requires_grad: bool = False) -> Any:
    """``fill_value`` everywhere, with this tensor's dtype and device by default."""
    check_dense(layout, pin_memory)
    return _new(self, (size,), fill_value, dtype, device, requires_grad)


def new_empty(self, *sizes: Any, size: Any = None, dtype: Any = None, layout: Any = None,
              device: Any = None, pin_memory: bool | None = False, requires_grad: bool = False) -> Any:
    """An uninitialised tensor with this tensor's dtype and device by default."""
    check_dense(layout, pin_memory)
    return _new(self, _sizes("new_empty", sizes, size), 0, dtype, device, requires_grad)


def _new(self, size: Any, fill: Any, dtype: Any, device: Any, requires_grad: bool) -> Any:
    return full(shape_args(size), fill, dtype=dtype or self.dtype,
                device=device or self.device, requires_grad=requires_grad)


# ---- in-place random fills (Tensor.normal_ and friends, used by nn.init) ----------------


def _fill(t: Tensor, sample: Any, generator: Generator | None) -> Tensor:
    tracked = _tracked(t)
    if tracked:
        check_leaf(t)
    gen = generator or default_generator
    with gen._lock:
        arr = sample(gen.rng, t._data.shape)
    values = to_device(np.asarray(arr).astype(t._data.dtype), t.device)
    if tracked:  # recorded as a fill: no gradient reaches what was overwritten (and a view's base)
        rebase(t, Fill.apply(t, values))
        return t
    return write(t, values)


def _check_floating(t: Tensor, kernel: str) -> None:
    if not t.dtype.is_floating_point:
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{torch_type_name(t._data.dtype)}'"
        )


def fill_normal_(t: Tensor, mean: float, std: float, generator: Generator | None) -> Tensor:
    """Fill ``t`` with samples of N(mean, std**2)."""
    _check_floating(t, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    return _fill(t, lambda rng, s: rng.normal(mean, std, s), generator)


def fill_uniform_(t: Tensor, a: float, b: float, generator: Generator | None) -> Tensor:
    """Fill ``t`` with samples of U(a, b)."""
    _check_floating(t, "check_uniform_bounds")
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}"
        )
    return _fill(t, lambda rng, s: rng.uniform(a, b, s), generator)


def fill_bernoulli_(t: Tensor, p: Any, generator: Generator | None) -> Tensor:
    """Fill ``t`` with 1 with probability ``p`` (a number or a tensor), else 0."""
    probs = p._data if isinstance(p, TensorCore) else p
    if np.any((np.asarray(probs) < 0) | (np.asarray(probs) > 1)):
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(t, lambda rng, s: rng.random(s) < probs, generator)


def fill_random_(t: Tensor, low: int, high: int | None, generator: Generator | None) -> Tensor:
    """Fill ``t`` with integers in ``[low, high)`` (``[0, low)`` when ``high`` is None)."""
    if high is None:
        low, high = 0, low
    return _fill(t, lambda rng, s: rng.integers(low, high, s), generator)


def fill_exponential_(t: Tensor, lambd: float, generator: Generator | None) -> Tensor:
    """Fill ``t`` with samples of Exp(lambd)."""
    return _fill(t, lambda rng, s: rng.exponential(1 / lambd, s), generator)


def bernoulli(input: Tensor, p: Any = None, *, generator: Generator | None = None) -> Tensor:
    """1 with probability ``input`` (elementwise), else 0, in ``input``'s dtype."""
    out = wrap(np.empty_like(input._data))
    return fill_bernoulli_(out, input if p is None else p, generator)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Sample category indices from the rows of ``input`` (non-negative weights), vectorised over rows:
    inverse-CDF lookups with replacement, Gumbel top-k without."""
    probs = _check_multinomial(input, num_samples, replacement)
    rows = probs.reshape(-1, probs.shape[-1])
    gen = generator or default_generator
    with gen._lock:
        if replacement:
            cdf = np.cumsum(rows / rows.sum(-1, keepdims=True), axis=-1)
            u = gen.rng.random((rows.shape[0], num_samples))
            out = (u[:, :, None] >= cdf[:, None, :-1]).sum(-1)
        else:
            with np.errstate(divide="ignore"):
                keys = np.log(rows) + gen.rng.gumbel(size=rows.shape)
            out = np.argsort(-keys, axis=-1, kind="stable")[:, :num_samples]
    return wrap(out.astype(np.int64).reshape(probs.shape[:-1] + (num_samples,)))


def _check_multinomial(input: Tensor, num_samples: int, replacement: bool) -> np.ndarray:
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            "multinomial only supports floating-point dtypes for input, got: "
            f"{torch_type_name(input._data.dtype)}"
        )
    probs = np.asarray(to_device(input._data, as_device("cpu")), dtype=np.float64)
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > probs.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if not np.all(np.isfinite(probs)) or np.any(probs < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(probs.sum(-1) <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    return probs


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, layout: Any = None,
             device: Any = None, pin_memory: bool | None = False, requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0..n-1``."""
    check_dense(layout, pin_memory)
    gen = generator or default_generator
    dt = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    with gen._lock:
        arr = gen.rng.permutation(n).astype(dt.np)
    return _finish(arr, device, requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None, layout: Any = None, device: Any = None,
        pin_memory: bool | None = False, requires_grad: bool = False) -> Tensor:
    """The identity matrix (``n`` x ``m``)."""
    check_dense(layout, pin_memory)
    for name, value in (("n", n), ("m", m)):
        if value is not None and value < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {value}")
    arr = np.eye(n, n if m is None else m, dtype=_float_dtype(dtype).np)
    return _finish(arr, device, requires_grad)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: bool | None = False,
           requires_grad: bool = False) -> Tensor:
    """Samples of N(mean, std**2): elementwise for tensor ``mean``/``std`` (broadcast), or of ``size``."""
    check_dense(layout, pin_memory)
    m = mean._data if isinstance(mean, TensorCore) else mean
    s = std._data if isinstance(std, TensorCore) else std
    if np.any(np.asarray(s) < 0):
        raise RuntimeError(f"normal expects std >= 0.0, but found std {np.min(s):g}")
    if isinstance(mean, TensorCore) or isinstance(std, TensorCore):
        ref = mean if isinstance(mean, TensorCore) else std
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        dt = ref.dtype
    else:
        shape = _size((size,)) if size is not None else ()
        dt = _float_dtype(dtype)
    gen = generator or default_generator
    with gen._lock:
        arr = gen.rng.standard_normal(shape) * s + m
    return _finish(np.asarray(arr).astype(dt.np), device, requires_grad)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of Poisson(rate) for each rate in ``input``, in ``input``'s dtype."""
    gen = generator or default_generator
    with gen._lock:
        arr = gen.rng.poisson(np.asarray(input._data, dtype=np.float64))
    return wrap(arr.astype(input._data.dtype))


def randint_like(input: Tensor, low: int, high: int | None = None, *, generator: Generator | None = None,
                 dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: bool | None = False,
                 requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    """Random integers in ``[low, high)`` (``[0, low)`` when ``high`` is None) shaped like ``input``."""
    check_dense(layout, pin_memory)
    if high is None:
        low, high = 0, low
    s, d, dev = _like(input, dtype, device)
    out = randint(low, high, s, generator=generator, dtype=d, device=dev)
    return out.requires_grad_(requires_grad) if requires_grad else out


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Any = None,
             layout: Any = None, device: Any = None, pin_memory: bool | None = False,
             requires_grad: bool = False) -> Tensor:
    """``steps`` values from ``base**start`` to ``base**end``, evenly spaced in the exponent."""
    check_dense(layout, pin_memory)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    arr = np.logspace(start, end, steps, base=base).astype(_float_dtype(dtype).np)
    return _finish(arr, device, requires_grad)


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """A tensor from ``obj``, sharing memory with a tensor or NumPy array unless a copy is needed or asked."""
    if copy:
        return tensor(obj, dtype=dtype, device=device, requires_grad=bool(requires_grad))
    out = as_tensor(obj, dtype=dtype, device=device)
    return out.requires_grad_(requires_grad) if requires_grad else out


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool | None = False, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` (mininn tensors are contiguous: ``stride`` is not kept)."""
    check_dense(layout, pin_memory)
    return empty(_size((size,)), dtype=dtype, device=device, requires_grad=requires_grad)


def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, pin_memory: bool | None = False,
                   requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` (mininn does not keep a memory layout)."""
    check_dense(layout, pin_memory)
    return empty(_size((size,)), dtype=dtype, device=device, requires_grad=requires_grad)


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor sharing memory with a Python buffer (``bytes`` give a read-only one)."""
    arr = np.frombuffer(buffer, dtype=_dtype.as_dtype(dtype).np, count=count, offset=offset)
    return wrap(arr, requires_grad)


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of Binomial(count, prob), elementwise, in ``count``'s dtype."""
    gen = generator or default_generator
    with gen._lock:
        arr = gen.rng.binomial(np.asarray(count._data, np.int64), np.asarray(prob._data, np.float64))
    return wrap(arr.astype(count._data.dtype))
