"""Recurrent kernels: one layer-direction of an Elman RNN, LSTM or GRU as one autograd op.

The sequence is packed: ``x`` is ``(N, input_size)`` with the rows of each time
step together, ``batch_sizes[t]`` rows at step ``t`` (decreasing), as in a
``PackedSequence``; an ordinary ``(T, B, *)`` batch is the case ``[B] * T``.
The batch rows at step ``t`` are the first ``batch_sizes[t]`` sequences, so the
running state of a finished sequence simply stops being updated and ends as
its final state, in either direction.

Inside, everything runs transposed, features by batch: the state is
``(hidden, B)`` and the step product is ``W_hh @ h``, which BLAS does faster
than ``h @ W_hh^T`` for a small batch, and every gate is a contiguous block of
rows. Forward: one matrix product projects every time step's input up front
(``W_ih @ x^T`` and the biases, ``(gates, N)``), then the loop over time does
one product per step for all gates and the gate math in place on
preallocated buffers. Backward is backpropagation through time in the same
loop reversed; the weight gradients are again one product each over all steps
(``dgates @ x``, ``dgates @ h_prev^T``). Outputs go back as transposed views.

Gate layouts are torch's: LSTM ``(i, f, g, o)``, GRU ``(r, z, n)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mininn.autograd.graph import ArrayFunction, Context
from mininn.nn.functional._utils import needs_grad
from mininn.tensor import Tensor

__all__ = ["recurrent_layer"]

Steps = list[tuple[int, int, int]]


def _steps(batch_sizes: Sequence[int], reverse: bool) -> Steps:
    """``(first row, end row, batch size)`` of each time step, in processing order."""
    ends = np.cumsum(batch_sizes).tolist()
    steps = [(end - bs, end, bs) for end, bs in zip(ends, batch_sizes)]
    return steps[::-1] if reverse else steps


def _sigmoid_(a: Any) -> None:
    """``a = sigmoid(a)`` in place, as ``(tanh(a / 2) + 1) / 2`` (no overflow)."""
    np.multiply(a, 0.5, out=a)
    np.tanh(a, out=a)
    np.multiply(a, 0.5, out=a)
    np.add(a, 0.5, out=a)


def _columns(state: Any, batch: int, size: int, like: Any) -> Any:
    """The initial state as a writable ``(size, batch)`` array, zeros when none was given."""
    if state is None:
        return np.zeros((size, batch), dtype=like.dtype)
    return np.array(state.T, dtype=like.dtype, order="C", copy=True)


def _rows_first(array: Any) -> Any:
    """A ``(N, size)`` gradient as a contiguous ``(size, N)`` array (a copy that may be written)."""
    return np.array(array.T, order="C", copy=True)


def _weight_grads(ctx: Context, dx_gates: Any, dh_gates: Any, x: Any, h_prev: Any, w_ih: Any,
                  order: Any = None) -> tuple[Any, ...]:
    """Gradients of ``x, w_ih, w_hh, b_ih, b_hh`` from the pre-activation gate gradients of all steps.

    ``dx_gates``/``dh_gates`` are ``(gates, N)`` as ``W_ih`` and ``W_hh`` see them; with ``order``
    their rows are torch's gate rows ``order`` (the LSTM kernel's own gate order).
    """
    need = ctx.needs_input_grad
    back = slice(None) if order is None else np.argsort(order)
    gx = dx_gates.T @ (w_ih if order is None else w_ih[order]) if need[0] else None
    gw_ih = (dx_gates @ x)[back] if need[3] else None
    gw_hh = (dh_gates @ h_prev.T)[back] if need[4] else None
    gb_ih = dx_gates.sum(1)[back] if need[5] else None
    gb_hh = dh_gates.sum(1)[back] if need[6] else None
    return gx, gw_ih, gw_hh, gb_ih, gb_hh


# ---- Elman RNN ------------------------------------------------------------------------------


def _elman_forward(ctx: Context, x: Any, h0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                   steps: Steps, relu: bool, keep: bool) -> tuple[Any, Any]:
    out = w_ih @ x.T  # (H, N): pre-activations, then the outputs
    if b_ih is not None:
        out += (b_ih + b_hh)[:, None]
    batch = max(s[2] for s in steps)
    h = _columns(h0, batch, w_hh.shape[1], x)
    h_prev = np.empty_like(out) if keep else None
    for r0, r1, bs in steps:
        hp = h[:, :bs]
        if keep:
            h_prev[:, r0:r1] = hp
        a = w_hh @ hp
        a += out[:, r0:r1]
        if relu:
            np.maximum(a, 0, out=a)
        else:
            np.tanh(a, out=a)
        hp[...] = a
        out[:, r0:r1] = a
    if keep:
        ctx.save_for_backward(x, w_ih, w_hh, out, h_prev)
    return out.T, h.T


def _elman_backward(ctx: Context, g_out: Any, g_h: Any, steps: Steps, relu: bool) -> tuple[Any, ...]:
    x, w_ih, w_hh, out, h_prev = ctx.saved_tensors
    dh = _rows_first(g_h)  # (H, B)
    g_out = _rows_first(g_out)  # (H, N)
    whh_t = np.ascontiguousarray(w_hh.T)
    dpre = np.empty_like(out)
    buf = np.empty_like(dh)
    for r0, r1, bs in reversed(steps):
        d = dh[:, :bs]
        d += g_out[:, r0:r1]
        dp = buf[:, :bs]
        y = out[:, r0:r1]
        if relu:
            np.multiply(d, y > 0, out=dp)
        else:
            np.multiply(y, y, out=dp)
            np.subtract(1, dp, out=dp)
            dp *= d
        dpre[:, r0:r1] = dp
        np.matmul(whh_t, dp, out=d)
    gx, gw_ih, gw_hh, gb_ih, gb_hh = _weight_grads(ctx, dpre, dpre, x, h_prev, w_ih)
    return gx, dh.T, None, gw_ih, gw_hh, gb_ih, gb_hh, None


# ---- LSTM -----------------------------------------------------------------------------------
# Inside the kernel the gates are reordered to (i, f, o, g), so that the three sigmoid gates are
# one block, and the forward weights of those gates are halved: sigmoid(a) = (tanh(a / 2) + 1) / 2,
# so a single tanh over all four gates activates them all.


def _lstm_order(n_hid: int) -> np.ndarray:
    """Torch's gate rows ``(i, f, g, o)`` reordered to ``(i, f, o, g)``."""
    return np.r_[0:2 * n_hid, 3 * n_hid:4 * n_hid, 2 * n_hid:3 * n_hid]


