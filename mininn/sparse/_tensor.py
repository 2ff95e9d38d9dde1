"""``SparseTensor``: a tensor in torch's ``sparse_coo`` layout, and ``sparse_coo_tensor`` that makes one.

A COO tensor holds ``indices`` (an int64 array of ``(sparse_dim, nnz)``) and ``values`` (a dense
Tensor of ``(nnz, *dense_dims)``), and never a dense array: its ``_data`` raises, so an op that
only takes dense tensors stops with its own name and ``.to_dense()`` as the way on, instead of
computing on the wrong thing. Dense tensors keep their own class and paths untouched.

Autograd runs through the values: every op here is an op on the values Tensor (the indices are
constants), so ``sparse_coo_tensor(i, v)`` sends gradients to ``v`` as torch does. A sparse leaf
that requires grad (``requires_grad=True``) owns a leaf values Tensor; its ``.grad`` is torch's:
sparse with its own pattern after ``torch.sparse.mm``, dense after ``torch.mm``/``spmm``/``matmul``
on the leaf itself. (Through a tensor derived from the leaf, such as ``leaf.t()`` or ``leaf * 2``,
torch's gradient of ``mm`` stays dense; mininn's keeps the leaf's pattern, equal at those positions.)
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from mininn import _dtype
from mininn._backend import as_device, to_device
from mininn._functions import conversion as C
from mininn._layout import sparse_coo, strided
from mininn._tensor_core import Size, TensorCore
from mininn.autograd.graph import _edge
from mininn.sparse import _ops as O
from mininn.tensor import Tensor

__all__ = ["SparseTensor", "sparse_coo_tensor", "to_sparse", "make_sparse"]

_MININN_DIR = sys.modules["mininn"].__path__[0]
_SUPPORTED = (
    "to_dense, coalesce, indices/values, t/transpose, sum, mul/div by a scalar, add of two sparse "
    "tensors, mm/spmm/matmul/@ with a dense matrix, torch.sparse.mm/sum"
)


_NON_LEAF_MESSAGE = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
    "subgraph that doesn't require differentiation use var_no_grad = var.detach()."
)
_GENERIC_NAMES = frozenset({"op", "apply", "wrapper", "inner", "method", "fn", "f", "compare"})


def _calling_op() -> str:
    """The public mininn function that asked a sparse tensor for its dense array (``exp``, ``relu``).

    Walks out from the caller through mininn's own frames to the first public, specific name;
    a generic closure (``op``) is named by the op class it applies (its ``fn`` or ``cls``).
    """
    first = frame = sys._getframe(2)  # 0: here, 1: the _data property
    from_class = None
    while frame is not None and frame.f_code.co_filename.startswith(_MININN_DIR):
        name = frame.f_code.co_name
        if not name.startswith(("_", "<")) and name not in _GENERIC_NAMES:
            return name
        op_class = frame.f_locals.get("fn", frame.f_locals.get("cls"))
        if from_class is None and isinstance(op_class, type):
            from_class = op_class.__name__.lower()
        frame = frame.f_back
    return from_class or first.f_code.co_name


def _no_dense_array(self: SparseTensor) -> Any:
    raise NotImplementedError(
        f"{_calling_op()}(): not supported for sparse COO tensors in mininn; call .to_dense() on the "
        f"sparse tensor first. Sparse tensors support: {_SUPPORTED}."
    )


def make_sparse(indices: Any, values: Tensor, size: tuple[int, ...], coalesced: bool) -> SparseTensor:
    """A SparseTensor of checked parts (no validation here)."""
    t = SparseTensor.__new__(SparseTensor)
    t._idx, t._vals, t._size = indices, values, tuple(int(s) for s in size)
    t._coalesced = coalesced or indices.shape[1] <= 1
    t._own_leaf, t._sink = False, None
    t._requires_grad, t._output_nr, t._hooks, t._accumulator, t._retains_grad = False, 0, None, None, False
    return t


class SparseTensor(Tensor):
    """A sparse COO tensor (``layout == sparse_coo``), as ``torch.sparse_coo_tensor`` returns."""

    __slots__ = ("_idx", "_vals", "_size", "_coalesced", "_own_leaf", "_sink")

    _data = property(_no_dense_array)  # type: ignore[assignment]
    is_sparse = True

    # ---- metadata -----------------------------------------------------------------
    @property
    def layout(self) -> Any:
        return sparse_coo

    @property
    def shape(self) -> Size:
        return Size(self._size)

    def size(self, dim: int | None = None) -> Any:
        """The shape, or the size of one dim."""
        return Size(self._size) if dim is None else self._size[dim]

    @property
    def dtype(self) -> _dtype.dtype:
        return self._vals.dtype

    @property
    def device(self) -> Any:
        return self._vals.device

    @property
    def ndim(self) -> int:
        return len(self._size)

    def dim(self) -> int:
        """The number of dims (sparse and dense)."""
        return len(self._size)

    def numel(self) -> int:
        """The number of elements of the dense equivalent."""
        return int(np.prod(self._size, dtype=np.int64))

    nelement = numel

    def element_size(self) -> int:
        """Bytes per value."""
        return self._vals.element_size()

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def sparse_dim(self) -> int:
        """How many leading dims the indices address."""
        return int(self._idx.shape[0])

    def dense_dim(self) -> int:
        """How many trailing dims each value has."""
        return self._vals.ndim - 1

    def _nnz(self) -> int:
        return int(self._idx.shape[1])

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted and unique."""
        return self._coalesced

    # ---- autograd (through the values) ----------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            if not value:
                raise RuntimeError(_NON_LEAF_MESSAGE)
        elif value and not self._own_leaf:
            self._vals = Tensor(self._vals._data, requires_grad=True)
            self._own_leaf = True
        elif self._own_leaf:
            self._vals.requires_grad = value

    @property
    def grad_fn(self) -> Any:
        if self._own_leaf or not self._vals.requires_grad:
            return None
        edge = _edge(self._vals)
        return edge[0] if edge else None

    @property
    def grad(self) -> Any:
        if not self._own_leaf:
            return None
        sparse = None if self._vals.grad is None else _first_per_position(self, self._vals.grad)
        dense = None if self._sink is None else self._sink.grad
        if dense is None:
            return sparse
        return dense if sparse is None else dense + sparse.to_dense()

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            raise NotImplementedError("assigning a gradient to a sparse tensor is not supported in mininn")
        if self._own_leaf:
            self._vals.grad = None
        if self._sink is not None:
            self._sink.grad = None

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        """Set ``requires_grad`` (a leaf sparse tensor then owns its values) and return self."""
        self.requires_grad = requires_grad
        return self

    def detach(self) -> SparseTensor:
        """The same indices and values, cut from the graph."""
        return make_sparse(self._idx, Tensor(self._vals._data), self._size, self._coalesced)

    def clone(self, *, memory_format: Any = None) -> SparseTensor:
        """A copy of indices and values that stays in the graph."""
        return make_sparse(self._idx.copy(), self._vals.clone(), self._size, self._coalesced)

    def __deepcopy__(self, memo: dict[int, Any]) -> SparseTensor:
        out = make_sparse(self._idx.copy(), Tensor(self._vals._data.copy()), self._size, self._coalesced)
        if self._own_leaf:
            out.requires_grad = self.requires_grad
        memo[id(self)] = out
        return out

    # ---- parts ----------------------------------------------------------------------
    def _indices(self) -> Tensor:
        return Tensor(self._idx)

    def _values(self) -> Tensor:
        return self._vals

    def indices(self) -> Tensor:
        """The indices of a coalesced tensor."""
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return Tensor(self._idx)

    def values(self) -> Tensor:
        """The values of a coalesced tensor."""
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def _linear(self) -> Any:
        return O.linear_index(self._idx, self._size[: self.sparse_dim()])

    def coalesce(self) -> SparseTensor:
        """Indices sorted and unique, the values of repeated indices summed (self when already so)."""
        if self._coalesced:
            return self
        xp = O.xp_of(self._idx)
        unique, inverse = xp.unique(self._linear(), return_inverse=True)
        indices = xp.stack(xp.unravel_index(unique, self._size[: self.sparse_dim()])).astype(np.int64)
        values = O.SumDuplicates.apply(self._vals, inverse.reshape(-1), int(unique.shape[0]))
        return make_sparse(indices.reshape(self.sparse_dim(), -1), values, self._size, True)

    def to_dense(self, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
        """The dense tensor (values at repeated indices summed)."""
        out = O.ToDense.apply(self._vals, self._linear(), self._size)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args: Any, **kwargs: Any) -> SparseTensor:
        """Self: already sparse COO."""
        return self

    # ---- layout changes ---------------------------------------------------------------
    def transpose(self, dim0: int, dim1: int) -> SparseTensor:
        """Swap two sparse dims (the indices' rows) or two dense dims (the values')."""
        n, sd = len(self._size), self.sparse_dim()
        d0, d1 = dim0 % n if n else 0, dim1 % n if n else 0
        size = list(self._size)
        size[d0], size[d1] = size[d1], size[d0]
        if d0 < sd and d1 < sd:
            idx = self._idx.copy()
            idx[[d0, d1]] = idx[[d1, d0]]
            return make_sparse(idx, self._vals, tuple(size), d0 == d1 and self._coalesced)
        if d0 >= sd and d1 >= sd:
            values = self._vals.transpose(d0 - sd + 1, d1 - sd + 1)
            return make_sparse(self._idx, values, tuple(size), self._coalesced)
        raise RuntimeError("transpose(): cannot swap a sparse dim with a dense dim of a sparse COO tensor")

    def t(self) -> SparseTensor:
        """The transpose of a tensor with at most 2 sparse and no dense dims."""
        if self.sparse_dim() > 2 or self.dense_dim() > 0:
            raise RuntimeError(
                "t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                f"{self.sparse_dim()} sparse and {self.dense_dim()} dense dimensions"
            )
        return self if self.ndim < 2 else self.transpose(0, 1)

    # ---- arithmetic -------------------------------------------------------------------
    def _with_values(self, values: Tensor) -> SparseTensor:
        return make_sparse(self._idx, values, self._size, self._coalesced)

    def mul(self, other: Any) -> SparseTensor:
        """The values times a scalar (a number or a 0-d dense tensor)."""
        return self._with_values(self._vals * _scalar(other, "mul"))

    def div(self, other: Any) -> SparseTensor:
        """The values divided by a scalar (a number or a 0-d dense tensor)."""
        return self._with_values(self._vals / _scalar(other, "div"))

    def neg(self) -> SparseTensor:
        """The values negated."""
        return self._with_values(-self._vals)

    def add(self, other: Any, *, alpha: Any = 1) -> SparseTensor:
        """The sum of two sparse tensors of one shape (their entries side by side)."""
        if not isinstance(other, SparseTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        if other._size != self._size:
            raise RuntimeError(
                f"add: expected 'self' and 'other' to have same size, but self has size {list(self._size)} "
                f"while other has size {list(other._size)} (FYI: op2-sparse addition does not currently "
                "support broadcasting)"
            )
        xp = O.xp_of(self._idx)
        from mininn._functions.join import cat

        other_values = other._vals if alpha == 1 else other._vals * alpha
        out = make_sparse(xp.concatenate([self._idx, other._idx], axis=1),
                          cat([self._vals, other_values.to(self._vals.dtype)]), self._size, False)
        return out.coalesce() if self._coalesced and other._coalesced else out

    def sub(self, other: Any, *, alpha: Any = 1) -> SparseTensor:
        """The difference of two sparse tensors of one shape."""
        return self.add(other, alpha=-alpha)

    __mul__ = __rmul__ = mul
    __truediv__ = div
    __neg__ = neg
    __add__ = add
    __sub__ = sub

    def __radd__(self, other: Any) -> Any:
        if isinstance(other, TensorCore):
            return other + self.to_dense()
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")

    # ---- conversion ---------------------------------------------------------------------
    def to(self, *args: Any, **kwargs: Any) -> SparseTensor:
        """The same tensor with values (and indices) on another dtype or device."""
        dev, dt, copy = C._parse_to_args(args, dict(kwargs))
        values = self._vals.to(*(a for a in (dev, dt) if a is not None), copy=copy)
        if values is self._vals and not copy:
            return self
        idx = self._idx if dev is None else to_device(self._idx, as_device(dev))
        return make_sparse(idx.copy() if copy else idx, values, self._size, self._coalesced)

    def cpu(self) -> SparseTensor:
        """The tensor on the cpu."""
        return self.to("cpu")

    def cuda(self, device: Any = None, non_blocking: bool = False) -> SparseTensor:
        """The tensor on a CUDA device."""
        return self.to("cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device)

    def float(self) -> SparseTensor:
        return self.to(_dtype.float32)

    def double(self) -> SparseTensor:
        return self.to(_dtype.float64)

    def half(self) -> SparseTensor:
        return self.to(_dtype.float16)

    def long(self) -> SparseTensor:
        return self.to(_dtype.int64)

    def int(self) -> SparseTensor:
        return self.to(_dtype.int32)

    def bool(self) -> SparseTensor:
        return self.to(_dtype.bool)

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """``"torch.sparse.FloatTensor"`` (torch's name), or a cast to ``dtype``."""
        if dtype is None:
            return C.tensor_type(self._vals).replace("torch.", "torch.sparse.", 1)
        return self.to(_dtype.as_dtype(dtype))

    def __repr__(self) -> str:
        pad = " " * len("tensor(indices=")
        indices = repr(Tensor(to_device(self._idx, as_device("cpu")))).replace("\n", "\n" + pad)
        extra = f", dtype={self.dtype!r}" if self.dtype is not _dtype.get_default_dtype() else ""
        values = repr(self._vals.detach()).replace(extra, "")  # torch names the dtype once, below
        values = values.replace("\n", "\n" + " " * len("       values="))
        if self.device.type != "cpu":
            extra += f", device='{self.device}'"
        tail = f"size={self._size}, nnz={self._nnz()}{extra}, layout={sparse_coo!r}"
        if self.grad_fn is not None:
            tail += f",\n       grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            tail += ",\n       requires_grad=True"
        return f"tensor(indices={indices},\n       values={values},\n       {tail})"

    __str__ = __repr__


def _scalar(other: Any, op: str) -> Any:
    if isinstance(other, TensorCore) and (isinstance(other, SparseTensor) or other.ndim != 0):
        raise NotImplementedError(
            f"{op}(): mininn multiplies or divides a sparse COO tensor only by a scalar (a number or a "
            "0-d tensor); call .to_dense() on the sparse tensor first"
        )
    return other


def _first_per_position(s: SparseTensor, grad: Tensor) -> SparseTensor:
    """The coalesced gradient of ``s``: at each position, one entry's gradient (they are equal)."""
    xp = O.xp_of(s._idx)
    unique, first = xp.unique(s._linear(), return_index=True)
    indices = xp.stack(xp.unravel_index(unique, s._size[: s.sparse_dim()])).astype(np.int64)
    return make_sparse(indices.reshape(s.sparse_dim(), -1), Tensor(grad._data[first]), s._size, True)


# ---- construction ------------------------------------------------------------------------------


def _index_array(indices: Any) -> Any:
    idx = indices.detach()._data if isinstance(indices, TensorCore) else np.asarray(indices)
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if idx.dtype.kind not in "iu":
        if idx.dtype.kind != "f" and idx.size:
            raise RuntimeError(f"indices must be an int64 tensor, got {idx.dtype}")
    return idx.astype(np.int64, copy=False)


def _values_tensor(values: Any, dtype: Any, device: Any) -> Tensor:
    from mininn._factories import tensor

    v = values if isinstance(values, TensorCore) else tensor(values, dtype=dtype)
    if v.ndim == 0:
        v = v.reshape(1)
    if dtype is not None or device is not None:
        v = v.to(*(a for a in (device, dtype) if a is not None))
    return v


def _check_size(idx: Any, v: Tensor, size: Any) -> tuple[int, ...]:
    sparse_dim, dense_dim = idx.shape[0], v.ndim - 1
    if size is None:
        top = idx.max(axis=1) + 1 if idx.shape[1] else np.zeros(sparse_dim, dtype=np.int64)
        return tuple(int(s) for s in top) + tuple(v.shape[1:])
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(
            f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
            f"sparse_dim = {sparse_dim}, dense_dim = {dense_dim}"
        )
    if tuple(v.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError(
            f"values has incorrect size, expected {[idx.shape[1], *size[sparse_dim:]]}, got {list(v.shape)}"
        )
    if idx.shape[1]:
        low, high = idx.min(axis=1), idx.max(axis=1)
        for d in range(sparse_dim):
            if low[d] < 0:
                raise RuntimeError(f"found negative index {int(low[d])} for dim {d}")
            if high[d] >= size[d]:
                raise RuntimeError(
                    f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index "
                    f"{int(high[d])}"
                )
    return size


def sparse_coo_tensor(
    indices: Any,
    values: Any,
    size: Any = None,
    *,
    dtype: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
    check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
) -> SparseTensor:
    """A sparse COO tensor with ``values`` at ``indices`` (``(sparse_dim, nnz)``), as torch's.

    The size defaults to one past the largest index of each sparse dim. Unlike torch (whose checks
    are off by default), indices are always checked against the size: mininn never reads out of
    bounds. Gradients reach ``values`` when it requires grad.
    """
    idx = _index_array(indices)
    v = _values_tensor(values, dtype, device)
    if v.shape[0] != idx.shape[1]:
        raise RuntimeError(
            f"indices and values must have same nnz, but got nnz from indices: {idx.shape[1]}, nnz from "
            f"values: {v.shape[0]}"
        )
    shape = _check_size(idx, v, size)
    idx = to_device(idx, v.device)
    out = make_sparse(idx, v, shape, bool(is_coalesced))
    if requires_grad:
        out._vals = Tensor(v._data, requires_grad=True)
        out._own_leaf = True
    return out


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout: Any = None,
              blocksize: Any = None, dense_dim: int | None = None) -> Tensor:
    """The nonzero entries of a dense tensor as a coalesced COO tensor (``sparse_dim`` leading dims)."""
    if isinstance(self, SparseTensor):
        return self
    if layout is not None and layout is not sparse_coo:
        raise NotImplementedError(f"to_sparse(): mininn makes only the sparse_coo layout, got {layout!r}")
    sd = self.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 < sd <= self.ndim if self.ndim else sd != 0:
        raise RuntimeError(f"sparse_dim must be in [0, {self.ndim}], got {sd}")
    arr = self._data
    xp = O.xp_of(arr)
    flat = arr.reshape(int(np.prod(arr.shape[:sd], dtype=np.int64)), -1)
    lin = xp.flatnonzero((flat != 0).any(axis=1))
    indices = xp.stack(xp.unravel_index(lin, arr.shape[:sd])).astype(np.int64).reshape(sd, -1)
    values = O.GatherFlat.apply(self, lin, sd)
    return make_sparse(indices, values, tuple(arr.shape), True)


def _dense_to_dense(self: Tensor, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
    """A strided tensor is already dense: itself (or a cast to ``dtype``)."""
    return self if dtype is None else self.to(dtype)


def install(cls: type[Tensor]) -> None:
    """Give dense Tensors torch's layout answers and conversions to and from sparse."""
    cls.is_sparse = False  # type: ignore[attr-defined]
    cls.layout = property(lambda self: strided)  # type: ignore[attr-defined]
    cls.to_dense = _dense_to_dense  # type: ignore[attr-defined]
    cls.to_sparse = to_sparse  # type: ignore[attr-defined]
    cls.to_sparse_coo = to_sparse  # type: ignore[attr-defined]
