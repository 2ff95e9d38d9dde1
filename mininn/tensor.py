"""``Tensor``: an array of the device's array module plus its autograd record.

A Tensor owns ``_data`` (a NumPy array on cpu, a CuPy array on cuda). Ops are
``Function`` subclasses in ``mininn._functions``; this file binds them to
torch's method names and holds the autograd-facing state (``requires_grad``,
``grad``, ``grad_fn``, hooks).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._backend import as_device, device, device_of, to_device
from mininn._functions import elementwise as E
from mininn._functions import linalg as L
from mininn._functions import reduction as R
from mininn._functions import shape as S
from mininn.autograd.function import Context, Function, run_backward
from mininn.autograd.grad_mode import _state
from mininn.utils.hooks import RemovableHandle

__all__ = ["Tensor", "Size"]


class Size(tuple):
    """A tensor's shape: a tuple that prints like torch's ``Size``."""

    def __repr__(self) -> str:
        return f"mininn.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


class _Cast(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, np_dtype: Any) -> Any:
        ctx.in_dtype = a.dtype
        return a.astype(np_dtype)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g.astype(ctx.in_dtype), None


class _ToDevice(Function):
    @staticmethod
    def forward(ctx: Context, a: Any, dev: device) -> Any:
        ctx.src = device_of(a)
        return to_device(a, dev)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return to_device(g, ctx.src), None


class _Clone(Function):
    @staticmethod
    def forward(ctx: Context, a: Any) -> Any:
        return a.copy()

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g


def _as_array_operand(value: Any, like: Tensor) -> Any:
    """A scalar or array operand for a binary op with ``like``."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, float) and not like.dtype.is_floating_point:
        # torch: int tensor op float scalar -> default float dtype
        return Tensor(np.asarray(value, dtype=_dtype.get_default_dtype().np))
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, np.ndarray):
        return Tensor(value)
    raise TypeError(
        f"unsupported operand type(s): 'Tensor' and '{type(value).__name__}'"
    )


