"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their single-step cells.

Each layer-direction runs as one autograd op (``mininn/nn/functional/_rnn.py``):
the time loop and backpropagation through time are NumPy loops inside it, not
a graph of per-step tensor ops. Tensor batches and ``PackedSequence`` batches
take the same path: a ``(T, B, *)`` batch is packed data with ``B`` rows at
every step. A forward that no gradient will flow through (``no_grad``, or
nothing requires grad) on cpu arrays skips autograd altogether: the whole stack
runs on arrays (``mininn/nn/functional/_rnn_fused.py``), the directions of a
layer in one time loop, and the cells one step the same way.
"""

# ruff: noqa: A001, A002 - torch names the forward argument `input`

from __future__ import annotations

import math
import numbers
import warnings
import weakref
from typing import Any

import numpy as np

from mininn._factories import empty
from mininn._functions.join import cat, stack
from mininn.nn import functional as F
from mininn.nn import init
from mininn.nn.functional._rnn import recurrent_layer
from mininn.nn.functional._rnn_fused import PreparedWeights, fused_cell, fused_layers
from mininn.nn.functional._utils import needs_grad, scalar_name
from mininn.nn.modules._utils import changed_settings
from mininn.nn.modules.module import Module
from mininn.nn.parameter import Parameter
from mininn.nn.utils.rnn import PackedSequence
from mininn.tensor import Tensor

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _fusable(tensors: list[Any]) -> bool:
    """Whether a call on ``tensors`` can skip autograd: nothing recorded, all cpu float arrays."""
    if needs_grad(*tensors):
        return False
    dtype = tensors[0]._data.dtype
    return dtype in _FUSED_DTYPES and all(
        t is None or (type(t._data) is np.ndarray and t._data.dtype == dtype) for t in tensors
    )


# each module's prepared weights for the no-grad path, dropped with the module (not in its state)
_PREPARED: weakref.WeakKeyDictionary[Module, PreparedWeights] = weakref.WeakKeyDictionary()


def _prepared_weights(module: Module) -> PreparedWeights:
    cache = _PREPARED.get(module)
    if cache is None:
        cache = _PREPARED[module] = PreparedWeights()
    return cache


def _array(t: Tensor | None) -> Any:
    return None if t is None else t._data


def _check_config(input_size: Any, hidden_size: Any, num_layers: int, bias: Any, batch_first: Any,
                  dropout: Any, proj_size: int) -> None:
    """torch's constructor checks, in torch's order (the dropout warning comes from the caller)."""
    if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
        raise ValueError(
            "dropout should be a number in range [0, 1] representing the probability of an element being "
            "zeroed"
        )
    if dropout > 0 and num_layers == 1:
        warnings.warn(
            "dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
            f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
            stacklevel=4,
        )
    for name, value in (("bias", bias), ("batch_first", batch_first)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, int):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


class RNNBase(Module):
    """What ``RNN``, ``LSTM`` and ``GRU`` share: parameters, checks and the layer loop.

    Args:
        mode: ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``.
        input_size: features of each input step.
        hidden_size: features of the hidden state.
        num_layers: stacked layers. Default 1.
        bias: whether the layers have ``bias_ih``/``bias_hh``. Default ``True``.
        batch_first: inputs and outputs are ``(batch, seq, feature)``. Default ``False``.
        dropout: dropout on each layer's output but the last, in training. Default 0.
        bidirectional: run a reverse direction too. Default ``False``.
        proj_size: LSTM only: project ``h`` to this size (0: no projection). Default 0.

    Attributes:
        weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}, weight_hr_l{k} (and ``..._reverse``):
        torch's parameters, all drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _check_config(input_size, hidden_size, num_layers, bias, batch_first, dropout, proj_size)
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(self._num_directions):
                names = self._make_layer(layer, direction, device, dtype)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def _real_hidden_size(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def _make_layer(self, layer: int, direction: int, device: Any, dtype: Any) -> list[str]:
        """Register one layer-direction's parameters; returns their names in torch's order."""
        gates = _GATES[self.mode] * self.hidden_size
        layer_in = self.input_size if layer == 0 else self._real_hidden_size * self._num_directions
        shapes = [("weight_ih", (gates, layer_in)), ("weight_hh", (gates, self._real_hidden_size))]
        if self.bias:
            shapes += [("bias_ih", (gates,)), ("bias_hh", (gates,))]
        if self.proj_size > 0:
            shapes += [("weight_hr", (self.proj_size, self.hidden_size))]
        suffix = "_reverse" if direction == 1 else ""
        names = []
        for stem, shape in shapes:
            name = f"{stem}_l{layer}{suffix}"
            setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
            names.append(name)
        return names

    @property
    def _flat_weights(self) -> list[Parameter | None]:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each layer-direction, in torch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: torch packs the weights for cuDNN; NumPy has nothing to pack."""

    def reset_parameters(self) -> None:
        """Draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # ---- checks (torch's names and messages) ------------------------------------------------

    def check_input(self, input: Tensor, batch_sizes: Any) -> None:
        weight = getattr(self, self._flat_weights_names[0])
        if input.dtype != weight.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). "
                f"Convert input: input.to({weight.dtype}), or convert model: model.to({input.dtype})"
            )
        expected_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. "
                f"Expected {self.input_size}, got {input.size(-1)}"
            )

    def get_expected_hidden_size(self, input: Tensor, batch_sizes: Any) -> tuple[int, int, int]:
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        return (self.num_layers * self._num_directions, mini_batch, self._real_hidden_size)

    def check_hidden_size(self, hx: Tensor, expected_hidden_size: tuple[int, int, int],
                          msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.shape)))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes: Any) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Tensor, permutation: Tensor | None) -> Tensor:
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # ---- running the layers -------------------------------------------------------------------

    def _time_major_rows(self, input: Tensor) -> tuple[Tensor, list[int]]:
        """A ``(T, B, I)`` (or batch-first) batch as packed rows ``(T * B, I)`` and ``[B] * T``."""
        x = input.transpose(0, 1) if self.batch_first else input
        steps, batch = x.shape[0], x.shape[1]
        return x.reshape(steps * batch, x.shape[2]), [batch] * steps

    def _layers(self, rows: Tensor, batch_sizes: list[int], h0: Tensor | None,
                c0: Tensor | None) -> tuple[Tensor, Tensor, Tensor | None]:
        """Every layer and direction over packed ``rows``: ``(output rows, h_n, c_n or None)``."""
        h_n: list[Tensor] = []
        c_n: list[Tensor] = []
        x = rows
        weights = self._flat_weights
        per_layer = len(weights) // (self.num_layers * self._num_directions)
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                x = F.dropout(x, self.dropout, True)
            outs = []
            for direction in range(self._num_directions):
                k = layer * self._num_directions + direction
                result = recurrent_layer(self.mode, x, batch_sizes, None if h0 is None else h0[k],
                                         None if c0 is None else c0[k],
                                         self._layer_weights(weights[k * per_layer:(k + 1) * per_layer]),
                                         reverse=direction == 1)
                outs.append(result[0])
                h_n.append(result[1])
                if len(result) == 3:
                    c_n.append(result[2])
            x = outs[0] if len(outs) == 1 else cat(outs, dim=1)
        return x, stack(h_n), stack(c_n) if c_n else None

    def _layer_weights(self, params: list[Any]) -> tuple[Any, ...]:
        """``(w_ih, w_hh, b_ih, b_hh, w_hr)`` with ``None`` for what the layer lacks."""
        w_ih, w_hh, *rest = params
        b_ih, b_hh = (rest[0], rest[1]) if self.bias else (None, None)
        w_hr = rest[-1] if self.proj_size > 0 else None
        return w_ih, w_hh, b_ih, b_hh, w_hr

    def _run(self, input: Any, h0: Tensor | None, c0: Tensor | None) -> tuple[Any, Tensor, Tensor | None]:
        """The checked, batched forward: output (tensor or packed) and final states."""
        data = input.data if isinstance(input, PackedSequence) else input
        dropout_draws = self.training and self.dropout > 0 and self.num_layers > 1
        if not dropout_draws and data._data.size:
            weights = self._flat_weights
            if _fusable([data, h0, c0, *weights]):
                return self._run_fused(input, h0, c0, weights)
        if isinstance(input, PackedSequence):
            rows, batch_sizes = input.data, input.batch_sizes.tolist()
            out, h_n, c_n = self._layers(rows, batch_sizes, h0, c0)
            packed = PackedSequence(out, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
            return packed, h_n, c_n
        rows, batch_sizes = self._time_major_rows(input)
        out, h_n, c_n = self._layers(rows, batch_sizes, h0, c0)
        out = out.reshape(len(batch_sizes), batch_sizes[0], out.shape[1])
        return (out.transpose(0, 1) if self.batch_first else out), h_n, c_n

    def _run_fused(self, input: Any, h0: Tensor | None, c0: Tensor | None,
                   flat: list[Any]) -> tuple[Any, Tensor, Tensor | None]:
        """``_run`` on arrays, nothing recorded (``fused_layers``); ``flat``: ``_flat_weights``."""
        per_layer = len(flat) // (self.num_layers * self._num_directions)
        arrays = [_array(w) for w in flat]
        weights = [self._layer_weights(arrays[k:k + per_layer]) for k in range(0, len(arrays), per_layer)]
        stack = (weights, self.num_layers, self._num_directions, _prepared_weights(self))
        if isinstance(input, PackedSequence):
            out, h_n, c_n = fused_layers(self.mode, input.data._data, input.batch_sizes.tolist(), _array(h0),
                                         _array(c0), *stack)
            packed = PackedSequence(Tensor(out), input.batch_sizes, input.sorted_indices,
                                    input.unsorted_indices)
            return packed, Tensor(h_n), None if c_n is None else Tensor(c_n)
        x = input._data.swapaxes(0, 1) if self.batch_first else input._data  # (T, B, I)
        steps, batch = x.shape[0], x.shape[1]
        out, h_n, c_n = fused_layers(self.mode, x.reshape(steps * batch, x.shape[2]), [batch] * steps,
                                     _array(h0), _array(c0), *stack)
        out = out.reshape(steps, batch, out.shape[1])
        out = out.swapaxes(0, 1) if self.batch_first else out
        return Tensor(out), Tensor(h_n), None if c_n is None else Tensor(c_n)

    def _batch(self, input: Any, name: str) -> tuple[Any, Tensor, Any, bool]:
        """``(input as a batch or packed, its data, batch_sizes or None, batched)``: an unbatched
        2-D input gets a batch dim of 1."""
        if isinstance(input, PackedSequence):
            return input, input.data, input.batch_sizes, True
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{'tensor ' if name == 'RNN' else ''}instead")
        if input.dim() == 3:
            return input, input, None, True
        input = input.unsqueeze(0 if self.batch_first else 1)
        return input, input, None, False

    def _unbatch(self, output: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
        return output.squeeze(0 if self.batch_first else 1), [s.squeeze(1) for s in states]

    def _forward_one_state(self, input: Any, hx: Tensor | None) -> tuple[Any, Tensor]:
        """``RNN``'s and ``GRU``'s forward: one state tensor ``h``."""
        name = "RNN" if self.mode.startswith("RNN") else "GRU"
        input, data, batch_sizes, batched = self._batch(input, name)
        sorted_indices = unsorted_indices = None
        if isinstance(input, PackedSequence):
            sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
        elif hx is not None and hx.dim() != (3 if batched else 2):
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx should also be {3 if batched else 2}-D but got "
                               f"{hx.dim()}-D tensor")
        if hx is None:
            self.check_input(data, batch_sizes)
        else:
            hx = self.permute_hidden(hx if batched else hx.unsqueeze(1), sorted_indices)
            self.check_forward_args(data, hx, batch_sizes)
        output, h_n, _ = self._run(input, hx, None)
        if not batched:
            output, (h_n,) = self._unbatch(output, [h_n])
        return output, self.permute_hidden(h_n, unsorted_indices)

    def extra_repr(self) -> str:
        changed = changed_settings(self, proj_size=0, num_layers=1, bias=True, batch_first=False, dropout=0,
                                   bidirectional=False)
        return f"{self.input_size}, {self.hidden_size}{changed}"


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, ``act`` tanh or ReLU.

    Args:
        input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional: see
            :class:`RNNBase`.
        nonlinearity: ``"tanh"`` or ``"relu"``. Default ``"tanh"``.

    Forward: ``(input, h_0=None) -> (output, h_n)``; input ``(L, N, H_in)``, ``(L, H_in)`` or packed;
    ``h_0``/``h_n`` ``(num_layers * num_directions, N, hidden_size)``.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Any = None, dtype: Any = None, *,
                 proj_size: int | None = None) -> None:
        if proj_size is not None:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.nonlinearity = nonlinearity
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        return self._forward_one_state(input, hx)