def _lstm_forward(ctx: Context, x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                  w_hr: Any, steps: Steps, keep: bool) -> tuple[Any, Any, Any]:
    n_hid = w_hh.shape[0] // 4
    n_out = w_hh.shape[1]  # hidden_size, or proj_size with a projection
    h2, h3 = 2 * n_hid, 3 * n_hid
    order = _lstm_order(n_hid)
    scale = np.ones((4 * n_hid, 1), dtype=x.dtype)
    scale[:h3] = 0.5
    gates = (w_ih[order] * scale) @ x.T  # (4H, N): pre-activations; the activations when kept
    if b_ih is not None:
        gates += ((b_ih + b_hh)[order] * scale[:, 0])[:, None]
    whh = np.ascontiguousarray(w_hh[order] * scale)
    batch = max(s[2] for s in steps)
    h = _columns(h0, batch, n_out, x)  # (P, B)
    c = _columns(c0, batch, n_hid, x)  # (H, B)
    rows = x.shape[0]
    out = np.empty((n_out, rows), dtype=x.dtype)
    kept = {}
    if keep:
        kept = {name: np.empty((size, rows), dtype=x.dtype) for name, size in
                (("h_prev", n_out), ("c_prev", n_hid), ("tanh_c", n_hid))}
    h_raw = np.empty((n_hid, rows), dtype=x.dtype) if keep and w_hr is not None else None
    ig = np.empty((n_hid, batch), dtype=x.dtype)
    tanh_c = np.empty((n_hid, batch), dtype=x.dtype)
    for r0, r1, bs in steps:
        hp, cp = h[:, :bs], c[:, :bs]
        if keep:
            kept["h_prev"][:, r0:r1] = hp
            kept["c_prev"][:, r0:r1] = cp
        g = whh @ hp  # (4H, bs)
        g += gates[:, r0:r1]
        np.tanh(g, out=g)
        sig = g[:h3]
        sig *= 0.5
        sig += 0.5
        cp *= g[n_hid:h2]  # c = f * c_prev + i * g
        np.multiply(g[:n_hid], g[h3:], out=ig[:, :bs])
        cp += ig[:, :bs]
        tc = tanh_c[:, :bs]
        np.tanh(cp, out=tc)
        if w_hr is None:
            np.multiply(g[h2:h3], tc, out=hp)
        else:
            hr = g[h2:h3] * tc
            np.matmul(w_hr, hr, out=hp)
        out[:, r0:r1] = hp
        if keep:
            gates[:, r0:r1] = g
            kept["tanh_c"][:, r0:r1] = tc
            if h_raw is not None:
                h_raw[:, r0:r1] = hr
    if keep:
        ctx.save_for_backward(x, w_ih, w_hh, w_hr, gates, kept["c_prev"], kept["tanh_c"], kept["h_prev"],
                              h_raw)
    return out.T, h.T, c.T


