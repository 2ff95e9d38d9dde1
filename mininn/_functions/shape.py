"""Shape ops: reshape/view, permute/transpose, squeeze/unsqueeze, expand, flip,
roll, repeat/tile. NumPy returns views where it can, as torch does.
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

from typing import Any

import numpy as np

from mininn import _dtype
from mininn._backend import array_module, device_of
from mininn._functions._util import TORCH_TYPE_NAMES, legacy_type_name, torch_type_name, unbroadcast, wrap_dim
from mininn._layout import contiguous_format
from mininn.autograd.graph import ArrayFunction, Context, view_op, wrap


@view_op
class Reshape(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, shape: tuple[int, ...]) -> Any:
        ctx.in_shape = a.shape
        return a.reshape(shape)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g.reshape(ctx.in_shape), None


@view_op
class Permute(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, dims: tuple[int, ...]) -> Any:
        ctx.dims = dims
        return a.transpose(dims)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return g.transpose(np.argsort(ctx.dims)), None


@view_op
class Expand(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, shape: tuple[int, ...]) -> Any:
        ctx.in_shape = a.shape
        out = np.broadcast_to(a, shape)
        if out.size == a.size and out.ndim >= a.ndim:
            # nothing repeated (only leading dims of 1 added): a view in-place ops may write
            # through, as torch's
            return a[(None,) * (out.ndim - a.ndim)]
        return out

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return unbroadcast(g, ctx.in_shape), None


class Flip(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, axes: tuple[int, ...]) -> Any:
        ctx.axes = axes
        return np.flip(a, axis=axes)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        return np.flip(g, axis=ctx.axes), None


class Roll(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, shifts: Any, axes: Any) -> Any:
        ctx.meta = (shifts, axes)
        return np.roll(a, shifts, axis=axes)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shifts, axes = ctx.meta
        back = -shifts if isinstance(shifts, int) else tuple(-s for s in shifts)
        return np.roll(g, back, axis=axes), None, None


class Repeat(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, a: Any, reps: tuple[int, ...]) -> Any:
        ctx.meta = (a.shape, reps)
        return np.tile(a, reps)

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        shape, reps = ctx.meta
        padded = (1,) * (len(reps) - len(shape)) + tuple(shape)
        interleaved = tuple(x for r, s in zip(reps, padded) for x in (r, s))
        summed = g.reshape(interleaved).sum(axis=tuple(range(0, 2 * len(reps), 2)))
        return summed.reshape(shape), None


# ---- public functions (also bound as Tensor methods) -------------------------------------


def shape_args(args: tuple[Any, ...]) -> tuple[int, ...]:
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` all mean the shape ``(2, 3)``."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def sizes_or_keyword(fn: str, name: str, args: tuple[Any, ...], value: Any) -> tuple[Any, ...]:
    """``*args``, or torch's keyword spelling of them (``x.reshape(shape=(2, 3))``); never both."""
    if value is None:
        return args
    if args:
        raise TypeError(f"{fn}() got multiple values for argument '{name}'")
    return (value,)


