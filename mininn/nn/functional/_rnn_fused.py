"""Recurrent layers without autograd: every layer and direction on NumPy arrays, nothing recorded.

The path for a forward that no gradient will flow through (``no_grad``, or nothing requires
grad). Per layer, one matrix product projects every time step's input for all directions
(``x @ W_ih^T`` and the biases); the time loop then does one product per step for all gates
and the gate arithmetic in place (``out=``) on preallocated buffers, and writes each step's
``h`` straight into the layer's output buffer, which is also where the next step reads it.

When every time step has the same batch (a tensor batch, or a packed batch of equal lengths)
and the batch is small, the two directions of a layer run in the same loop: step ``s``
advances the forward direction at time ``s`` and the reverse one at time ``T - 1 - s``, with
one block-diagonal product and gate-major buffers (gate ``k`` of both directions side by
side), so a batch-1 bidirectional layer makes the NumPy calls of one direction. NumPy's
per-call cost, not arithmetic, bounds a batch-1 step: this halves it. Larger batches run the
directions one after the other (the block-diagonal product's zeros would cost more than the
calls saved); packed batches of unequal lengths run each direction on a state buffer whose
first ``batch_sizes[t]`` rows advance at step ``t``.

Layout is rows (batch, features). Gate layouts are torch's, except that the LSTM runs its
gates as ``(i, o, f, g)`` and the sigmoid gates' weights are halved, so that one ``tanh``
over all gates activates them all (``sigmoid(a) = (tanh(a / 2) + 1) / 2``); the GRU halves
``r`` and ``z`` the same way. The cells (one step) do the same arithmetic without the
reordering, which would cost more than it saves for one step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["PreparedWeights", "fused_cell", "fused_layers"]

Weights = tuple[Any, Any, Any, Any, Any]  # (w_ih, w_hh, b_ih, b_hh, w_hr); None where absent
_LSTM_ORDER = [0, 3, 1, 2]  # torch's (i, f, g, o) -> (i, o, f, g): sigmoid gates first, [f, g] adjacent
_matmul, _dot, _add, _sub, _mul = np.matmul, np.dot, np.add, np.subtract, np.multiply
_tanh, _max = np.tanh, np.maximum


# ---- weights, prepared per call for a group of directions -----------------------------------
# A group of D directions runs as one: its state is (B, D*P), its gates (B, G*D*H) gate-major
# (gate k of every direction side by side), so each gate is one block for all directions; the
# recurrent weight is block-diagonal (D*P, G*D*H). The LSTM's gates are (i, o, f, g), and the
# rows of the sigmoid gates are halved.


_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_HALVED = {"LSTM": 3, "GRU": 2, "RNN_TANH": 0, "RNN_RELU": 0}  # leading gates in kernel order


def _gather(mode: str, w: Any, n_hid: int) -> Any:
    """One direction's torch gate rows ``w`` (G*H, ...) as ``(G, H, ...)`` in kernel order."""
    w = w.reshape(_GATES[mode], n_hid, *w.shape[1:])
    return w if mode != "LSTM" else w[_LSTM_ORDER]


