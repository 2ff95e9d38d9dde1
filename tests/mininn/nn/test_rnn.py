"""RNN, LSTM, GRU and their cells against torch 2.13: outputs, final states, every gradient."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn.utils import rnn as mrnn
from tests.mininn.nn._layer_parity import same_error, state_layout, to_numpy, tol, twin

torch = pytest.importorskip("torch")
trnn = torch.nn.utils.rnn
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")

DTYPES = [np.float32, np.float64]
MODES = ["RNN", "LSTM", "GRU"]

# num_layers, bidirectional, bias, batch_first, extra constructor arguments
CONFIGS = [
    (1, False, True, False, {}),
    (2, True, True, True, {}),
    (2, False, False, False, {}),
    (1, True, True, False, {"nonlinearity": "relu"}),
    (2, True, True, False, {"proj_size": 3}),
    (1, False, False, True, {"proj_size": 2}),
]
CASES = [(mode, cfg) for mode in MODES for cfg in CONFIGS
         if not ("nonlinearity" in cfg[4] and mode != "RNN")
         and not ("proj_size" in cfg[4] and mode != "LSTM")]


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """torch's recurrent kernels on tiny inputs slow down badly with threads on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _tdtype(dtype):
    return getattr(torch, np.dtype(dtype).name)


def _pair(mode, dtype, input_size=4, hidden_size=5, eval_mode=False, **kw):
    torch.manual_seed(0)
    tm = getattr(torch.nn, mode)(input_size, hidden_size, **kw).to(_tdtype(dtype)).train(not eval_mode)
    mm = getattr(nn, mode)(input_size, hidden_size, dtype=np.dtype(dtype).name, **kw).train(not eval_mode)
    return tm, twin(tm, mm)


def _rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _leaves(*arrays):
    """The same arrays as torch and mininn leaves that require grad."""
    return ([torch.tensor(a, requires_grad=True) for a in arrays],
            [mininn.tensor(a, requires_grad=True) for a in arrays])


def _flat(outputs):
    """``(output, h)`` or ``(output, (h, c))`` as a flat list of tensors."""
    out, state = outputs
    if isinstance(out, (trnn.PackedSequence, mrnn.PackedSequence)):
        out = out.data
    return [out, *(state if isinstance(state, tuple) else (state,))]


def _backward_both(t_outs, m_outs, seed=1):
    """Backpropagate the same random cotangent of every output through both libraries."""
    rng = np.random.default_rng(seed)
    t_loss = m_loss = 0
    for t, m in zip(t_outs, m_outs):
        cot = rng.standard_normal(tuple(t.shape)).astype(to_numpy(t).dtype)
        t_loss = t_loss + (t * torch.tensor(cot)).sum()
        m_loss = m_loss + (m * mininn.tensor(cot)).sum()
    t_loss.backward()
    m_loss.backward()


def _assert_close(m, t, dtype, what):
    assert tuple(m.shape) == tuple(t.shape), what
    np.testing.assert_allclose(to_numpy(m), to_numpy(t), **tol(dtype), err_msg=what)


def _assert_param_grads(tm, mm, dtype):
    t_params = dict(tm.named_parameters())
    m_params = dict(mm.named_parameters())
    assert list(m_params) == list(t_params)
    for name, tp in t_params.items():
        _assert_close(m_params[name].grad, tp.grad, dtype, name)


