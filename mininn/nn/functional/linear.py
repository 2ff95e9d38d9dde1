"""``linear`` (``y = x @ weight.T + bias`` as one fused op: one GEMM forward, two backward) and
``bilinear`` (``y = x1^T W x2 + bias``)."""

# ruff: noqa: A001, A002 - torch names the tensor argument `input`

from __future__ import annotations

from typing import Any

import numpy as np

from mininn._functions._util import unbroadcast
from mininn._tensor_core import TensorCore
from mininn.autograd.grad_mode import _state
from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import c_name, requires, scalar_name, wrap_dim, xp_of
from mininn.tensor import Tensor

__all__ = ["linear", "bilinear"]


_ndarray = np.ndarray


def _linear_array(x2: Any, w: Any, b: Any) -> Any:
    """``x2 @ w.T + b`` for a 2-D ``x2``: the one kernel of the recorded and the untracked path."""
    out = x2 @ w.T
    if b is not None:
        out += b
    return out


class _Linear(ArrayFunction):
    @staticmethod
    def forward(ctx: Context, x: Any, w: Any, b: Any, need: tuple[bool, bool, bool]) -> Any:
        x2 = x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x
        out = _linear_array(x2, w, b)
        if need[0] or need[1] or need[2]:
            ctx.save_for_backward(x2 if need[1] else None, w if need[0] else None)
            ctx.meta = (x.shape, need, None if b is None else b.shape)
        return out.reshape(x.shape[:-1] + (w.shape[0],))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        x2, w = ctx.saved_tensors
        x_shape, need, b_shape = ctx.meta
        g2 = g.reshape(int(np.prod(x_shape[:-1])), g.shape[-1])  # -1 is ambiguous for 0 outputs
        gx = (g2 @ w).reshape(x_shape) if need[0] else None
        gw = g2.T @ x2 if need[1] else None
        gb = unbroadcast(g2.sum(axis=0), b_shape) if need[2] else None
        return gx, gw, gb, None


def _check_dtypes(input: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """torch's checks: with a bias as ``addmm(bias, input, weight.T)``, else as ``matmul``."""
    if bias is None:
        if weight.dtype != input.dtype:
            raise RuntimeError(
                f"expected m1 and m2 to have the same dtype, but got: {c_name(input)} != {c_name(weight)}"
            )
        return
    for name, first in (("self", bias), ("mat1", input)):
        if first.dtype != weight.dtype:
            raise RuntimeError(
                f"{name} and mat2 must have the same dtype, but got {scalar_name(first)} and "
                f"{scalar_name(weight)}"
            )


def _untracked(t: Any) -> bool:
    """Whether ``t`` (a Tensor) enters no graph: no grad wanted, no history, not a view."""
    return not t._requires_grad and t.grad_fn is None and t._view is None


def _linear_fast(input: Any, weight: Any, bias: Any) -> Tensor | None:
    """``linear`` straight on the arrays when autograd records nothing: cpu Tensors of one dtype,
    a 2-D weight that fits, a 1-D bias of ``out_features`` or none. None otherwise, and the general
    path then checks the arguments and raises torch's message.

    No ``ArrayFunction``, Context or shape checks through ``Tensor`` properties: at batch 1 these
    cost as much as the product. The arithmetic is ``_Linear``'s (``_linear_array``), so the result
    is bitwise the one the general path gives.
    """
    if not (isinstance(input, TensorCore) and isinstance(weight, TensorCore)):
        return None
    x = input._data
    w = weight._data
    if type(x) is not _ndarray or type(w) is not _ndarray or w.ndim != 2:
        return None
    dt = w.dtype  # dtypes compared by identity first: ``!=`` between dtypes costs a conversion
    if x.dtype is not dt and x.dtype != dt:
        return None
    if bias is None:
        b = None
    elif isinstance(bias, TensorCore):
        b = bias._data
        if type(b) is not _ndarray or b.ndim != 1 or b.shape[0] != w.shape[0]:
            return None
        if b.dtype is not dt and b.dtype != dt:
            return None
    else:
        return None
    if _state.enabled and not (
        _untracked(input) and _untracked(weight) and (bias is None or _untracked(bias))
    ):
        return None
    nd = x.ndim
    if nd == 2:
        if x.shape[1] != w.shape[1]:
            return None
        return Tensor(_linear_array(x, w, b))
    if nd == 0 or x.shape[-1] != w.shape[1]:
        return None
    out = _linear_array(x.reshape(-1, x.shape[-1]), w, b)
    return Tensor(out.reshape(x.shape[:-1] + (w.shape[0],)))


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """Apply ``input @ weight.T + bias``; ``input`` is ``(*, in_features)``."""
    out = _linear_fast(input, weight, bias)
    if out is not None:
        return out
    if input.ndim == 0 or weight.ndim == 0:
        raise RuntimeError(
            f"both arguments to linear need to be at least 1D, but they are {input.ndim}D and {weight.ndim}D"
        )
    in_features = input.shape[-1]
    if weight.ndim != 2 or weight.shape[1] != in_features:
        rows = int(np.prod(input.shape[:-1])) if input.ndim > 1 else 1
        w_shape = tuple(weight.shape) + (1,) * (2 - weight.ndim)
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows}x{in_features} and "
            f"{w_shape[1]}x{w_shape[0]})"
        )
    if bias is not None and bias.ndim == 1 and bias.shape[0] not in (1, weight.shape[0]):
        target = list(input.shape[:-1]) + [weight.shape[0]]
        raise RuntimeError(
            f"The expanded size of the tensor ({weight.shape[0]}) must match the existing size "
            f"({bias.shape[0]}) at non-singleton dimension {len(target) - 1}.  Target sizes: "
            f"{target}.  Tensor sizes: [{bias.shape[0]}]"
        )
    _check_dtypes(input, weight, bias)
    need = (requires(input), requires(weight), requires(bias))
    return _Linear.apply(input, weight, bias, need)