def _prepare(mode: str, weights: Sequence[Weights]) -> dict[str, Any]:
    """A group's weights: ``w_ih_t`` (I, G*D*H), ``w_hh_t`` (D*P, G*D*H), ``bias``, ``b_hn``, ``w_hr_t``.

    Gate-major, in kernel order, the sigmoid gates' rows halved; a few calls per direction.
    """
    lead, gates, halved = len(weights), _GATES[mode], _HALVED[mode]
    (rows, n_out), n_in, dtype = weights[0][1].shape, weights[0][0].shape[1], weights[0][1].dtype
    n_hid = rows // gates
    scale = np.ones((gates, 1), dtype=dtype)
    scale[:halved] = 0.5
    w_ih = np.empty((gates, lead, n_hid, n_in), dtype=dtype)
    blocks = np.zeros((lead, n_out, gates, lead, n_hid), dtype=dtype)  # block-diagonal (D*P, G*D*H)
    for d, w in enumerate(weights):  # copied and scaled in one pass each
        _mul(_gather(mode, w[0], n_hid), scale[:, :, None], w_ih[:, d])
        _mul(_gather(mode, w[1], n_hid).transpose(2, 0, 1), scale, blocks[d, :, :, d])
    prep: dict[str, Any] = {
        "n_hid": n_hid, "lead": lead, "b_hn": None, "bias": None, "w_hr_t": None,
        "w_ih_t": w_ih.reshape(gates * lead * n_hid, n_in).T,
        "w_hh_t": blocks.reshape(lead * n_out, gates * lead * n_hid),
    }
    if weights[0][2] is not None:
        bias = np.empty((gates, lead, n_hid), dtype=dtype)
        for d, w in enumerate(weights):
            b_hh = w[3]
            if mode == "GRU":  # b_hn stays inside r * (W_hn h + b_hn)
                b_hh = np.concatenate([b_hh[:2 * n_hid], np.zeros(n_hid, dtype=dtype)])
            _mul(_gather(mode, w[2] + b_hh, n_hid), scale, bias[:, d])
        prep["bias"] = bias.reshape(-1)
        if mode == "GRU":
            prep["b_hn"] = np.concatenate([w[3][2 * n_hid:] for w in weights])
    if weights[0][4] is not None:
        w_hr = np.zeros((lead, n_hid, lead, n_out), dtype=dtype)  # block-diagonal (D*H, D*P)
        for d, w in enumerate(weights):
            w_hr[d, :, d] = w[4].T
        prep["w_hr_t"] = w_hr.reshape(lead * n_hid, lead * n_out)
    return prep


class PreparedWeights:
    """One module's prepared weights, reused while its weights are bit for bit what they were.

    Preparing (gathering, scaling, the block-diagonal) costs about what ten batch-1 time steps do;
    a served model calls with the same weights every time. Each call compares the weights with a
    copy kept beside the prepared ones (a read of each, no reordering): any change, in place or
    by a new array, prepares again. Groups whose weights pass ``limit`` bytes are not kept.
    """

    def __init__(self, limit: int = 1 << 20) -> None:
        self.limit = limit
        self.entries: dict[Any, tuple[list[tuple[Any, ...]], dict[str, Any]]] = {}

    def get(self, mode: str, weights: Sequence[Weights], key: Any) -> dict[str, Any]:
        arrays = [a for w in weights for a in w if a is not None]
        entry = self.entries.get(key)
        if entry is not None and _same_bits(entry[0], arrays):
            return entry[1]
        prep = _prepare(mode, weights)
        if sum(a.nbytes for a in arrays) <= self.limit and all(a.flags.c_contiguous for a in arrays):
            self.entries[key] = (_bits(arrays), prep)
        else:
            self.entries.pop(key, None)
        return prep


def _same_bits(kept: list[tuple[Any, ...]], arrays: list[Any]) -> bool:
    """Whether ``arrays`` hold exactly the bits ``kept`` (``_bits``) records (-0.0 is not 0.0)."""
    if len(kept) != len(arrays):
        return False
    for (shape, dtype, raw), new in zip(kept, arrays):
        if new.shape != shape or new.dtype != dtype or not new.flags.c_contiguous or new.tobytes() != raw:
            return False
    return True


def _bits(arrays: list[Any]) -> list[tuple[Any, ...]]:
    """What ``_same_bits`` compares with: each array's shape, dtype and bytes (a memcmp, no ufunc)."""
    return [(a.shape, a.dtype, a.tobytes()) for a in arrays]


def _prepared(mode: str, weights: Sequence[Weights], cache: PreparedWeights | None,
              key: Any) -> dict[str, Any]:
    return _prepare(mode, weights) if cache is None else cache.get(mode, weights, key)


def _project(x: Any, prep: dict[str, Any]) -> Any:
    """``x @ W_ih^T + bias`` for every direction of the group: ``(N, G*D*H)``, gate-major."""
    gates = x @ prep["w_ih_t"]
    if prep["bias"] is not None:
        gates += prep["bias"]
    return gates


# ---- the time loops -----------------------------------------------------------------------
# A step is (xg, h_prev, h_out, copy_to): the projected input (b, G*D*H), the state read and the
# state written (b, D*P) (the same array on the state-buffer path), and where h_out is copied
# (the packed output rows) or None. Ufuncs take ``out`` positionally: no keyword parsing per call.