def _lstm_backward(ctx: Context, g_out: Any, g_h: Any, g_c: Any, steps: Steps) -> tuple[Any, ...]:
    x, w_ih, w_hh, w_hr, gates, c_prev, tanh_c, h_prev, h_raw = ctx.saved_tensors
    n_hid = c_prev.shape[0]
    h2, h3 = 2 * n_hid, 3 * n_hid
    order = _lstm_order(n_hid)
    # kernel gate order, unscaled: gradients are taken w.r.t. the true pre-activations
    whh_t = np.ascontiguousarray(w_hh[order].T)  # (P, 4H)
    whr_t = None if w_hr is None else np.ascontiguousarray(w_hr.T)  # (H, P)
    dh = _rows_first(g_h)  # (P, B)
    dc = _rows_first(g_c)  # (H, B)
    g_out = _rows_first(g_out)  # (P, N)
    batch = dh.shape[1]
    dgates = np.empty_like(gates)
    d_proj = np.empty_like(h_prev) if w_hr is not None else None
    g_buf = np.empty((4 * n_hid, batch), dtype=gates.dtype)
    dg_buf = np.empty((4 * n_hid, batch), dtype=gates.dtype)
    tmp = np.empty((n_hid, batch), dtype=gates.dtype)
    sig_d = np.empty((h3, batch), dtype=gates.dtype)
    for r0, r1, bs in reversed(steps):
        d = dh[:, :bs]
        d += g_out[:, r0:r1]
        if whr_t is not None:
            d_proj[:, r0:r1] = d
            d = whr_t @ d  # (H, bs): the gradient of the unprojected h
        g, dg = g_buf[:, :bs], dg_buf[:, :bs]
        g[...] = gates[:, r0:r1]
        i, f, o, gg = g[:n_hid], g[n_hid:h2], g[h2:h3], g[h3:]
        tc = tanh_c[:, r0:r1]
        dct = dc[:, :bs]
        t = tmp[:, :bs]
        np.multiply(d, tc, out=dg[h2:h3])  # d o
        np.multiply(tc, tc, out=t)
        np.subtract(1, t, out=t)
        t *= o
        t *= d
        dct += t  # d c_t
        np.multiply(dct, gg, out=dg[:n_hid])  # d i
        np.multiply(dct, c_prev[:, r0:r1], out=dg[n_hid:h2])  # d f
        np.multiply(dct, i, out=dg[h3:])  # d g
        dct *= f  # d c_prev
        # through the activations: sigmoid' = s (1 - s), tanh' = 1 - t^2
        s, sd = g[:h3], sig_d[:, :bs]
        np.subtract(1, s, out=sd)
        sd *= s
        dg[:h3] *= sd
        np.multiply(gg, gg, out=t)
        np.subtract(1, t, out=t)
        dg[h3:] *= t
        dgates[:, r0:r1] = dg
        dh[:, :bs] = whh_t @ dg
    gx, gw_ih, gw_hh, gb_ih, gb_hh = _weight_grads(ctx, dgates, dgates, x, h_prev, w_ih, order)
    gw_hr = d_proj @ h_raw.T if d_proj is not None and ctx.needs_input_grad[7] else None
    return gx, dh.T, dc.T, gw_ih, gw_hh, gb_ih, gb_hh, gw_hr