# ---- forward and backward ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("mode", "cfg"), CASES, ids=str)
def test_layer_matches_torch_outputs_final_states_and_all_gradients(mode, cfg, dtype):
    layers, bidirectional, bias, batch_first, extra = cfg
    tm, mm = _pair(mode, dtype, num_layers=layers, bidirectional=bidirectional, bias=bias,
                   batch_first=batch_first, **extra)
    dirs = 2 if bidirectional else 1
    h_size = extra.get("proj_size", 5)
    x = _rand((3, 6, 4) if batch_first else (6, 3, 4), dtype)
    states = [_rand((layers * dirs, 3, h_size), dtype, 1)]
    if mode == "LSTM":
        states.append(_rand((layers * dirs, 3, 5), dtype, 2))
    (tx, *t_states), (mx, *m_states) = _leaves(x, *states)
    t_hx = tuple(t_states) if mode == "LSTM" else t_states[0]
    m_hx = tuple(m_states) if mode == "LSTM" else m_states[0]
    t_outs, m_outs = _flat(tm(tx, t_hx)), _flat(mm(mx, m_hx))
    for i, (m, t) in enumerate(zip(m_outs, t_outs)):
        _assert_close(m, t, dtype, f"output {i}")
    _backward_both(t_outs, m_outs)
    for i, (m, t) in enumerate(zip([mx, *m_states], [tx, *t_states])):
        _assert_close(m.grad, t.grad, dtype, f"input grad {i}")
    _assert_param_grads(tm, mm, dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("with_state", [False, True])
def test_unbatched_input_matches_torch(mode, with_state):
    tm, mm = _pair(mode, np.float64, num_layers=2, bidirectional=True)
    x = _rand((6, 4), np.float64)
    states = [_rand((4, 5), np.float64, 1)] + ([_rand((4, 5), np.float64, 2)] if mode == "LSTM" else [])
    (tx, *t_states), (mx, *m_states) = _leaves(x, *states)
    t_args = [tx] + ([tuple(t_states) if mode == "LSTM" else t_states[0]] if with_state else [])
    m_args = [mx] + ([tuple(m_states) if mode == "LSTM" else m_states[0]] if with_state else [])
    t_outs, m_outs = _flat(tm(*t_args)), _flat(mm(*m_args))
    for i, (m, t) in enumerate(zip(m_outs, t_outs)):
        _assert_close(m, t, np.float64, f"output {i}")
    _backward_both(t_outs, m_outs)
    _assert_close(mx.grad, tx.grad, np.float64, "input grad")
    _assert_param_grads(tm, mm, np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("mode", "proj_size"), [("RNN", 0), ("LSTM", 0), ("LSTM", 3), ("GRU", 0)])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_and_padded_batches_give_torch_outputs_final_states_and_gradients(mode, proj_size,
                                                                                  enforce_sorted, dtype):
    lengths = [6, 4, 4, 1] if enforce_sorted else [4, 6, 1, 4]
    extra = {"proj_size": proj_size} if proj_size else {}
    tm, mm = _pair(mode, dtype, num_layers=2, bidirectional=True, batch_first=True, **extra)
    x = _rand((4, 6, 4), dtype)
    states = [_rand((4, 4, proj_size or 5), dtype, 1)]
    if mode == "LSTM":
        states.append(_rand((4, 4, 5), dtype, 2))
    (tx, *t_states), (mx, *m_states) = _leaves(x, *states)
    t_packed = trnn.pack_padded_sequence(tx, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    m_packed = mrnn.pack_padded_sequence(mx, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    t_out, t_state = tm(t_packed, tuple(t_states) if mode == "LSTM" else t_states[0])
    m_out, m_state = mm(m_packed, tuple(m_states) if mode == "LSTM" else m_states[0])
    assert isinstance(m_out, mrnn.PackedSequence)
    assert m_out.batch_sizes.tolist() == t_out.batch_sizes.tolist()
    t_padded, t_lengths = trnn.pad_packed_sequence(t_out, batch_first=True, padding_value=-2.0)
    m_padded, m_lengths = mrnn.pad_packed_sequence(m_out, batch_first=True, padding_value=-2.0)
    assert m_lengths.tolist() == t_lengths.tolist() == lengths
    t_outs = [t_padded, *(t_state if mode == "LSTM" else (t_state,))]
    m_outs = [m_padded, *(m_state if mode == "LSTM" else (m_state,))]
    for i, (m, t) in enumerate(zip(m_outs, t_outs)):
        _assert_close(m, t, dtype, f"output {i}")
    _backward_both(t_outs, m_outs)
    for i, (m, t) in enumerate(zip([mx, *m_states], [tx, *t_states])):
        _assert_close(m.grad, t.grad, dtype, f"input grad {i}")
    _assert_param_grads(tm, mm, dtype)


@pytest.mark.parametrize("mode", MODES)
def test_inference_under_no_grad_matches_torch(mode):
    tm, mm = _pair(mode, np.float32, num_layers=2, bidirectional=True, eval_mode=True)
    x = _rand((5, 3, 4), np.float32)
    with torch.no_grad():
        t_outs = _flat(tm(trnn.pack_padded_sequence(torch.tensor(x), [5, 2, 4], enforce_sorted=False)))
    with mininn.no_grad():
        m_outs = _flat(mm(mrnn.pack_padded_sequence(mininn.tensor(x), [5, 2, 4], enforce_sorted=False)))
    for i, (m, t) in enumerate(zip(m_outs, t_outs)):
        assert not m.requires_grad
        _assert_close(m, t, np.float32, f"output {i}")


def test_packed_final_state_of_each_sequence_equals_running_it_alone():
    _, mm = _pair("LSTM", np.float64, num_layers=2)
    seqs = [_rand((n, 4), np.float64, n) for n in (3, 5, 2)]
    _, (h_n, c_n) = mm(mrnn.pack_sequence([mininn.tensor(s) for s in seqs], enforce_sorted=False))
    for b, seq in enumerate(seqs):
        _, (h, c) = mm(mininn.tensor(seq))
        np.testing.assert_allclose(to_numpy(h_n)[:, b], to_numpy(h), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(to_numpy(c_n)[:, b], to_numpy(c), rtol=1e-12, atol=1e-12)


def test_bidirectional_two_layer_lstm_trained_20_sgd_steps_follows_torch_loss_curve():
    tm, mm = _pair("LSTM", np.float32, input_size=3, hidden_size=8, num_layers=2, bidirectional=True,
                   batch_first=True)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7, 3)).astype(np.float32)
    target = np.sin(np.cumsum(x, axis=1)).astype(np.float32)  # (5, 7, 3): a running-sum signal
    t_head, m_head = torch.nn.Linear(16, 3), nn.Linear(16, 3)
    twin(t_head, m_head)
    t_opt = torch.optim.SGD([*tm.parameters(), *t_head.parameters()], lr=1.0)
    m_opt = mininn.optim.SGD([*mm.parameters(), *m_head.parameters()], lr=1.0)
    t_losses, m_losses = [], []
    for _ in range(20):
        for opt, layer, head, lib, losses in ((t_opt, tm, t_head, torch, t_losses),
                                              (m_opt, mm, m_head, mininn, m_losses)):
            opt.zero_grad()
            out, _ = layer(lib.tensor(x))
            loss = ((head(out) - lib.tensor(target)) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert t_losses[-1] < 0.9 * t_losses[0]  # it did learn something
    np.testing.assert_allclose(m_losses, t_losses, rtol=1e-4, atol=1e-6)


def test_dropout_between_layers_applies_in_training_only():
    tm, mm = _pair("GRU", np.float64, num_layers=2, dropout=1.0)  # p=1: the second layer sees zeros
    x = _rand((5, 2, 4), np.float64)
    for training in (True, False):
        tm.train(training)
        mm.train(training)
        t_out, _ = tm(torch.tensor(x))
        m_out, _ = mm(mininn.tensor(x))
        _assert_close(m_out, t_out, np.float64, f"training={training}")


def test_dropout_mask_comes_from_the_global_generator():
    _, mm = _pair("LSTM", np.float32, num_layers=3, dropout=0.5)
    x = mininn.tensor(_rand((5, 2, 4), np.float32))
    mininn.manual_seed(3)
    first = to_numpy(mm(x)[0])
    mininn.manual_seed(3)
    np.testing.assert_array_equal(to_numpy(mm(x)[0]), first)
    assert not np.allclose(to_numpy(mm.eval()(x)[0]), first)


@pytest.mark.parametrize("mode", MODES)
def test_layer_runs_after_double_and_flatten_parameters(mode):
    tm, mm = _pair(mode, np.float32, num_layers=2)
    tm.double()
    mm.double()
    mm.flatten_parameters()
    x = _rand((4, 2, 4), np.float64)
    _assert_close(mm(mininn.tensor(x))[0], tm(torch.tensor(x))[0], np.float64, "output")


# ---- cells ---------------------------------------------------------------------------------

CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}), ("LSTMCell", {}),
         ("LSTMCell", {"bias": False}), ("GRUCell", {}), ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "kw"), CELLS, ids=str)