class GRU(RNNBase):
    """Gated recurrent unit (torch's gates ``r, z, n``; ``h' = (1 - z) n + z h``).

    Args: as :class:`RNNBase` (no ``proj_size``).

    Forward: ``(input, h_0=None) -> (output, h_n)``, shapes as :class:`RNN`.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None, *, proj_size: int | None = None) -> None:
        if proj_size is not None:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        return self._forward_one_state(input, hx)


class LSTM(RNNBase):
    """Long short-term memory (torch's gates ``i, f, g, o``), with an optional projection of ``h``.

    Args: as :class:`RNNBase`; ``proj_size > 0`` adds ``weight_hr_l{k}`` and makes ``h`` that size.

    Forward: ``(input, (h_0, c_0)=None) -> (output, (h_n, c_n))``; ``c`` is
    ``(num_layers * num_directions, N, hidden_size)``, ``h`` has ``proj_size`` features if set.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)

    def get_expected_cell_size(self, input: Tensor, batch_sizes: Any) -> tuple[int, int, int]:
        expected = self.get_expected_hidden_size(input, batch_sizes)
        return (expected[0], expected[1], self.hidden_size)

    def check_forward_args(self, input: Tensor, hidden: Any, batch_sizes: Any) -> None:  # type: ignore[override]
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx: Any, permutation: Tensor | None) -> Any:  # type: ignore[override]
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def forward(self, input: Any,
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Any, tuple[Tensor, Tensor]]:
        input, data, batch_sizes, batched = self._batch(input, "LSTM")
        sorted_indices = unsorted_indices = None
        if isinstance(input, PackedSequence):
            sorted_indices, unsorted_indices = input.sorted_indices, input.unsorted_indices
        elif hx is not None:
            want = 3 if batched else 2
            if (hx[0].dim(), hx[1].dim()) != (want, want):
                kind = "batched 3-D" if batched else "unbatched 2-D"
                raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            if not batched:
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        h0 = c0 = None
        if hx is None:
            self.check_input(data, batch_sizes)
        else:
            h0, c0 = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(data, (h0, c0), batch_sizes)
        output, h_n, c_n = self._run(input, h0, c0)
        if not batched:
            output, (h_n, c_n) = self._unbatch(output, [h_n, c_n])
        return output, self.permute_hidden((h_n, c_n), unsorted_indices)