# ---- GRU ------------------------------------------------------------------------------------


def _gru_forward(ctx: Context, x: Any, h0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                 steps: Steps, keep: bool) -> tuple[Any, Any]:
    n_hid = w_hh.shape[1]
    h2 = 2 * n_hid
    gates = w_ih @ x.T  # (3H, N): x's part of r, z, n; the activations r, z, n when kept
    b_hn = None
    if b_ih is not None:
        gates += b_ih[:, None]
        gates[:h2] += b_hh[:h2, None]
        b_hn = b_hh[h2:, None]
    batch = max(s[2] for s in steps)
    h = _columns(h0, batch, n_hid, x)  # (H, B)
    out = np.empty((n_hid, x.shape[0]), dtype=x.dtype)
    h_prev = np.empty_like(out) if keep else None
    hn_all = np.empty_like(out) if keep else None  # W_hn h + b_hn of each step
    n_buf = np.empty((n_hid, batch), dtype=x.dtype)
    for r0, r1, bs in steps:
        hp = h[:, :bs]
        if keep:
            h_prev[:, r0:r1] = hp
        hh = w_hh @ hp  # (3H, bs)
        rz, hn = hh[:h2], hh[h2:]
        rz += gates[:h2, r0:r1]
        _sigmoid_(rz)
        if b_hn is not None:
            hn += b_hn
        n = n_buf[:, :bs]
        np.multiply(rz[:n_hid], hn, out=n)  # n = tanh(x_n + r * (W_hn h + b_hn))
        n += gates[h2:, r0:r1]
        np.tanh(n, out=n)
        hp -= n  # h = n + z (h_prev - n)
        hp *= rz[n_hid:]
        hp += n
        out[:, r0:r1] = hp
        if keep:
            gates[:h2, r0:r1] = rz
            gates[h2:, r0:r1] = n
            hn_all[:, r0:r1] = hn
    if keep:
        ctx.save_for_backward(x, w_ih, w_hh, gates, h_prev, hn_all)
    return out.T, h.T


