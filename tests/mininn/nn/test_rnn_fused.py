"""The no-grad recurrent path (``_rnn_fused``) against torch 2.13 and against mininn's autograd path."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn.functional import _rnn_fused
from mininn.nn.utils import rnn as mrnn
from tests.mininn.nn._layer_parity import to_numpy, twin

torch = pytest.importorskip("torch")
trnn = torch.nn.utils.rnn
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")

# float32 to its rounding at these sizes; float64 much tighter
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-11, atol=1e-13)}

# mode, num_layers, bidirectional, bias, batch_first, extra constructor arguments
CONFIGS = [
    ("RNN", 1, False, True, False, {}),
    ("RNN", 2, True, False, True, {"nonlinearity": "relu"}),
    ("RNN", 3, True, True, False, {}),
    ("GRU", 1, False, True, True, {}),
    ("GRU", 2, True, True, True, {}),
    ("GRU", 3, True, False, False, {}),
    ("LSTM", 1, False, True, False, {}),
    ("LSTM", 2, True, True, True, {}),
    ("LSTM", 3, True, False, False, {}),
    ("LSTM", 2, True, True, True, {"proj_size": 3}),
    ("LSTM", 1, False, False, False, {"proj_size": 2}),
]


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _pair(mode, dtype, input_size=4, hidden_size=5, **kw):
    torch.manual_seed(0)
    tm = getattr(torch.nn, mode)(input_size, hidden_size, **kw).to(getattr(torch, np.dtype(dtype).name))
    mm = getattr(nn, mode)(input_size, hidden_size, dtype=np.dtype(dtype).name, **kw).eval()
    return tm.eval(), twin(tm, mm)


def _rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _states(mode, shape_h, shape_c, dtype):
    states = [_rand(shape_h, dtype, 1)] + ([_rand(shape_c, dtype, 2)] if mode == "LSTM" else [])
    return states


def _hx(mode, states, lib):
    tensors = [lib.tensor(s) for s in states]
    return tuple(tensors) if mode == "LSTM" else tensors[0]


def _flat(outputs):
    out, state = outputs
    if isinstance(out, (trnn.PackedSequence, mrnn.PackedSequence)):
        out = out.data
    return [out, *(state if isinstance(state, tuple) else (state,))]


def _compare(m_outs, t_outs, dtype, what=""):
    assert len(m_outs) == len(t_outs)
    for i, (m, t) in enumerate(zip(m_outs, t_outs)):
        assert tuple(m.shape) == tuple(t.shape), f"{what} output {i}"
        assert m.dtype == mininn.tensor(to_numpy(t)).dtype
        np.testing.assert_allclose(to_numpy(m), to_numpy(t), **TOL[dtype], err_msg=f"{what} output {i}")


def _run_three_ways(tm, mm, t_args, m_args, dtype):
    """torch under no_grad; mininn under no_grad (fused) and with grad (the autograd op): all agree."""
    with torch.no_grad():
        t_outs = _flat(tm(*t_args))
    with mininn.no_grad():
        fused = _flat(mm(*m_args))
    for m in fused:
        assert not m.requires_grad and m.grad_fn is None
    _compare(fused, t_outs, dtype, "fused vs torch")
    recorded = _flat(mm(*m_args))
    assert recorded[0].grad_fn is not None  # the parameters require grad: the autograd path ran
    _compare(fused, [r.detach() for r in recorded], dtype, "fused vs autograd path")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("cfg", CONFIGS, ids=str)
def test_no_grad_layer_matches_torch_and_the_autograd_path(cfg, with_state, dtype):
    mode, layers, bidirectional, bias, batch_first, extra = cfg
    tm, mm = _pair(mode, dtype, num_layers=layers, bidirectional=bidirectional, bias=bias,
                   batch_first=batch_first, **extra)
    dirs = 2 if bidirectional else 1
    x = _rand((3, 6, 4) if batch_first else (6, 3, 4), dtype)
    t_args, m_args = [torch.tensor(x)], [mininn.tensor(x)]
    if with_state:
        states = _states(mode, (layers * dirs, 3, extra.get("proj_size", 5)), (layers * dirs, 3, 5), dtype)
        t_args.append(_hx(mode, states, torch))
        m_args.append(_hx(mode, states, mininn))
    _run_three_ways(tm, mm, t_args, m_args, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("mode", "extra"),
                         [("RNN", {}), ("GRU", {}), ("LSTM", {}), ("LSTM", {"proj_size": 3})], ids=str)
@pytest.mark.parametrize("lengths", [[4, 6, 1, 4], [5, 5, 5]], ids=["unequal", "equal"])
def test_no_grad_packed_batch_matches_torch_and_the_autograd_path(mode, extra, lengths, dtype):
    tm, mm = _pair(mode, dtype, num_layers=2, bidirectional=True, batch_first=True, **extra)
    batch = len(lengths)
    x = _rand((batch, max(lengths), 4), dtype)
    states = _states(mode, (4, batch, extra.get("proj_size", 5)), (4, batch, 5), dtype)
    t_packed = trnn.pack_padded_sequence(torch.tensor(x), lengths, batch_first=True, enforce_sorted=False)
    m_packed = mrnn.pack_padded_sequence(mininn.tensor(x), lengths, batch_first=True, enforce_sorted=False)
    t_args, m_args = [t_packed, _hx(mode, states, torch)], [m_packed, _hx(mode, states, mininn)]
    _run_three_ways(tm, mm, t_args, m_args, dtype)
    with mininn.no_grad():
        out, _ = mm(m_packed)
    assert isinstance(out, mrnn.PackedSequence)
    assert out.batch_sizes.tolist() == t_packed.batch_sizes.tolist()
    assert out.unsorted_indices.tolist() == t_packed.unsorted_indices.tolist()


@pytest.mark.parametrize("mode", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("with_state", [False, True])
def test_no_grad_unbatched_input_matches_torch(mode, with_state):
    tm, mm = _pair(mode, np.float64, num_layers=2, bidirectional=True)
    x = _rand((6, 4), np.float64)
    t_args, m_args = [torch.tensor(x)], [mininn.tensor(x)]
    if with_state:
        states = _states(mode, (4, 5), (4, 5), np.float64)
        t_args.append(_hx(mode, states, torch))
        m_args.append(_hx(mode, states, mininn))
    _run_three_ways(tm, mm, t_args, m_args, np.float64)


@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
@pytest.mark.parametrize("batch", [1, 4])
def test_directions_in_one_loop_and_apart_both_match_torch(mode, batch, monkeypatch):
    """A batch-1 bidirectional layer runs both directions in one loop; a larger one each apart."""
    tm, mm = _pair(mode, np.float32, input_size=8, hidden_size=16, num_layers=2, bidirectional=True,
                   batch_first=True)
    x = _rand((batch, 9, 8), np.float32)
    for limit in (0, 1 << 30):  # never together, always together
        monkeypatch.setattr(_rnn_fused, "_COMBINE_LIMIT", limit)
        _run_three_ways(tm, mm, [torch.tensor(x)], [mininn.tensor(x)], np.float32)


def test_benchmark_shape_matches_torch():
    """The batch-1 latency case: 2-layer bidirectional LSTM, hidden 64, batch-first, 20 tokens."""
    tm, mm = _pair("LSTM", np.float32, input_size=64, hidden_size=64, num_layers=2, bidirectional=True,
                   batch_first=True)
    x = _rand((1, 20, 64), np.float32)
    _run_three_ways(tm, mm, [torch.tensor(x)], [mininn.tensor(x)], np.float32)


def test_grad_enabled_without_parameters_that_need_grad_takes_the_fused_path():
    tm, mm = _pair("LSTM", np.float32, num_layers=2, bidirectional=True)
    mm.requires_grad_(False)
    x = _rand((5, 2, 4), np.float32)
    out, (h, c) = mm(mininn.tensor(x))
    assert out.grad_fn is None and h.grad_fn is None and c.grad_fn is None
    with torch.no_grad():
        t_outs = _flat(tm(torch.tensor(x)))
    _compare([out, h, c], t_outs, np.float32)


def test_input_that_requires_grad_still_gets_its_gradient():
    tm, mm = _pair("GRU", np.float64, num_layers=2, bidirectional=True)
    mm.requires_grad_(False)
    tm.requires_grad_(False)
    x = _rand((5, 2, 4), np.float64)
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    tm(tx)[0].sum().backward()
    mm(mx)[0].sum().backward()
    np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), **TOL[np.float64])


def test_dropout_in_training_under_no_grad_draws_as_the_autograd_path_does():
    _, mm = _pair("LSTM", np.float32, num_layers=3, dropout=0.5)
    mm.train()
    x = mininn.tensor(_rand((5, 2, 4), np.float32))
    mininn.manual_seed(3)
    recorded = to_numpy(mm(x)[0])
    mininn.manual_seed(3)
    with mininn.no_grad():
        unrecorded = to_numpy(mm(x)[0])
    np.testing.assert_array_equal(unrecorded, recorded)
    with mininn.no_grad():
        assert not np.allclose(to_numpy(mm.eval()(x)[0]), recorded)


def test_no_grad_input_is_not_modified_and_outputs_do_not_alias_it():
    _, mm = _pair("LSTM", np.float32, input_size=5, hidden_size=5, num_layers=2, bidirectional=True)
    x = _rand((4, 1, 5), np.float32)
    states = _states("LSTM", (4, 1, 5), (4, 1, 5), np.float32)
    mx, hx = mininn.tensor(x.copy()), _hx("LSTM", states, mininn)
    with mininn.no_grad():
        mm(mx, hx)
    np.testing.assert_array_equal(to_numpy(mx), x)
    for m, s in zip(hx, states):
        np.testing.assert_array_equal(to_numpy(m), s)


def test_forward_hooks_fire_on_the_fused_path():
    _, mm = _pair("GRU", np.float32)
    seen = []
    with mm.register_forward_hook(lambda module, args, out: seen.append(type(out).__name__)):
        with mininn.no_grad():
            mm(mininn.tensor(_rand((3, 2, 4), np.float32)))
    assert seen == ["tuple"]


# ---- cells ---------------------------------------------------------------------------------

CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}), ("LSTMCell", {}),
         ("LSTMCell", {"bias": False}), ("GRUCell", {}), ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "kw"), CELLS, ids=str)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [True, False])
def test_no_grad_cell_matches_torch_and_the_autograd_path(name, kw, batched, with_state, dtype):
    torch.manual_seed(0)
    tc = getattr(torch.nn, name)(4, 5, **kw).to(getattr(torch, np.dtype(dtype).name))
    mc = twin(tc, getattr(nn, name)(4, 5, dtype=np.dtype(dtype).name, **kw))
    lead = (3,) if batched else ()
    x = _rand((*lead, 4), dtype)
    t_args, m_args = [torch.tensor(x)], [mininn.tensor(x)]
    if with_state:
        states = _states("LSTM" if name == "LSTMCell" else "GRU", (*lead, 5), (*lead, 5), dtype)
        t_args.append(_hx("LSTM" if name == "LSTMCell" else "GRU", states, torch))
        m_args.append(_hx("LSTM" if name == "LSTMCell" else "GRU", states, mininn))
    as_list = (lambda out: list(out)) if name == "LSTMCell" else (lambda out: [out])
    with torch.no_grad():
        t_outs = as_list(tc(*t_args))
    with mininn.no_grad():
        fused = as_list(mc(*m_args))
    assert all(m.grad_fn is None for m in fused)
    _compare(fused, t_outs, dtype, "fused vs torch")
    recorded = as_list(mc(*m_args))
    assert recorded[0].grad_fn is not None
    _compare(fused, [r.detach() for r in recorded], dtype, "fused vs autograd path")


# ---- prepared weights kept between calls ---------------------------------------------------


def _no_grad_out(mm, x):
    with mininn.no_grad():
        return to_numpy(mm(mininn.tensor(x))[0])


@pytest.mark.parametrize("mode", ["RNN", "GRU", "LSTM"])
def test_repeated_no_grad_calls_give_bitwise_the_first_result(mode):
    _, mm = _pair(mode, np.float32, num_layers=2, bidirectional=True, batch_first=True)
    x = _rand((1, 7, 4), np.float32)
    first = _no_grad_out(mm, x)
    for _ in range(2):
        np.testing.assert_array_equal(_no_grad_out(mm, x), first)


@pytest.mark.parametrize("packed", [False, True])
def test_weights_changed_in_place_between_no_grad_calls_are_used(packed):
    tm, mm = _pair("LSTM", np.float32, num_layers=2, bidirectional=True)
    x = _rand((6, 3, 4), np.float32)
    lengths = [6, 4, 2]

    def run(lib, module):
        data = lib.tensor(x)
        if packed:
            data = (trnn if lib is torch else mrnn).pack_padded_sequence(data, lengths)
        with lib.no_grad():
            return _flat(module(data))

    run(mininn, mm)  # prepares and keeps the weights
    with torch.no_grad():
        tm.weight_hh_l1_reverse.mul_(-2.0)
        tm.bias_ih_l0[3] = 0.75
    mm.weight_hh_l1_reverse.detach().numpy()[...] *= -2.0
    mm.bias_ih_l0.detach().numpy()[3] = 0.75
    _compare(run(mininn, mm), run(torch, tm), np.float32, "after an in-place change")


def test_loaded_state_dict_is_used_by_the_next_no_grad_call():
    tm, mm = _pair("GRU", np.float64, num_layers=2, bidirectional=True)
    x = _rand((5, 1, 4), np.float64)
    _no_grad_out(mm, x)
    torch.manual_seed(1)
    other = torch.nn.GRU(4, 5, num_layers=2, bidirectional=True).double()
    twin(other, mm)
    with torch.no_grad():
        expected = to_numpy(other(torch.tensor(x))[0])
    np.testing.assert_allclose(_no_grad_out(mm, x), expected, **TOL[np.float64])


def test_negative_zero_in_a_weight_is_a_change():
    kept = _rnn_fused._bits([np.array([0.0, 1.0], dtype=np.float32)])
    assert _rnn_fused._same_bits(kept, [np.array([0.0, 1.0], dtype=np.float32)])
    assert not _rnn_fused._same_bits(kept, [np.array([-0.0, 1.0], dtype=np.float32)])
    assert not _rnn_fused._same_bits(kept, [np.array([0.0, 1.0], dtype=np.float64)])
    assert not _rnn_fused._same_bits(kept, [np.array([[0.0, 1.0]], dtype=np.float32)])
    nan = _rnn_fused._bits([np.array([np.nan], dtype=np.float64)])
    assert _rnn_fused._same_bits(nan, [np.array([np.nan], dtype=np.float64)])


def test_large_weights_are_prepared_every_call_not_kept():
    cache = _rnn_fused.PreparedWeights(limit=10)
    weights = [(_rand((8, 4), np.float32), _rand((8, 2), np.float32), None, None, None)]
    first = cache.get("RNN_TANH", weights, "k")
    assert cache.entries == {}
    assert cache.get("RNN_TANH", weights, "k") is not first
    roomy = _rnn_fused.PreparedWeights()
    assert roomy.get("RNN_TANH", weights, "k") is roomy.get("RNN_TANH", weights, "k")