def _infer_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        i = unknown[0]
        return shape[:i] + (numel // known,) + shape[i + 1 :]
    if known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def reshape(input: Any, *sizes: Any, shape: Any = None) -> Any:
    """The same elements in a new shape (one dim may be -1)."""
    target = _infer_shape(shape_args(sizes_or_keyword("reshape", "shape", sizes, shape)), input._data.size)
    if target == input._data.shape:
        return _alias(input)
    return Reshape.apply(input, target)


def _alias(input: Any) -> Any:
    """A new tensor sharing data and graph position (torch's view of the whole)."""
    return Reshape.apply(input, input._data.shape)


def view(input: Any, *sizes: Any, size: Any = None, dtype: Any = None) -> Any:
    """``reshape`` (``view(*size)``, ``view(size=...)``), or the same bytes read as ``dtype``
    (``view(mininn.int32)``, ``view(dtype=...)``: the last dim scales with the element size)."""
    if dtype is None and len(sizes) == 1 and isinstance(sizes[0], _dtype.dtype):
        sizes, dtype = (), sizes[0]
    if dtype is None:
        return reshape(input, *sizes_or_keyword("view", "size", sizes, size))
    if sizes or size is not None:
        raise TypeError("view() takes a size or a dtype, not both")
    return _view_as_dtype(input, _dtype.as_dtype(dtype))


def _view_as_dtype(input: Any, dt: Any) -> Any:
    """torch's ``view(dtype)``: the bytes read as ``dt``, outside the graph unless ``dt`` is the same."""
    a = input._data
    if dt.np == a.dtype:
        return _alias(input)
    have, want = a.dtype.itemsize, dt.np.itemsize
    names = f"{torch_type_name(a.dtype)} as {TORCH_TYPE_NAMES[dt.name]}"
    if have != want and a.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 to view {names} (different element sizes)")
    if want > have and a.shape[-1] % (want // have):
        raise RuntimeError(
            f"self.size(-1) must be divisible by {want // have} to view {names} (different element "
            f"sizes), but got {a.shape[-1]}"
        )
    return wrap(array_module(device_of(a)).ascontiguousarray(a).view(dt.np))


def view_as(input: Any, other: Any) -> Any:
    """``input.view(other.shape)``."""
    return reshape(input, other._data.shape)


reshape_as = view_as


def permute(input: Any, *sizes: Any, dims: Any = None) -> Any:
    """Reorder the dimensions."""
    dims = shape_args(sizes_or_keyword("permute", "dims", sizes, dims))
    n = input._data.ndim
    if len(dims) != n:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
            f"len(dims) = {len(dims)}"
        )
    axes = tuple(wrap_dim(d, n) for d in dims)
    if len(set(axes)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute.apply(input, axes)


def transpose(input: Any, dim0: int, dim1: int) -> Any:
    """Swap two dimensions."""
    n = input._data.ndim
    perm = list(range(n))
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    if n == 0:
        return _alias(input)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return Permute.apply(input, tuple(perm))


def swapaxes(input: Any, axis0: int, axis1: int) -> Any:
    """``transpose`` (NumPy's name and argument names)."""
    return transpose(input, axis0, axis1)


def t(input: Any) -> Any:
    """Transpose a tensor of at most 2 dims."""
    n = input._data.ndim
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return transpose(input, 0, -1) if n == 2 else _alias(input)


def T(input: Any) -> Any:  # noqa: N802 - torch's name
    """All dimensions reversed."""
    return Permute.apply(input, tuple(reversed(range(input._data.ndim))))


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    """Merge dims ``start_dim..end_dim`` into one."""
    shape = input._data.shape
    if not shape:
        return reshape(input, 1)
    s, e = wrap_dim(start_dim, len(shape)), wrap_dim(end_dim, len(shape))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    merged = 1
    for n in shape[s : e + 1]:
        merged *= n
    target = shape[:s] + (merged,) + shape[e + 1 :]  # reshape's checks hold by construction
    return _alias(input) if target == shape else Reshape.apply(input, target)


def unflatten(input: Any, dim: int, sizes: Any) -> Any:
    """Split dim ``dim`` into ``sizes`` (one may be -1)."""
    shape = input._data.shape
    d = wrap_dim(dim, len(shape))
    sizes = tuple(int(s) for s in sizes)
    try:
        sizes = _infer_shape(sizes, shape[d])
    except RuntimeError:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
            f"({shape[d]}) in the input tensor"
        ) from None
    return reshape(input, shape[:d] + sizes + shape[d + 1 :])


def unsqueeze(input: Any, dim: int) -> Any:
    """Insert a size-1 dim at ``dim``."""
    shape = input._data.shape
    d = wrap_dim(dim, len(shape) + 1)
    return reshape(input, shape[:d] + (1,) + shape[d:])


def squeeze(input: Any, *dims: Any, dim: Any = None) -> Any:
    """Drop size-1 dims (only those in ``dim`` when given; ``x.squeeze(0, 2)`` too)."""
    if dims:
        if dim is not None:
            raise TypeError("squeeze() got multiple values for argument 'dim'")
        dim = dims[0] if len(dims) == 1 else dims
    shape = input._data.shape
    if dim is None:
        return reshape(input, tuple(s for s in shape if s != 1))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    axes = {wrap_dim(d, len(shape)) for d in dims}
    return reshape(input, tuple(s for i, s in enumerate(shape) if not (i in axes and s == 1)))


def expand(input: Any, *sizes: Any, size: Any = None, implicit: bool = False) -> Any:
    """Broadcast to ``sizes`` without copying (-1 keeps a dim); ``implicit`` is torch-internal."""
    sizes = shape_args(sizes_or_keyword("expand", "size", sizes, size))
    shape = input._data.shape
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(
            f"expand({legacy_type_name(input._data.dtype)}{{{list(shape)}}}, size={list(sizes)}): the number "
            "of sizes provided (%d) must be greater or equal to the number of dimensions in the "
            "tensor (%d)" % (len(sizes), len(shape))
        )
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                    f"non-existing dimension {i}"
                )
            target.append(s)
            continue
        have = shape[i - lead]
        want = have if s == -1 else s
        if have != want and have != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({want}) must match the existing size ({have}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                f"Tensor sizes: {list(shape)}"
            )
        target.append(want)
    return Expand.apply(input, tuple(target))