@pytest.mark.parametrize("batched", [True, False])
def test_cell_matches_torch_output_and_gradients(name, kw, batched, dtype):
    torch.manual_seed(0)
    tc = getattr(torch.nn, name)(4, 5, **kw).to(_tdtype(dtype))
    mc = twin(tc, getattr(nn, name)(4, 5, dtype=np.dtype(dtype).name, **kw))
    lead = (3,) if batched else ()
    states = [_rand((*lead, 5), dtype, 1)] + ([_rand((*lead, 5), dtype, 2)] if name == "LSTMCell" else [])
    (tx, *t_states), (mx, *m_states) = _leaves(_rand((*lead, 4), dtype), *states)
    t_out = tc(tx, tuple(t_states) if name == "LSTMCell" else t_states[0])
    m_out = mc(mx, tuple(m_states) if name == "LSTMCell" else m_states[0])
    t_outs, m_outs = (list(t_out), list(m_out)) if name == "LSTMCell" else ([t_out], [m_out])
    for i, (m, t) in enumerate(zip(m_outs, t_outs)):
        _assert_close(m, t, dtype, f"output {i}")
    _backward_both(t_outs, m_outs)
    for i, (m, t) in enumerate(zip([mx, *m_states], [tx, *t_states])):
        _assert_close(m.grad, t.grad, dtype, f"input grad {i}")
    _assert_param_grads(tc, mc, dtype)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_without_state_starts_from_zeros(name):
    torch.manual_seed(0)
    tc = getattr(torch.nn, name)(4, 5)
    mc = twin(tc, getattr(nn, name)(4, 5))
    x = _rand((3, 4), np.float32)
    t_out, m_out = tc(torch.tensor(x)), mc(mininn.tensor(x))
    for m, t in zip(m_out if name == "LSTMCell" else [m_out], t_out if name == "LSTMCell" else [t_out]):
        _assert_close(m, t, np.float32, name)


