"""``Tensor``: the public tensor class, on top of the op modules.

Layers, bottom-up: ``mininn._tensor_core.TensorCore`` holds a tensor's state
(``_data``: a NumPy array on cpu, a CuPy array on cuda; ``requires_grad``,
``grad``, ``grad_fn``, hooks); ``mininn.autograd.graph`` is the seam, where
``ArrayFunction.apply`` unwraps Tensors into arrays and wraps results, recording the
graph; ``mininn._functions`` holds the ops, each family also defining the public
function (``mininn.sum(x, 1)``) that this class binds as the method of the same
name (``x.sum(1)``). This file adds what needs the ops: autograd entry points
(``backward``, hooks), conversions, operators and printing, and hands ``Tensor``
to the seam once (``set_tensor_class``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from mininn import _factories as FA
from mininn._backend import as_device, to_device
from mininn._functions import conversion as C
from mininn._functions import elementwise as E
from mininn._functions import indexing as I  # noqa: E741
from mininn._functions import inplace as IP
from mininn._functions import join as J
from mininn._functions import linalg as L
from mininn._functions import methods as MT
from mininn._functions import reduction as R
from mininn._functions import shape as S
from mininn._functions import softmax as SM
from mininn._functions import sorting as SO
from mininn._functions import unary as U
from mininn._functions.printing import format_tensor
from mininn._tensor_core import Size, TensorCore
from mininn.autograd.graph import _accumulate, _edge, _root_grad, run_backward, set_tensor_class
from mininn.utils.hooks import RemovableHandle

__all__ = ["Tensor", "Size"]

_asarray = np.asarray


def _reflected(op: Callable[[Any, Any], Tensor]) -> Callable[[Tensor, Any], Tensor]:
    """The reflected operator of ``op`` (``__radd__`` of ``add``): ``other <op> self``."""

    def reflected(self: Tensor, other: Any) -> Tensor:
        return op(other, self)

    reflected.__name__ = reflected.__qualname__ = f"reflected_{op.__name__}"
    return reflected


class Tensor(TensorCore):
    """A multi-dimensional array with reverse-mode autograd (torch semantics)."""

    __slots__ = ()

    @property
    def data(self) -> Tensor:
        return Tensor(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data if isinstance(value, Tensor) else np.asarray(value)

    # ---- autograd -----------------------------------------------------------------
    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``."""
        if create_graph:
            raise NotImplementedError("create_graph=True (higher-order gradients) is not supported")
        if not self.requires_grad:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn"
            )
        g = _root_grad(self, gradient, 0)
        if inputs is None:
            run_backward([self], [g], retain_graph=bool(retain_graph))
            return
        # only the given tensors accumulate (torch's ``inputs=``)
        targets = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        for t in targets:
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
        captured = run_backward([self], [g], bool(retain_graph), capture=[_edge(t) for t in targets])
        for t, grad in zip(targets, captured or ()):
            if grad is not None:
                _accumulate(t, grad)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new one."""
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
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
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

    @property
    def _base(self) -> Tensor | None:
        """The tensor whose array this view shares (the root of a chain of views), or None."""
        return None if self._view is None else self._view[0]

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another's array (``_base``)."""
        return self._view is not None

    def detach(self) -> Tensor:
        """A tensor sharing the data, cut from the graph."""
        return Tensor(self._data)

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph, in place."""
        self.grad_fn = None
        self._requires_grad = False
        return self

    # ---- conversion ---------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array sharing memory (cpu tensors that need no grad)."""
        if self.requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self.device.type != "cpu":
            if force:
                return to_device(self._data, as_device("cpu"))
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        return self._data

    def tolist(self) -> Any:
        """The data as (nested) Python lists of numbers."""
        return to_device(self._data, as_device("cpu")).tolist()

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(()).item()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
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
        return iter(J.unbind(self, 0))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = to_device(self._data, as_device("cpu"))
        return arr if dtype is None else arr.astype(dtype)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_rebuild, (to_device(self._data, as_device("cpu")), self._requires_grad))

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment.  If you were attempting to deepcopy a module, this may "
                "be because of a torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001"
            )
        out = type(self).__new__(type(self))
        Tensor.__init__(out, self._data.copy(), requires_grad=self._requires_grad)
        if self.grad is not None:
            out.grad = Tensor(self.grad._data.copy())
        memo[id(self)] = out
        return out

    def clone(self, *, memory_format: Any = None) -> Tensor:
        """A copy of the data that stays in the graph."""
        return C.Clone.apply(self)

    # ---- conversion (mininn/_functions/conversion.py) ------------------------------
    to = C.to
    cpu = C.cpu
    cuda = C.cuda
    float = C.to_float
    double = C.to_double
    half = C.to_half
    bfloat16 = C.to_bfloat16
    long = C.to_long
    int = C.to_int
    short = C.to_short
    byte = C.to_byte
    char = C.to_char
    bool = C.to_bool
    type = C.tensor_type
    type_as = C.type_as
    new_tensor = FA.new_tensor
    new_zeros = FA.new_zeros
    new_ones = FA.new_ones
    new_full = FA.new_full
    new_empty = FA.new_empty

    # ---- random in-place fills (nn.init) --------------------------------------------
    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill with samples of N(mean, std**2) from the global generator."""
        return FA.fill_normal_(self, mean, std, generator)

    def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill with samples of U(from, to) from the global generator (torch's ``from``, which no
        Python keyword can spell, is ``from_``)."""
        return FA.fill_uniform_(self, from_, to, generator)

    def bernoulli_(self, p: Any = 0.5, *, generator: Any = None) -> Tensor:
        """Fill with 1 (probability ``p``) or 0 from the global generator."""
        return FA.fill_bernoulli_(self, p, generator)

    def random_(self, from_: int = 0, to: int | None = None, *, generator: Any = None) -> Tensor:
        """Fill with integers in ``[from, to)`` (``[0, from)`` for ``random_(n)``)."""
        return FA.fill_random_(self, from_, to, generator)

    def exponential_(self, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
        """Fill with samples of Exp(lambd)."""
        return FA.fill_exponential_(self, lambd, generator)

    # ---- in-place -----------------------------------------------------------------
    zero_ = IP.zero_
    fill_ = IP.fill_
    copy_ = IP.copy_
    add_ = IP.add_
    sub_ = IP.sub_
    mul_ = IP.mul_
    div_ = IP.div_
    pow_ = IP.pow_
    addcmul_ = IP.addcmul_
    addcdiv_ = IP.addcdiv_
    lerp_ = IP.lerp_
    clamp_ = IP.clamp_
    clip_ = IP.clip_
    masked_fill_ = IP.masked_fill_
    sqrt_ = IP.sqrt_
    exp_ = IP.exp_
    log_ = IP.log_
    abs_ = IP.abs_
    neg_ = IP.neg_
    relu_ = IP.relu_
    sigmoid_ = IP.sigmoid_
    tanh_ = IP.tanh_
    reciprocal_ = IP.reciprocal_

    __iadd__ = IP.add_
    __isub__ = IP.sub_
    __imul__ = IP.mul_
    __itruediv__ = IP.div_

    # ---- arithmetic ---------------------------------------------------------------
    add = E.add
    sub = E.sub
    subtract = E.subtract
    mul = E.mul
    multiply = E.mul
    div = E.div
    divide = E.div
    true_divide = E.true_divide
    floor_divide = E.floor_divide
    remainder = E.remainder
    pow = E.pow
    neg = E.neg
    negative = E.neg
    maximum = E.maximum
    minimum = E.minimum
    clamp = E.clamp
    clip = E.clip
    masked_fill = E.masked_fill

    def where(self, condition: Tensor, other: Any) -> Tensor:
        """``self`` where ``condition`` holds, else ``other`` (``torch.where(condition, self, other)``)."""
        return E.where(condition, self, other)

    matmul = L.matmul
    mm = L.mm
    bmm = L.bmm
    dot = L.dot
    outer = L.outer

    __add__ = E.add
    __radd__ = _reflected(E.add)
    __sub__ = E.sub
    __rsub__ = _reflected(E.sub)
    __mul__ = E.mul
    __rmul__ = _reflected(E.mul)
    __truediv__ = E.div
    __rtruediv__ = _reflected(E.div)
    __floordiv__ = E.floor_divide
    __rfloordiv__ = _reflected(E.floor_divide)
    __mod__ = E.remainder
    __rmod__ = _reflected(E.remainder)
    __pow__ = E.pow
    __rpow__ = _reflected(E.pow)
    __neg__ = E.neg

    def __pos__(self) -> Tensor:
        return self

    __abs__ = U.abs
    __matmul__ = L.matmul

    def __rmatmul__(self, other: Any) -> Tensor:
        return L.matmul(Tensor(_asarray(other)), self)

    __invert__ = E.bitwise_not
    __and__ = E.bitwise_and
    __or__ = E.bitwise_or
    __xor__ = E.bitwise_xor
    __rand__ = __and__
    __ror__ = __or__
    __rxor__ = __xor__

    # ---- comparisons and logic (no grad) -----------------------------------------------
    eq = E.eq
    ne = E.ne
    lt = E.lt
    le = E.le
    gt = E.gt
    ge = E.ge
    greater = E.gt
    greater_equal = E.ge
    less = E.lt
    less_equal = E.le
    not_equal = E.ne
    logical_and = E.logical_and
    logical_or = E.logical_or
    logical_xor = E.logical_xor
    logical_not = E.logical_not
    isfinite = E.isfinite
    isnan = E.isnan
    isinf = E.isinf
    allclose = E.allclose
    isclose = E.isclose
    equal = E.equal

    __eq__ = E.eq  # type: ignore[override]
    __ne__ = E.ne  # type: ignore[override]
    __lt__ = E.lt
    __le__ = E.le
    __gt__ = E.gt
    __ge__ = E.ge
    __hash__ = object.__hash__

    # ---- unary math ---------------------------------------------------------------
    exp = U.exp
    expm1 = U.expm1
    log = U.log
    log1p = U.log1p
    sqrt = U.sqrt
    rsqrt = U.rsqrt
    reciprocal = U.reciprocal
    tanh = U.tanh
    sigmoid = U.sigmoid
    relu = U.relu
    abs = U.abs
    absolute = U.abs
    sin = U.sin
    cos = U.cos
    square = U.square
    erf = U.erf
    sign = U.sign
    floor = U.floor
    ceil = U.ceil
    trunc = U.trunc
    round = U.round
    softmax = SM.softmax
    log_softmax = SM.log_softmax

    # ---- reductions ---------------------------------------------------------------
    sum = R.sum
    mean = R.mean
    prod = R.prod
    max = R.max
    min = R.min
    amax = R.amax
    amin = R.amin
    argmax = R.argmax
    argmin = R.argmin
    var = R.var
    std = R.std
    logsumexp = R.logsumexp
    all = R.all
    any = R.any
    count_nonzero = R.count_nonzero
    sort = SO.sort
    argsort = SO.argsort
    topk = SO.topk
    cumsum = SO.cumsum

    # ---- shape --------------------------------------------------------------------
    reshape = S.reshape
    view = S.view
    view_as = S.view_as
    reshape_as = S.reshape_as
    permute = S.permute
    transpose = S.transpose
    swapaxes = S.swapaxes
    t = S.t
    T = property(S.T)
    mT = property(lambda self: S.transpose(self, -2, -1))  # noqa: N815 - torch's name
    flatten = S.flatten
    unflatten = S.unflatten
    unsqueeze = S.unsqueeze
    squeeze = S.squeeze
    expand = S.expand
    expand_as = S.expand_as
    broadcast_to = S.broadcast_to
    flip = S.flip
    roll = S.roll
    repeat = S.repeat
    tile = S.tile
    movedim = S.movedim
    contiguous = S.contiguous

    def split(self, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
        """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes."""
        return J.split(self, split_size, dim)

    chunk = J.chunk
    unbind = J.unbind
    gather = I.gather
    index_select = I.index_select
    masked_select = I.masked_select
    narrow = I.narrow
    nonzero = I.nonzero

    __getitem__ = I.getitem
    __setitem__ = I.setitem

    # ---- printing -----------------------------------------------------------------
    def __repr__(self) -> str:
        return _format(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return repr(self) if not spec else object.__format__(self, spec)


# the tensor functions of mininn/_functions/methods.py, bound where this class defines no such name
MT.install(Tensor)
# the seam wraps op results in this class from now on
set_tensor_class(Tensor)


def _rebuild(data: np.ndarray, requires_grad: bool) -> Tensor:
    return Tensor(data, requires_grad=requires_grad)


def _format(t: Tensor) -> str:
    return format_tensor(t)