def expand_as(input: Any, other: Any) -> Any:
    """``input.expand(other.shape)``."""
    return expand(input, other._data.shape)


def broadcast_to(input: Any, *sizes: Any, size: Any = None) -> Any:
    """``input.expand(size)``."""
    return expand(input, *sizes_or_keyword("broadcast_to", "size", sizes, size))


def flip(input: Any, *sizes: Any, dims: Any = None) -> Any:
    """Reverse the order of elements along ``dims``."""
    dims = shape_args(sizes_or_keyword("flip", "dims", sizes, dims))
    axes = tuple(wrap_dim(d, input._data.ndim) for d in dims)
    for i, d in enumerate(axes):
        if d in axes[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return Flip.apply(input, axes)


def roll(input: Any, shifts: Any, dims: Any = None) -> Any:
    """Shift elements cyclically along ``dims`` (the flattened tensor when None or empty)."""
    if dims is None or (isinstance(dims, (tuple, list)) and not dims):
        return reshape(Roll.apply(flatten(input), shifts, 0), input._data.shape)
    n_shifts = 1 if isinstance(shifts, int) else len(shifts)
    n_dims = 1 if isinstance(dims, int) else len(dims)
    if n_shifts != n_dims:
        raise RuntimeError(f"shifts and dimensions must align. shifts: {n_shifts}, dims:{n_dims}")
    if isinstance(dims, int):
        return Roll.apply(input, int(shifts if isinstance(shifts, int) else shifts[0]),
                          wrap_dim(dims, input._data.ndim))
    shifts = (shifts,) if isinstance(shifts, int) else shifts
    axes = tuple(wrap_dim(d, input._data.ndim) for d in dims)
    return Roll.apply(input, tuple(int(s) for s in shifts), axes)


def repeat(input: Any, *sizes: Any, repeats: Any = None) -> Any:
    """Tile the tensor ``sizes[i]`` times along each dim (leading new dims allowed)."""
    reps = shape_args(sizes_or_keyword("repeat", "repeats", sizes, repeats))
    if len(reps) < input._data.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            "of tensor"
        )
    return Repeat.apply(input, reps)


def tile(input: Any, *sizes: Any, dims: Any = None) -> Any:
    """Like ``repeat``, padding ``dims`` with leading 1s when it is shorter."""
    reps = shape_args(sizes_or_keyword("tile", "dims", sizes, dims))
    reps = (1,) * (input._data.ndim - len(reps)) + reps
    return Repeat.apply(input, reps)


def movedim(input: Any, source: Any, destination: Any) -> Any:
    """Move dims ``source`` to positions ``destination``."""
    n = input._data.ndim
    src = [wrap_dim(d, n) for d in ((source,) if isinstance(source, int) else source)]
    dst = [wrap_dim(d, n) for d in ((destination,) if isinstance(destination, int) else destination)]
    order = [i for i in range(n) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return Permute.apply(input, tuple(order))


def contiguous(input: Any, memory_format: Any = contiguous_format) -> Any:
    """``input`` itself: mininn tensors need no stride bookkeeping."""
    return input