def _gru_backward(ctx: Context, g_out: Any, g_h: Any, steps: Steps) -> tuple[Any, ...]:
    x, w_ih, w_hh, gates, h_prev, hn_all = ctx.saved_tensors
    n_hid = h_prev.shape[0]
    h2 = 2 * n_hid
    dh = _rows_first(g_h)  # (H, B)
    g_out = _rows_first(g_out)  # (H, N)
    whh_t = np.ascontiguousarray(w_hh.T)
    batch = dh.shape[1]
    dh_gates = np.empty_like(gates)  # pre-activation gradients as W_hh sees them: (r, z, hn)
    dn_all = np.empty_like(h_prev)  # the n pre-activation gradient, as W_ih sees it
    g_buf = np.empty((3 * n_hid, batch), dtype=gates.dtype)
    dg_buf = np.empty_like(g_buf)
    dn_buf = np.empty_like(dh)
    for r0, r1, bs in reversed(steps):
        d = dh[:, :bs]
        d += g_out[:, r0:r1]
        g, dg = g_buf[:, :bs], dg_buf[:, :bs]
        g[...] = gates[:, r0:r1]
        r, z, n = g[:n_hid], g[n_hid:h2], g[h2:]
        dz = dg[n_hid:h2]
        np.subtract(h_prev[:, r0:r1], n, out=dz)
        dz *= d
        dz *= z * (1 - z)
        dn = dn_buf[:, :bs]
        np.subtract(1, z, out=dn)
        dn *= d
        dn *= 1 - n * n
        dr = dg[:n_hid]
        np.multiply(dn, hn_all[:, r0:r1], out=dr)
        dr *= r * (1 - r)
        np.multiply(dn, r, out=dg[h2:])
        d *= z
        d += whh_t @ dg
        dh_gates[:, r0:r1] = dg
        dn_all[:, r0:r1] = dn
    dx_gates = dh_gates.copy()
    dx_gates[h2:] = dn_all
    gx, gw_ih, gw_hh, gb_ih, gb_hh = _weight_grads(ctx, dx_gates, dh_gates, x, h_prev, w_ih)
    return gx, dh.T, None, gw_ih, gw_hh, gb_ih, gb_hh, None


# ---- the op ---------------------------------------------------------------------------------


class _Recurrence(ArrayFunction):
    """One layer-direction over a packed sequence: ``(output rows, final h[, final c])``."""

    @staticmethod
    def forward(ctx: Context, x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                w_hr: Any, *, mode: str, batch_sizes: tuple[int, ...], reverse: bool, keep: bool) -> Any:
        steps = _steps(batch_sizes, reverse)
        ctx.steps, ctx.mode = steps, mode
        if mode == "LSTM":
            return _lstm_forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, steps, keep)
        if mode == "GRU":
            return _gru_forward(ctx, x, h0, w_ih, w_hh, b_ih, b_hh, steps, keep)
        return _elman_forward(ctx, x, h0, w_ih, w_hh, b_ih, b_hh, steps, mode == "RNN_RELU", keep)

    @staticmethod
    def backward(ctx: Context, *grads: Any) -> Any:
        if ctx.mode == "LSTM":
            return _lstm_backward(ctx, *grads, ctx.steps)
        if ctx.mode == "GRU":
            return _gru_backward(ctx, *grads, ctx.steps)
        return _elman_backward(ctx, *grads, ctx.steps, ctx.mode == "RNN_RELU")


def recurrent_layer(mode: str, x: Tensor, batch_sizes: Sequence[int], h0: Tensor | None, c0: Tensor | None,
                    weights: Sequence[Tensor | None], reverse: bool = False) -> tuple[Tensor, ...]:
    """Run one recurrent layer-direction over packed rows ``x`` ``(N, input_size)``.

    Args:
        mode: ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.
        x: the rows of all time steps, ``batch_sizes[t]`` rows for step ``t``.
        batch_sizes: rows per time step, non-increasing.
        h0, c0: initial states ``(batch_sizes[0], size)``; ``None`` for zeros (``c0``: LSTM only).
        weights: ``(w_ih, w_hh, b_ih, b_hh, w_hr)``, ``None`` for the ones the layer lacks.
        reverse: run from the last time step to the first.

    Returns:
        ``(output rows (N, hidden), final h)``, and the final ``c`` for an LSTM.
    """
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    keep = needs_grad(x, h0, c0, *weights)  # what backward needs is only stored when it will run
    return _Recurrence.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode=mode,
                             batch_sizes=tuple(batch_sizes), reverse=reverse, keep=keep)