class _Buffers:
    """Per-batch-size views of a group's work buffers (a packed batch shrinks or grows)."""

    def __init__(self, shapes: dict[str, tuple[int, ...]], dtype: Any) -> None:
        self.full = {name: np.empty(shape, dtype=dtype) for name, shape in shapes.items()}
        self.views: dict[int, dict[str, Any]] = {}

    def at(self, rows: int) -> dict[str, Any]:
        got = self.views.get(rows)
        if got is None:
            got = self.views[rows] = {name: a[:rows] for name, a in self.full.items()}
        return got


def _lstm_loop(steps: list[tuple[Any, ...]], prep: dict[str, Any], c: Any, bufs: _Buffers) -> None:
    # One buffer row holds [c | i o f g]: so [c, i] * [f, g] is one product and c = c f + i g two ops.
    width = prep["n_hid"] * prep["lead"]
    w_hh_t, w_hr_t = prep["w_hh_t"], prep["w_hr_t"]
    cells = bufs.full["cells"]
    cells[:, :width] = c
    if w_hr_t is None and steps[0][3] is None:  # equal batches, no projection
        _lstm_lean(steps, w_hh_t, bufs, width)
        c[...] = cells[:, :width]
        return
    last = -1
    for xg, hp, ho, dst in steps:
        rows = hp.shape[0]
        if rows != last:  # the views of this batch size
            v = bufs.at(rows)
            row, prod, tc, hr, half = v["cells"], v["prod"], v["tc"], v.get("hr"), v["half"]
            cc, g, sig = row[:, :width], row[:, width:], row[:, width:4 * width]
            o = row[:, 2 * width:3 * width]
            ci, fg, cf, ig = row[:, :2 * width], row[:, 3 * width:], prod[:, :width], prod[:, width:]
            last = rows
        _matmul(hp, w_hh_t, g)
        _add(g, xg, g)
        _tanh(g, g)
        _mul(sig, half, sig)
        _add(sig, half, sig)
        _mul(ci, fg, prod)  # (c f, i g)
        _add(cf, ig, cc)
        _tanh(cc, tc)
        if w_hr_t is None:
            _mul(o, tc, ho)
        else:
            _mul(o, tc, hr)
            _matmul(hr, w_hr_t, ho)
        if dst is not None:
            dst[...] = ho
    c[...] = cells[:, :width]


def _lstm_lean(steps: list[tuple[Any, ...]], w_hh_t: Any, bufs: _Buffers, width: int) -> None:
    """``_lstm_loop`` with nothing per step but the nine NumPy calls: every step has all rows."""
    v = bufs.full
    row, prod, tc, half = v["cells"], v["prod"], v["tc"], v["half"]
    cc, g, sig, o = row[:, :width], row[:, width:], row[:, width:4 * width], row[:, 2 * width:3 * width]
    ci, fg, cf, ig = row[:, :2 * width], row[:, 3 * width:], prod[:, :width], prod[:, width:]
    mm = _dot if g.flags.c_contiguous else _matmul  # np.dot: less overhead, wants a contiguous out
    dot, add, mul, tanh = mm, _add, _mul, _tanh
    hp = steps[0][1]
    for xg, _, ho, _ in steps:
        dot(hp, w_hh_t, g)
        add(g, xg, g)
        tanh(g, g)
        mul(sig, half, sig)
        add(sig, half, sig)
        mul(ci, fg, prod)  # (c f, i g)
        add(cf, ig, cc)
        tanh(cc, tc)
        mul(o, tc, ho)
        hp = ho


def _gru_loop(steps: list[tuple[Any, ...]], prep: dict[str, Any], bufs: _Buffers) -> None:
    # xg carries (x_r, x_z, b_hn) and xn the input's n part: one add per step puts b_hn in place
    width = prep["n_hid"] * prep["lead"]
    w_hh_t = prep["w_hh_t"]
    w2 = 2 * width
    last = -1
    for (xg, xn), hp, ho, dst in steps:
        rows = hp.shape[0]
        if rows != last:
            v = bufs.at(rows)
            g, n, tmp, half = v["g"], v["n"], v["tmp"], v["half"]
            rz, r, z, hn = g[:, :w2], g[:, :width], g[:, width:w2], g[:, w2:]
            last = rows
        _matmul(hp, w_hh_t, g)
        _add(g, xg, g)
        _tanh(rz, rz)
        _mul(rz, half, rz)  # an array operand: cheaper per call than a Python float
        _add(rz, half, rz)
        _mul(r, hn, n)  # n = tanh(x_n + r * (W_hn h + b_hn))
        _add(n, xn, n)
        _tanh(n, n)
        _sub(hp, n, tmp)  # h = n + z * (h_prev - n)
        _mul(tmp, z, tmp)
        _add(tmp, n, ho)
        if dst is not None:
            dst[...] = ho