def _promote_int_float(a: Any, b: Any) -> tuple[Any, Any]:
    """torch promotes int tensor with float tensor to the float tensor's dtype."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        fa, fb = a.dtype.is_floating_point, b.dtype.is_floating_point
        if fa and not fb:
            b = b.to(a.dtype)
        elif fb and not fa:
            a = a.to(b.dtype)
    return a, b


def _binary(fn: type[Function], a: Any, b: Any) -> Tensor:
    a, b = _promote_int_float(a, b)
    return fn.apply(a, b)


class Tensor:
    """A multi-dimensional array with reverse-mode autograd (torch semantics)."""

    __slots__ = (
        "_data",
        "_requires_grad",
        "grad",
        "grad_fn",
        "_output_nr",
        "_hooks",
        "_accumulator",
        "_retains_grad",
        "__weakref__",
    )
    __array_priority__ = 1000  # ndarray op Tensor -> Tensor's reflected method

    def __init__(self, data: Any, requires_grad: bool = False) -> None:
        if type(data) is not np.ndarray and not hasattr(data, "__cuda_array_interface__"):
            data = np.asarray(data)
        self._data = data
        self._requires_grad = False
        self.grad: Tensor | None = None
        self.grad_fn: Any = None
        self._output_nr = 0
        self._hooks: list[Callable[..., Any]] | None = None
        self._accumulator: Any = None
        self._retains_grad = False
        if requires_grad:
            self.requires_grad = True

    # ---- metadata -----------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Any:
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[self._wrap_dim(dim)]

    @property
    def dtype(self) -> _dtype.dtype:
        return _dtype.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> device:
        return device_of(self._data)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad or self.grad_fn is not None

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            if value:
                return
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if value and not self.dtype.is_floating_point:
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients"
            )
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def data(self) -> Tensor:
        return Tensor(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data if isinstance(value, Tensor) else np.asarray(value)

    def _wrap_dim(self, dim: int) -> int:
        n = max(self._data.ndim, 1)
        if not -n <= dim < n:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                f"but got {dim})"
            )
        return dim % n

    # ---- autograd -----------------------------------------------------------------
    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
    ) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``."""
        if not self.requires_grad:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn"
            )
        if gradient is None:
            if self._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = np.ones_like(self._data)
        else:
            g = gradient._data if isinstance(gradient, Tensor) else np.asarray(gradient)
            if g.shape != self._data.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {Size(g.shape)} and "
                    f"output[0] has a shape of {self.shape}."
                )
        run_backward([self], [g], retain_graph=bool(retain_graph))

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed."""
        if not self.requires_grad:
            raise RuntimeError(
                "cannot register a hook on a tensor that doesn't require gradient"
            )
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = []
            self._hooks.append(hook)
            return RemovableHandle(self._hooks, hook)
        hooks = self.grad_fn._add_tensor_hook(self._output_nr, hook)
        return RemovableHandle(hooks, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` on a non-leaf tensor after backward."""
        if self.grad_fn is None or self._retains_grad:
            return
        ref = weakref.ref(self)

        def store(grad: Tensor) -> None:
            t = ref()
            if t is not None:
                t.grad = Tensor(grad._data.copy()) if t.grad is None else t.grad + grad

        self.register_hook(store)
        self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def detach(self) -> Tensor:
        return Tensor(self._data)

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self._requires_grad = False
        return self

    # ---- conversion ---------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self.device.type != "cpu":
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        return self._data

    def tolist(self) -> Any:
        return to_device(self._data, as_device("cpu")).tolist()

    def item(self) -> Any:
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(()).item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous"
            )
        return bool(self._data.reshape(()).item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = to_device(self._data, as_device("cpu"))
        return arr if dtype is None else arr.astype(dtype)

    def clone(self) -> Tensor:
        return _Clone.apply(self)

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(other)``."""
        dev, dt = _parse_to_args(args, kwargs)
        out = self
        if dt is not None and dt.np != out._data.dtype:
            out = _Cast.apply(out, dt.np)
        if dev is not None and dev != out.device:
            out = _ToDevice.apply(out, dev)
        return out

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, device: int | str | None = None) -> Tensor:
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device)

    def float(self) -> Tensor:
        return self.to(_dtype.float32)

    def double(self) -> Tensor:
        return self.to(_dtype.float64)

    def half(self) -> Tensor:
        return self.to(_dtype.float16)

    def long(self) -> Tensor:
        return self.to(_dtype.int64)

    def int(self) -> Tensor:
        return self.to(_dtype.int32)

    def bool(self) -> Tensor:
        return self.to(_dtype.bool)

    def type(self, dtype: Any = None) -> Any:
        if dtype is None:
            return f"mininn.{self.dtype.name}"
        return self.to(_dtype.as_dtype(dtype))

    # ---- in-place -----------------------------------------------------------------
    def _check_inplace(self) -> None:
        if _state.enabled and self.grad_fn is None and self._requires_grad:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )

    def zero_(self) -> Tensor:
        self._check_inplace()
        self._data[...] = 0
        return self

    def fill_(self, value: Any) -> Tensor:
        self._check_inplace()
        self._data[...] = value._data if isinstance(value, Tensor) else value
        return self

    def copy_(self, src: Tensor) -> Tensor:
        self._check_inplace()
        arr = src._data if isinstance(src, Tensor) else np.asarray(src)
        self._data[...] = to_device(arr, self.device)
        return self

    def add_(self, other: Any, alpha: Any = 1) -> Tensor:
        self._check_inplace()
        o = other._data if isinstance(other, Tensor) else other
        if alpha != 1:
            o = o * alpha
        self._data += o
        return self

    def mul_(self, other: Any) -> Tensor:
        self._check_inplace()
        self._data *= other._data if isinstance(other, Tensor) else other
        return self

    # ---- arithmetic ---------------------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        return _binary(E.Add, self, _as_array_operand(other, self))

    def __radd__(self, other: Any) -> Tensor:
        return _binary(E.Add, _as_array_operand(other, self), self)

    def __sub__(self, other: Any) -> Tensor:
        return _binary(E.Sub, self, _as_array_operand(other, self))

    def __rsub__(self, other: Any) -> Tensor:
        return _binary(E.Sub, _as_array_operand(other, self), self)

    def __mul__(self, other: Any) -> Tensor:
        return _binary(E.Mul, self, _as_array_operand(other, self))

    def __rmul__(self, other: Any) -> Tensor:
        return _binary(E.Mul, _as_array_operand(other, self), self)

    def __truediv__(self, other: Any) -> Tensor:
        return _binary(E.Div, self._true_div_operand(), _as_array_operand(other, self))

    def __rtruediv__(self, other: Any) -> Tensor:
        return _binary(E.Div, _as_array_operand(other, self), self._true_div_operand())

    def _true_div_operand(self) -> Tensor:
        if self.dtype.is_floating_point:
            return self
        return self.to(_dtype.get_default_dtype())

    def __pow__(self, other: Any) -> Tensor:
        return _binary(E.Pow, self, _as_array_operand(other, self))

    def __rpow__(self, other: Any) -> Tensor:
        return _binary(E.Pow, _as_array_operand(other, self), self)

    def __neg__(self) -> Tensor:
        return E.Neg.apply(self)

    def __matmul__(self, other: Tensor) -> Tensor:
        return L.MatMul.apply(self, other)

    def __rmatmul__(self, other: Tensor) -> Tensor:
        return L.MatMul.apply(_as_array_operand(other, self), self)

    def matmul(self, other: Tensor) -> Tensor:
        return L.MatMul.apply(self, other)

    add = __add__
    sub = __sub__
    mul = __mul__
    div = __truediv__
    pow = __pow__
    neg = __neg__

    # ---- comparisons (no grad) ----------------------------------------------------
    def _compare(self, other: Any, op: Callable[[Any, Any], Any]) -> Tensor:
        o = other._data if isinstance(other, Tensor) else other
        return Tensor(np.asarray(op(self._data, o)))

    def __eq__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.equal)

    def __ne__(self, other: Any) -> Tensor:  # type: ignore[override]
        return self._compare(other, np.not_equal)

    def __lt__(self, other: Any) -> Tensor:
        return self._compare(other, np.less)

    def __le__(self, other: Any) -> Tensor:
        return self._compare(other, np.less_equal)

    def __gt__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater)

    def __ge__(self, other: Any) -> Tensor:
        return self._compare(other, np.greater_equal)

    __hash__ = object.__hash__

    # ---- unary math ---------------------------------------------------------------
    def exp(self) -> Tensor:
        return E.Exp.apply(self)

    def log(self) -> Tensor:
        return E.Log.apply(self)

    def tanh(self) -> Tensor:
        return E.Tanh.apply(self)

    def sigmoid(self) -> Tensor:
        return E.Sigmoid.apply(self)

    def relu(self) -> Tensor:
        return E.Relu.apply(self)

    # ---- reductions ---------------------------------------------------------------
    def sum(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        x = self if dtype is None else self.to(_dtype.as_dtype(dtype))
        if x._data.dtype.kind in "biu" and dtype is None:
            x = x.to(_dtype.int64)
        return R.Sum.apply(x, R.normalize_dims(dim, x.ndim), keepdim)

    def mean(self, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Tensor:
        x = self if dtype is None else self.to(_dtype.as_dtype(dtype))
        if not x.dtype.is_floating_point:
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {x.dtype.name.capitalize()}"
            )
        return R.Mean.apply(x, R.normalize_dims(dim, x.ndim), keepdim)

    # ---- shape --------------------------------------------------------------------
    def reshape(self, *shape: Any) -> Tensor:
        shape = _shape_args(shape)
        try:
            return S.Reshape.apply(self, shape)
        except ValueError:
            raise RuntimeError(
                f"shape '{list(shape)}' is invalid for input of size {self._data.size}"
            ) from None

    def view(self, *shape: Any) -> Tensor:
        return self.reshape(*shape)

    def permute(self, *dims: Any) -> Tensor:
        dims = _shape_args(dims)
        return S.Permute.apply(self, tuple(self._wrap_dim(d) for d in dims))

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        perm = list(range(self.ndim))
        d0, d1 = self._wrap_dim(dim0), self._wrap_dim(dim1)
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return S.Permute.apply(self, tuple(perm))

    @property
    def T(self) -> Tensor:  # noqa: N802 - torch's name
        return S.Permute.apply(self, tuple(reversed(range(self.ndim))))

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        if self.ndim == 0:
            return self.reshape(1)
        s, e = self._wrap_dim(start_dim), self._wrap_dim(end_dim)
        shape = self._data.shape
        return self.reshape(shape[:s] + (-1,) + shape[e + 1 :])

    def unsqueeze(self, dim: int) -> Tensor:
        n = self.ndim + 1
        if not -n <= dim < n:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                f"but got {dim})"
            )
        d = dim % n
        shape = self._data.shape
        return self.reshape(shape[:d] + (1,) + shape[d:])

    def squeeze(self, dim: Any = None) -> Tensor:
        shape = self._data.shape
        if dim is None:
            return self.reshape(tuple(s for s in shape if s != 1))
        dims = {self._wrap_dim(d) for d in ((dim,) if isinstance(dim, int) else dim)}
        if self.ndim == 0:
            return self
        return self.reshape(tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1)))

    def expand(self, *sizes: Any) -> Tensor:
        sizes = _shape_args(sizes)
        lead = len(sizes) - self.ndim
        shape = tuple(
            self._data.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes)
        )
        return S.Expand.apply(self, shape)

    def contiguous(self) -> Tensor:
        return self

    def __getitem__(self, key: Any) -> Tensor:
        return S.Index.apply(self, _index_key(key))

    def __setitem__(self, key: Any, value: Any) -> None:
        if _state.enabled and self.requires_grad:
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation."
            )
        self._data[_index_key(key)] = value._data if isinstance(value, Tensor) else value

    # ---- printing -----------------------------------------------------------------
    def __repr__(self) -> str:
        return _format(self)


def _shape_args(args: tuple[Any, ...]) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        return tuple(int(a) for a in args[0])
    return tuple(int(a) for a in args)


def _index_key(key: Any) -> Any:
    if isinstance(key, Tensor):
        return key._data
    if isinstance(key, tuple):
        return tuple(k._data if isinstance(k, Tensor) else k for k in key)
    if isinstance(key, list):
        return np.asarray(key)
    return key


def _parse_to_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    for a in args:
        if isinstance(a, Tensor):
            dev, dt = a.device, a.dtype
        elif isinstance(a, _dtype.dtype):
            dt = a
        elif isinstance(a, (str, device)):
            if isinstance(a, str) and a.removeprefix("mininn.") in _dtype._BY_NAME:
                dt = _dtype.as_dtype(a)
            else:
                dev = a
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return (None if dev is None else as_device(dev)), (
        None if dt is None else _dtype.as_dtype(dt)
    )


def _format(t: Tensor) -> str:
    arr = to_device(t._data, as_device("cpu"))
    body = np.array2string(
        arr, separator=", ", prefix="tensor(", precision=4, floatmode="maxprec_equal"
    )
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    default = _dtype.get_default_dtype()
    if t.dtype not in (default, _dtype.int64, _dtype.bool) or arr.size == 0:
        if not (arr.size == 0 and t.dtype == default):
            extras.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn={t.grad_fn.name()}")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