# ---- cells ----------------------------------------------------------------------------------


class RNNCellBase(Module):
    """What the single-step cells share: ``weight_ih``, ``weight_hh`` and the optional biases.

    All parameters are drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
    """

    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        """Draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input: Tensor, states: list[Tensor | None],
                 what: list[str]) -> tuple[Tensor, list[Any], bool]:
        """torch's cell checks; a 1-D input (and its states) gets a batch dim of 1."""
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for state, label in zip(states, what):
            if state is not None and state.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {state.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            states = [None if s is None else s.unsqueeze(0) for s in states]
        self._check_sizes(input, states)
        return input, states, batched

    def _check_sizes(self, input: Tensor, states: list[Tensor | None]) -> None:
        batch, n_in = input._data.shape  # the arrays' shapes: cheaper than Tensor.size() per call
        if n_in != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {n_in} expected {self.input_size}")
        for i, state in enumerate(states):
            if state is None:
                continue
            rows, size = state._data.shape
            if batch != rows:
                raise RuntimeError(f"Input batch size {batch} doesn't match hidden{i} batch size {rows}")
            if size != self.hidden_size:
                raise RuntimeError(
                    f"hidden{i} has inconsistent hidden_size: got {size}, expected {self.hidden_size}"
                )
        if input.dtype != self.weight_ih.dtype:
            raise RuntimeError(
                "mat1 and mat2 must have the same dtype, but got "
                f"{scalar_name(input)} and {scalar_name(self.weight_ih)}"
            )

    def _step(self, mode: str, input: Tensor, h0: Tensor | None, c0: Tensor | None) -> tuple[Tensor, ...]:
        """One time step of ``mode``: ``(h', [c'])``."""
        weights = (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh, None)
        if _fusable([input, h0, c0, *weights[:4]]):
            arrays = tuple(_array(w) for w in weights)
            return tuple(Tensor(a) for a in fused_cell(mode, input._data, _array(h0), _array(c0), arrays))
        result = recurrent_layer(mode, input, [input.shape[0]], h0, c0, weights)
        return result[1:]


class RNNCell(RNNCellBase):
    """One Elman step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Args:
        input_size, hidden_size: feature sizes.
        bias: learn ``bias_ih``/``bias_hh``. Default ``True``.
        nonlinearity: ``"tanh"`` or ``"relu"``. Default ``"tanh"``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._batched(input, [hx], ["hidden"])
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if self.nonlinearity not in modes:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        (out,) = self._step(modes[self.nonlinearity], x, h, None)
        return out if batched else out.squeeze(0)


class _GatedCell(RNNCellBase):
    """A cell of ``_gates`` gates, each with its ``hidden_size`` rows of the weights."""

    _gates: int

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=self._gates, device=device, dtype=dtype)


class LSTMCell(_GatedCell):
    """One LSTM step: ``(x, (h, c)) -> (h', c')``, torch's gates ``i, f, g, o``.

    Args:
        input_size, hidden_size: feature sizes.
        bias: learn ``bias_ih``/``bias_hh``. Default ``True``.
    """

    _gates = 4

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        states = [None, None] if hx is None else list(hx)
        x, (h, c), batched = self._batched(input, states, ["hx[0]", "hx[1]"])
        h1, c1 = self._step("LSTM", x, h, c)
        return (h1, c1) if batched else (h1.squeeze(0), c1.squeeze(0))


class GRUCell(_GatedCell):
    """One GRU step: ``h' = (1 - z) n + z h``, torch's gates ``r, z, n``; the arguments of ``LSTMCell``."""

    _gates = 3

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        x, (h,), batched = self._batched(input, [hx], ["hidden"])
        (out,) = self._step("GRU", x, h, None)
        return out if batched else out.squeeze(0)