def _elman_loop(steps: list[tuple[Any, ...]], prep: dict[str, Any], bufs: _Buffers, relu: bool) -> None:
    w_hh_t = prep["w_hh_t"]
    last = -1
    for xg, hp, ho, dst in steps:
        rows = hp.shape[0]
        if rows != last:
            g = bufs.at(rows)["g"]
            last = rows
        _matmul(hp, w_hh_t, g)
        _add(g, xg, g)
        if relu:
            _max(g, 0, out=ho)  # np.maximum takes out only by keyword
        else:
            _tanh(g, ho)
        if dst is not None:
            dst[...] = ho


def _run_loop(mode: str, steps: list[tuple[Any, ...]], prep: dict[str, Any], c: Any, batch: int,
              dtype: Any) -> None:
    """Run ``steps`` of ``mode`` on fresh work buffers for up to ``batch`` rows."""
    width, gates = prep["n_hid"] * prep["lead"], prep["w_hh_t"].shape[1]
    shapes = {"g": (batch, gates)}
    if mode == "LSTM":
        shapes = {"cells": (batch, 5 * width), "prod": (batch, 2 * width), "tc": (batch, width)}
        if prep["w_hr_t"] is not None:
            shapes["hr"] = (batch, width)
        bufs = _Buffers(shapes, dtype)
        bufs.full["half"] = np.full((batch, 3 * width), 0.5, dtype=dtype)
        _lstm_loop(steps, prep, c, bufs)
    elif mode == "GRU":
        shapes.update(n=(batch, width), tmp=(batch, width))
        bufs = _Buffers(shapes, dtype)
        bufs.full["half"] = np.full((batch, 2 * width), 0.5, dtype=dtype)
        _gru_loop(steps, prep, bufs)
    else:
        _elman_loop(steps, prep, _Buffers(shapes, dtype), mode == "RNN_RELU")


def _inputs(mode: str, xg: Any, prep: dict[str, Any]) -> Any:
    """The projected inputs as the loop reads them: for the GRU, ``(x_r, x_z, b_hn)`` and ``x_n``."""
    if mode != "GRU":
        return xg
    w2 = 2 * prep["n_hid"] * prep["lead"]
    xn = xg[..., w2:].copy()
    xg[..., w2:] = 0 if prep["b_hn"] is None else prep["b_hn"]
    return xg, xn


def _per_step(mode: str, xg: Any, index: Any) -> list[Any]:
    """Step inputs: ``xg[index]`` (a step's rows) for each index (pairs for the GRU)."""
    if mode == "GRU":
        return [(xg[0][i], xg[1][i]) for i in index]
    return [xg[i] for i in index]


# ---- one layer ----------------------------------------------------------------------------
_COMBINE_LIMIT = 1 << 17  # elements of batch x block-diagonal weight up to which directions share a loop


def _states(state: Any, batch: int, size: int, dtype: Any) -> Any:
    """An initial state ``(D, batch, size)`` as a fresh writable ``(batch, D*size)`` array (zeros: none)."""
    if state is None:
        return np.zeros((batch, size), dtype=dtype)
    return np.array(state.transpose(1, 0, 2), dtype=dtype, order="C").reshape(batch, -1)