class _Bilinear(ArrayFunction):
    """``out[n, o] = sum_ij x1[n, i] w[o, i, j] x2[n, j] + b[o]`` on flattened batch dims."""

    @staticmethod
    def forward(ctx: Context, x1: Any, x2: Any, w: Any, b: Any) -> Any:
        xp = xp_of(x1)
        batch = x1.shape[:-1]
        a = x1.reshape(-1, x1.shape[-1])
        c = x2.reshape(-1, x2.shape[-1])
        aw = xp.einsum("ni,oij->noj", a, w, optimize=True)  # (N, out, in2)
        out = xp.einsum("noj,nj->no", aw, c, optimize=True)
        if b is not None:
            out += b
        ctx.save_for_backward(a, c, w, aw)
        ctx.meta = (x1.shape, x2.shape)
        return out.reshape(batch + (w.shape[0],))

    @staticmethod
    def backward(ctx: Context, g: Any) -> Any:
        a, c, w, aw = ctx.saved_tensors
        shape1, shape2 = ctx.meta
        xp = xp_of(g)
        g2 = g.reshape(-1, g.shape[-1])
        need = ctx.needs_input_grad
        gx1 = xp.einsum("no,oij,nj->ni", g2, w, c, optimize=True).reshape(shape1) if need[0] else None
        gx2 = xp.einsum("no,noj->nj", g2, aw, optimize=True).reshape(shape2) if need[1] else None
        gw = xp.einsum("no,ni,nj->oij", g2, a, c, optimize=True) if need[2] else None
        gb = g2.sum(axis=0) if need[3] else None
        return gx1, gx2, gw, gb


def _check_bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """torch's checks, in torch's order: dtypes, ranks, batch dims, feature sizes, bias size."""
    tensors = [("input1", input1), ("input2", input2), ("weight", weight)]
    if bias is not None:
        tensors.append(("bias", bias))
    if len({t.dtype for _, t in tensors}) > 1:
        got = ", ".join(f"{name}: {c_name(t)}" for name, t in tensors)
        raise RuntimeError(f"All tensors must have the same dtype, got {got}")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for k in range(input1.ndim - 1):
        if input1.shape[k] != input2.shape[k]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {k}: got "
                               f"{input1.shape[k]} and {input2.shape[k]}")
    if input1.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    for name, x, dim in (("input1", input1, 1), ("input2", input2, 2)):
        expected = weight.shape[wrap_dim(dim, weight.ndim)]
        if x.shape[-1] != expected:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {x.shape[-1]} but "
                               f"expected {expected}")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != weight.shape[0]):
        got = bias.shape[0] if bias.ndim else 1
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {got} but expected "
                           f"{weight.shape[0]}")


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y = x1^T weight x2 + bias`` for ``x1`` ``(*, in1)``, ``x2`` ``(*, in2)`` and ``weight``
    ``(out, in1, in2)``; the batch dims ``*`` must agree."""
    _check_bilinear(input1, input2, weight, bias)
    return _Bilinear.apply(input1, input2, weight, bias)