# ---- layout, repr, init --------------------------------------------------------------------

LAYOUTS = [
    ("RNN", (4, 5), {}),
    ("RNN", (4, 5, 2), {"nonlinearity": "relu", "bidirectional": True, "bias": False}),
    ("LSTM", (4, 5, 3), {"bidirectional": True, "proj_size": 2}),
    ("LSTM", (4, 5), {"bias": False, "proj_size": 3}),
    ("GRU", (4, 5, 2), {"batch_first": True, "dropout": 0.25}),
    ("GRU", (4, 5), {"bidirectional": True}),
    ("RNNCell", (4, 5), {"nonlinearity": "relu"}),
    ("LSTMCell", (4, 5), {"bias": False}),
    ("GRUCell", (4, 5), {}),
]


@pytest.mark.parametrize(("name", "args", "kw"), LAYOUTS, ids=str)
def test_state_dict_keys_shapes_and_repr_match_torch(name, args, kw):
    t_layer = getattr(torch.nn, name)(*args, **kw)
    m_layer = getattr(nn, name)(*args, **kw)
    assert state_layout(m_layer) == state_layout(t_layer)
    assert repr(m_layer) == repr(t_layer)


@pytest.mark.parametrize(("name", "args", "kw"), LAYOUTS[:6], ids=str)
def test_all_weights_and_flat_weight_names_match_torch(name, args, kw):
    t_layer = getattr(torch.nn, name)(*args, **kw)
    m_layer = getattr(nn, name)(*args, **kw)
    assert m_layer._flat_weights_names == t_layer._flat_weights_names
    assert [[tuple(p.shape) for p in ws] for ws in m_layer.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in t_layer.all_weights]
    assert all(m is getattr(m_layer, n) for m, n in zip(m_layer._flat_weights, m_layer._flat_weights_names))


def test_repr_of_every_option_matches_torch():
    kw = dict(num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True, proj_size=5)
    assert repr(nn.LSTM(10, 20, **kw)) == repr(torch.nn.LSTM(10, 20, **kw))
    assert repr(nn.RNN(10, 20, 2, "relu")) == repr(torch.nn.RNN(10, 20, 2, "relu"))
    assert repr(nn.RNNCell(3, 4, False, "relu")) == repr(torch.nn.RNNCell(3, 4, False, "relu"))


ATTRIBUTES = ("mode", "input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
              "bidirectional", "proj_size")


@pytest.mark.parametrize(("name", "args"), [
    ("LSTM", (10, 20)),
    ("GRU", (10, 20)),
    ("RNN", (10, 20)),
    ("RNN", (10, 20, 2, "relu", False, True, 0.5, True)),
    ("GRU", (10, 20, 3, False, True, 0.25, True)),
    ("LSTM", (10, 20, 2, True, False, 0.0, True, 5)),
], ids=str)
def test_constructor_defaults_and_positional_order_match_torch(name, args):
    t_layer, m_layer = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    assert {a: getattr(m_layer, a) for a in ATTRIBUTES} == {a: getattr(t_layer, a) for a in ATTRIBUTES}
    assert getattr(m_layer, "nonlinearity", None) == getattr(t_layer, "nonlinearity", None)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN", "LSTMCell"])