def _group_uniform(mode: str, x: Any, steps: int, weights: Sequence[Weights], directions: list[int],
                   h0: Any, c0: Any, out: Any, cache: Any) -> tuple[Any, Any]:
    """``directions`` over ``steps`` equal steps, outputs into ``out`` (T, B, D_all, P): final (h, c).

    ``cache``: ``(PreparedWeights or None, layer)``.
    """
    prep = _prepared(mode, [weights[d] for d in directions], cache[0], (cache[1], tuple(directions)))
    lead, n_out, dtype = len(directions), out.shape[3], x.dtype
    batch = x.shape[0] // steps
    xg = _project(x, prep).reshape(steps, batch, -1)
    h = _states(None if h0 is None else h0[directions], batch, lead * n_out, dtype)
    c = _states(None if c0 is None else c0[directions], batch, lead * prep["n_hid"], dtype) \
        if mode == "LSTM" else None
    if lead == 2:  # one loop: step s is time s forward and time T - 1 - s in reverse
        cols = xg.reshape(steps, batch, -1, 2, prep["n_hid"])
        cols[:, :, :, 1] = cols[::-1, :, :, 1].copy()
        ys = np.empty((steps, batch, 2 * n_out), dtype=dtype)
        times = range(steps)
        outs = list(ys)
    else:
        times = range(steps - 1, -1, -1) if directions[0] == 1 else range(steps)
        outs = [out[t, :, directions[0]] for t in times]
    xs = _per_step(mode, _inputs(mode, xg, prep), times)
    _run_loop(mode, list(zip(xs, [h, *outs[:-1]], outs, [None] * steps)), prep, c, batch, dtype)
    if lead == 2:
        ys = ys.reshape(steps, batch, 2, n_out)
        out[:, :, 0] = ys[:, :, 0]
        out[:, :, 1] = ys[::-1, :, 1]
    h_n = outs[-1].reshape(batch, lead, n_out).transpose(1, 0, 2)
    return h_n, None if c is None else c.reshape(batch, lead, -1).transpose(1, 0, 2)


def _layer_uniform(mode: str, x: Any, steps: int, weights: Sequence[Weights], h0: Any, c0: Any,
                   cache: Any) -> tuple[Any, ...]:
    """A layer over ``steps`` steps of ``B`` rows each: ``(out (N, D*P), h_n, c_n)``."""
    lead, (gates, n_out) = len(weights), weights[0][1].shape  # (G*H, P)
    batch = x.shape[0] // steps
    out = np.empty((steps, batch, lead, n_out), dtype=x.dtype)
    together = lead == 2 and batch * (lead * n_out) * (lead * gates) <= _COMBINE_LIMIT
    groups = [list(range(lead))] if together else [[d] for d in range(lead)]
    finals = [_group_uniform(mode, x, steps, weights, ds, h0, c0, out, cache) for ds in groups]
    h_n = np.concatenate([f[0] for f in finals])
    c_n = np.concatenate([f[1] for f in finals]) if mode == "LSTM" else None
    return out.reshape(steps * batch, lead * n_out), h_n, c_n


def _layer_packed(mode: str, x: Any, batch_sizes: Sequence[int], weights: Sequence[Weights], h0: Any,
                  c0: Any, cache: Any) -> tuple[Any, ...]:
    """Each direction alone over packed rows of unequal batches: ``(out (N, D*P), h_n, c_n)``."""
    lead, n_out, batch, dtype = len(weights), weights[0][1].shape[1], batch_sizes[0], x.dtype
    ends = np.cumsum(batch_sizes).tolist()
    spans = [slice(end - bs, end) for end, bs in zip(ends, batch_sizes)]
    out = np.empty((x.shape[0], lead, n_out), dtype=dtype)
    h_n, c_n = [], []
    for d in range(lead):
        prep = _prepared(mode, [weights[d]], cache[0], (cache[1], (d,)))
        xs = _inputs(mode, _project(x, prep), prep)
        h = _states(None if h0 is None else h0[d:d + 1], batch, n_out, dtype)
        c = None
        if mode == "LSTM":
            c = _states(None if c0 is None else c0[d:d + 1], batch, prep["n_hid"], dtype)
        order = spans[::-1] if d == 1 else spans
        plan = [(x_t, h[:rows.stop - rows.start], h[:rows.stop - rows.start], out[rows, d])
                for x_t, rows in zip(_per_step(mode, xs, order), order)]
        _run_loop(mode, plan, prep, c, batch, dtype)
        h_n.append(h)
        c_n.append(c)
    return out.reshape(x.shape[0], lead * n_out), np.stack(h_n), np.stack(c_n) if mode == "LSTM" else None


def fused_layers(mode: str, x: Any, batch_sizes: Sequence[int], h0: Any, c0: Any,
                 weights: Sequence[Weights], num_layers: int, num_directions: int,
                 cache: PreparedWeights | None = None) -> tuple[Any, Any, Any]:
    """Every layer and direction of a recurrent stack over packed rows, on arrays, nothing recorded.

    Args:
        mode: ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.
        x: ``(N, input_size)`` rows, ``batch_sizes[t]`` of them for step ``t`` (non-increasing).
        batch_sizes: rows per time step.
        h0, c0: ``(num_layers * num_directions, batch, size)`` arrays or ``None`` for zeros.
        weights: ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` arrays of each layer-direction, ``None`` where absent.
        num_layers, num_directions: the stack's shape.
        cache: where the prepared weights of this stack are kept between calls (``None``: nowhere).

    Returns:
        ``(output rows (N, D * P), h_n, c_n)``; ``c_n`` is ``None`` except for an LSTM.
    """
    uniform = batch_sizes[0] == batch_sizes[-1]  # non-increasing: all equal
    h_n, c_n = [], []
    for layer in range(num_layers):
        k = slice(layer * num_directions, (layer + 1) * num_directions)
        h, c = None if h0 is None else h0[k], None if c0 is None else c0[k]
        if uniform:
            x, h_last, c_last = _layer_uniform(mode, x, len(batch_sizes), weights[k], h, c, (cache, layer))
        else:
            x, h_last, c_last = _layer_packed(mode, x, batch_sizes, weights[k], h, c, (cache, layer))
        h_n.append(h_last)
        c_n.append(c_last)
    return x, np.concatenate(h_n), np.concatenate(c_n) if mode == "LSTM" else None


# ---- one step (the cells) ---------------------------------------------------------------------


def _sigmoid_(a: Any) -> None:
    """``a = sigmoid(a)`` in place, as ``(tanh(a / 2) + 1) / 2`` (no overflow)."""
    _mul(a, 0.5, out=a)
    _tanh(a, out=a)
    _mul(a, 0.5, out=a)
    _add(a, 0.5, out=a)


def fused_cell(mode: str, x: Any, h: Any, c: Any, weights: Weights) -> tuple[Any, ...]:
    """One step of a cell on ``(B, *)`` arrays, nothing recorded: ``(h',)`` or ``(h', c')`` for an LSTM.

    ``h`` and ``c`` may be ``None`` (zeros); weights are torch's ``(w_ih, w_hh, b_ih, b_hh, _)``.
    """
    w_ih, w_hh, b_ih, b_hh, _ = weights
    n_hid = w_hh.shape[1]
    gates = x @ w_ih.T  # (B, G)
    if b_ih is not None:
        gates += b_ih
    hh = None if h is None else h @ w_hh.T
    if b_hh is not None:
        hh = b_hh if hh is None else _add(hh, b_hh, out=hh)
    if mode == "GRU":
        return (_gru_cell(gates, hh, h, n_hid),)
    if hh is not None:
        gates += hh
    if mode == "LSTM":
        return _lstm_cell(gates, c, n_hid)
    return (_max(gates, 0, out=gates) if mode == "RNN_RELU" else _tanh(gates, out=gates),)


def _lstm_cell(gates: Any, c: Any, n_hid: int) -> tuple[Any, Any]:
    h2, h3 = 2 * n_hid, 3 * n_hid
    _sigmoid_(gates[:, :h2])
    _sigmoid_(gates[:, h3:])
    g = _tanh(gates[:, h2:h3], out=gates[:, h2:h3])
    c_new = gates[:, :n_hid] * g
    if c is not None:
        c_new += gates[:, n_hid:h2] * c
    return gates[:, h3:] * np.tanh(c_new), c_new


def _gru_cell(gates: Any, hh: Any, h: Any, n_hid: int) -> Any:
    h2 = 2 * n_hid
    rz = gates[:, :h2]
    if hh is not None:
        rz += hh[..., :h2]
    _sigmoid_(rz)
    n = gates[:, h2:]
    if hh is not None:
        n += gates[:, :n_hid] * hh[..., h2:]  # n = tanh(x_n + r * (W_hn h + b_hn))
    _tanh(n, out=n)
    z = gates[:, n_hid:h2]
    if h is None:  # h' = (1 - z) n
        return n - z * n
    return n + z * (h - n)