def test_default_init_is_uniform_within_one_over_sqrt_hidden_size(name):
    layer = getattr(nn, name)(64, 100)
    bound = 1 / math.sqrt(100)
    values = np.concatenate([p.detach().numpy().ravel() for p in layer.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert abs(values.mean()) < 0.02 * bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.02 * bound


def test_parameters_follow_the_dtype_argument():
    layer = nn.LSTM(3, 4, dtype=mininn.float64)
    assert {p.dtype for p in layer.parameters()} == {mininn.float64}


# ---- errors --------------------------------------------------------------------------------

CONSTRUCTOR_ERRORS = [
    ("RNN", (10, 20), {"nonlinearity": "sig"}),
    ("GRU", (10, 20), {"proj_size": 3}),
    ("RNN", (10, 20), {"proj_size": 0}),
    ("LSTM", (10, 20), {"proj_size": 20}),
    ("LSTM", (10, 20), {"proj_size": -1}),
    ("LSTM", (10, 20), {"dropout": 1.5}),
    ("LSTM", (10, 20), {"dropout": True}),
    ("GRU", (10, 20), {"bias": 1}),
    ("GRU", (10, 20), {"batch_first": None}),
    ("RNN", (10.0, 20), {}),
    ("RNN", (0, 20), {}),
    ("RNN", (10, "20"), {}),
    ("RNN", (10, 0), {}),
    ("LSTM", (10, 20, 0), {}),
]


@pytest.mark.parametrize(("name", "args", "kw"), CONSTRUCTOR_ERRORS, ids=str)
def test_bad_constructor_arguments_raise_torch_errors(name, args, kw):
    same_error(lambda: getattr(torch.nn, name)(*args, **kw), lambda: getattr(nn, name)(*args, **kw))


def test_dropout_with_one_layer_warns_as_torch():
    messages = []
    for lib in (torch, mininn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.nn.GRU(10, 20, dropout=1)
        messages.append([(w.category, str(w.message)) for w in caught])
    assert messages[0] == messages[1] and len(messages[0]) == 1


def _both(name, *args, **kw):
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(*args, **kw)
    return tm, twin(tm, getattr(nn, name)(*args, **kw))


def _call_both(tm, mm, shapes, dtype=np.float32):
    arrays = [_rand(s, dtype) if s is not None else None for s in shapes]

    def call(lib, layer):
        x, *states = [None if a is None else lib.tensor(a) for a in arrays]
        if not states:
            return layer(x)
        return layer(x, tuple(states) if len(states) == 2 else states[0])

    same_error(lambda: call(torch, tm), lambda: call(mininn, mm))


SHAPE_ERRORS = [
    ("LSTM", (10, 20, 2), [(5, 3, 7)]),
    ("LSTM", (10, 20, 2), [(5, 3, 10), (1, 3, 20), (2, 3, 20)]),
    ("LSTM", (10, 20, 2), [(5, 3, 10), (2, 3, 20), (2, 2, 20)]),
    ("LSTM", (10, 20), [(5, 3, 10, 1)]),
    ("LSTM", (10, 20), [(5, 3, 10), (3, 20), (3, 20)]),
    ("LSTM", (10, 20), [(5, 10), (1, 3, 20), (1, 3, 20)]),
    ("GRU", (10, 20), [(5, 3, 10), (2, 3, 20)]),
    ("GRU", (10, 20), [(5, 3, 10), (3, 20)]),
    ("GRU", (10, 20), [(5, 10), (1, 3, 20)]),
    ("GRU", (10, 20), [(5,)]),
    ("RNN", (10, 20), [(5, 3, 7)]),
    ("RNN", (10, 20), [(5, 3, 10, 2)]),
    ("RNNCell", (10, 20), [(3, 7)]),
    ("RNNCell", (10, 20), [(3, 10), (2, 20)]),
    ("RNNCell", (10, 20), [(3, 10), (3, 5)]),
    ("RNNCell", (10, 20), [(3, 10, 1)]),
    ("GRUCell", (10, 20), [(3, 10), (3, 20, 1)]),
    ("LSTMCell", (10, 20), [(3, 10), (3, 20), (3, 5)]),
    ("LSTMCell", (10, 20), [(3, 10), (3, 20), (2, 20)]),
    ("LSTMCell", (10, 20), [(3, 10), (3, 20, 1), (3, 20)]),
]


@pytest.mark.parametrize(("name", "args", "shapes"), SHAPE_ERRORS, ids=str)
def test_bad_input_and_state_shapes_raise_torch_errors(name, args, shapes):
    _call_both(*_both(name, *args), shapes)


@pytest.mark.parametrize("name", ["LSTM", "GRUCell"])
def test_input_dtype_other_than_the_weights_raises_torch_error(name):
    _call_both(*_both(name, 10, 20), [(5, 3, 10) if name == "LSTM" else (3, 10)], np.float64)


def test_unknown_cell_nonlinearity_raises_at_forward_as_torch():
    tm, mm = _both("RNNCell", 4, 5, nonlinearity="sig")
    _call_both(tm, mm, [(3, 4)])
