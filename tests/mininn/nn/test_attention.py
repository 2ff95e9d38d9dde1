"""scaled_dot_product_attention, multi_head_attention_forward and MultiheadAttention
against torch 2.13: outputs, weights, gradients of inputs and parameters, errors, reprs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _t(a: np.ndarray | None, grad: bool = False):
    return None if a is None else torch.tensor(a, requires_grad=grad)


def _m(a: np.ndarray | None, grad: bool = False):
    return None if a is None else mininn.tensor(a.copy(), requires_grad=grad)


def _close(m, t, tol=1e-5):
    np.testing.assert_allclose(m.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _error(fn, *args, **kwargs):
    with pytest.raises(Exception) as err:
        fn(*args, **kwargs)
    return type(err.value), str(err.value)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---- scaled_dot_product_attention --------------------------------------------------------
SDPA_CASES = [
    ((2, 3, 5, 8), (2, 3, 6, 8), None, False, None),
    ((2, 3, 5, 8), (2, 3, 6, 8), None, True, None),  # causal with L != S: top-left aligned
    ((2, 3, 5, 8), (2, 3, 6, 8), "bool", False, None),
    ((2, 3, 5, 8), (2, 3, 6, 8), "bool", True, 0.3),  # mask and causal together
    ((2, 3, 5, 8), (2, 3, 6, 8), "float", False, None),
    ((5, 8), (6, 8), None, False, None),
    ((2, 3, 5, 8), (1, 6, 8), "bool", False, 0.5),  # broadcast batch dims
]


@pytest.mark.parametrize("q_shape, k_shape, mask, causal, scale", SDPA_CASES, ids=str)
def test_sdpa_matches_torch_outputs_and_grads(rng, q_shape, k_shape, mask, causal, scale):
    q = rng.standard_normal(q_shape).astype(np.float32)
    k = rng.standard_normal(k_shape).astype(np.float32)
    v = rng.standard_normal(k_shape).astype(np.float32)
    m = None
    if mask == "bool":
        m = rng.random(q_shape[-2:-1] + k_shape[-2:-1]) > 0.3
    elif mask == "float":
        m = rng.standard_normal((q_shape[0], 1) + q_shape[-2:-1] + k_shape[-2:-1]).astype(np.float32)
    tq, tk, tv = _t(q, True), _t(k, True), _t(v, True)
    mq, mk, mv = _m(q, True), _m(k, True), _m(v, True)
    to = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=_t(m), is_causal=causal, scale=scale)
    mo = F.scaled_dot_product_attention(mq, mk, mv, attn_mask=_m(m), is_causal=causal, scale=scale)
    _close(mo, to)
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    to.backward(torch.tensor(g))
    mo.backward(mininn.tensor(g))
    for t, mm in [(tq, mq), (tk, mk), (tv, mv)]:
        _close(mm.grad, t.grad)


def test_sdpa_float_mask_receives_the_score_gradient(rng):
    q, k, v = (rng.standard_normal((2, 4, 3)) for _ in range(3))
    mask = rng.standard_normal((4, 4))
    tm, mm = _t(mask, True), _m(mask, True)
    TF.scaled_dot_product_attention(_t(q), _t(k), _t(v), attn_mask=tm).sum().backward()
    F.scaled_dot_product_attention(_m(q), _m(k), _m(v), attn_mask=mm).sum().backward()
    _close(mm.grad, tm.grad, tol=1e-12)


def test_sdpa_rows_with_nothing_to_attend_are_zero_like_torch(rng):
    q, k, v = (rng.standard_normal((1, 3, 4)).astype(np.float32) for _ in range(3))
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False
    tq, mq = _t(q, True), _m(q, True)
    to = TF.scaled_dot_product_attention(tq, _t(k), _t(v), attn_mask=_t(mask))
    mo = F.scaled_dot_product_attention(mq, _m(k), _m(v), attn_mask=_m(mask))
    _close(mo, to)
    assert (mo.detach().numpy()[0, 1] == 0).all()
    to.sum().backward()
    mo.sum().backward()
    _close(mq.grad, tq.grad)


def test_sdpa_grouped_query_attention_repeats_key_heads(rng):
    q = rng.standard_normal((2, 6, 4, 8))
    k = rng.standard_normal((2, 2, 5, 8))
    v = rng.standard_normal((2, 2, 5, 8))
    tk, mk = _t(k, True), _m(k, True)
    to = TF.scaled_dot_product_attention(_t(q), tk, _t(v), enable_gqa=True)
    mo = F.scaled_dot_product_attention(_m(q), mk, _m(v), enable_gqa=True)
    _close(mo, to, tol=1e-12)
    to.sum().backward()
    mo.sum().backward()
    _close(mk.grad, tk.grad, tol=1e-12)


def test_sdpa_dropout_is_seeded_scaled_and_total(rng):
    q = rng.standard_normal((4, 64, 8)).astype(np.float32)
    v = np.ones((4, 64, 8), dtype=np.float32)
    qm, vm = mininn.tensor(q), mininn.tensor(v)
    mininn.manual_seed(7)
    first = F.scaled_dot_product_attention(qm, qm, vm, dropout_p=0.5).numpy()
    mininn.manual_seed(7)
    again = F.scaled_dot_product_attention(qm, qm, vm, dropout_p=0.5).numpy()
    np.testing.assert_array_equal(first, again)
    # rows of kept weights are scaled by 1/(1-p), so they still sum to 1 on average
    assert abs(first.mean() - 1.0) < 0.05
    assert not np.allclose(first, 1.0)
    assert (F.scaled_dot_product_attention(qm, qm, vm, dropout_p=1.0).numpy() == 0).all()


@pytest.mark.parametrize(
    "q_shape, k_shape, v_shape, kwargs",
    [
        ((1, 3, 4), (1, 3, 4), (1, 3, 4), {"dropout_p": 1.5}),
        ((4,), (4,), (4,), {}),
        ((1, 3, 4), (1, 3, 3), (1, 3, 4), {}),
        ((1, 3, 4), (1, 3, 4), (1, 3, 4), {"attn_mask": np.zeros((3, 3), dtype=np.int64)}),
        ((1, 3, 4), (1, 3, 4), (1, 3, 4), {"attn_mask": np.zeros((2, 3), dtype=np.float32)}),
    ],
)
def test_sdpa_errors_match_torch(q_shape, k_shape, v_shape, kwargs):
    arrays = [np.zeros(s, dtype=np.float32) for s in (q_shape, k_shape, v_shape)]
    t_kwargs = {k: (_t(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    m_kwargs = {k: (_m(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    expected = _error(TF.scaled_dot_product_attention, *map(_t, arrays), **t_kwargs)
    assert _error(F.scaled_dot_product_attention, *map(_m, arrays), **m_kwargs) == expected


def test_sdpa_dtype_mismatch_error_matches_torch():
    q = np.zeros((1, 2, 4), dtype=np.float32)
    k = np.zeros((1, 2, 4), dtype=np.float64)
    expected = _error(TF.scaled_dot_product_attention, _t(q), _t(k), _t(q))
    assert _error(F.scaled_dot_product_attention, _m(q), _m(k), _m(q)) == expected


# ---- MultiheadAttention: structure ---------------------------------------------------------
MHA_CONFIGS = [
    {},
    {"bias": False},
    {"kdim": 4, "vdim": 6},
    {"add_bias_kv": True},
    {"add_zero_attn": True, "dropout": 0.1},
    {"batch_first": True, "kdim": 5},
]


@pytest.mark.parametrize("config", MHA_CONFIGS, ids=str)
def test_mha_parameters_state_dict_and_repr_match_torch(config):
    t = torch.nn.MultiheadAttention(8, 2, **config)
    m = nn.MultiheadAttention(8, 2, **config)
    assert list(m._parameters) == list(t._parameters)
    assert [k for k, v in m._parameters.items() if v is None] == [
        k for k, v in t._parameters.items() if v is None]
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == {
        k: tuple(v.shape) for k, v in t.state_dict().items()}
    assert list(m.state_dict()) == list(t.state_dict())
    assert repr(m) == repr(t)
    assert type(m.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert isinstance(m.out_proj, nn.Linear)
    for name in ("embed_dim", "kdim", "vdim", "num_heads", "head_dim", "dropout", "batch_first",
                 "_qkv_same_embed_dim", "add_zero_attn"):
        assert getattr(m, name) == getattr(t, name)


def test_mha_init_follows_torch():
    m = nn.MultiheadAttention(8, 2)
    assert (m.in_proj_bias.detach().numpy() == 0).all()
    assert (m.out_proj.bias.detach().numpy() == 0).all()
    bound = np.sqrt(6.0 / (8 + 24))  # xavier_uniform over (3E, E)
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > bound * 0.8


def test_mha_constructor_errors_match_torch():
    assert _error(nn.MultiheadAttention, 7, 2) == _error(torch.nn.MultiheadAttention, 7, 2) == (
        AssertionError, "embed_dim must be divisible by num_heads")
    assert _error(nn.MultiheadAttention, 0, 2) == _error(torch.nn.MultiheadAttention, 0, 2)
    assert _error(nn.MultiheadAttention, 8, -1) == _error(torch.nn.MultiheadAttention, 8, -1)


# ---- MultiheadAttention: forward parity ----------------------------------------------------
def _twins(config: dict, seed: int = 0):
    torch.manual_seed(seed)
    t = torch.nn.MultiheadAttention(8, 2, **config)
    with torch.no_grad():
        for p in t.parameters():
            p.normal_(0, 0.5)
    m = nn.MultiheadAttention(8, 2, **config)
    m.load_state_dict({k: mininn.tensor(v.detach().numpy().copy()) for k, v in t.state_dict().items()})
    return t, m


def _inputs(rng, config, unbatched=False, self_attn=True, n=3, tgt=4, src=5):
    def shape(seq, dim):
        if unbatched:
            return (seq, dim)
        return (n, seq, dim) if config.get("batch_first") else (seq, n, dim)
    q = rng.standard_normal(shape(tgt, 8)).astype(np.float32)
    if self_attn:
        return q, None, None
    k = rng.standard_normal(shape(src, config.get("kdim") or 8)).astype(np.float32)
    v = rng.standard_normal(shape(src, config.get("vdim") or 8)).astype(np.float32)
    return q, k, v


def _masks(rng, kind, unbatched, n, tgt, src, heads=2):
    kpm = attn = None
    if kind in ("bool", "both_bool"):
        kpm = rng.random((src,) if unbatched else (n, src)) > 0.7
        kpm[..., 0] = False
    if kind == "float_kpm":
        kpm = np.where(rng.random((src,) if unbatched else (n, src)) > 0.7, -1e4, 0.3).astype(np.float32)
    if kind in ("attn2d", "both_bool"):
        attn = rng.random((tgt, src)) > 0.7
        np.fill_diagonal(attn, False)
    if kind == "attn3d":
        attn = rng.standard_normal(((1 if unbatched else n) * heads, tgt, src)).astype(np.float32)
    return kpm, attn


FORWARD_CASES = [
    ({}, {}),
    ({"batch_first": True}, {}),
    ({}, {"mask": "bool"}),
    ({"batch_first": True}, {"mask": "both_bool", "average_attn_weights": False}),
    ({}, {"mask": "attn3d"}),
    ({}, {"mask": "float_kpm"}),
    ({}, {"need_weights": False, "mask": "both_bool"}),
    ({"batch_first": True}, {"need_weights": False}),
    ({}, {"self_attn": False}),
    ({"kdim": 4, "vdim": 6, "batch_first": True}, {"self_attn": False, "mask": "bool"}),
    ({"bias": False}, {}),
    ({"add_bias_kv": True}, {"mask": "both_bool"}),
    ({"add_zero_attn": True}, {"self_attn": False, "mask": "attn3d"}),
    ({"add_bias_kv": True, "add_zero_attn": True}, {"mask": "bool", "need_weights": False}),
    ({}, {"unbatched": True, "mask": "both_bool"}),
    ({"batch_first": True}, {"unbatched": True, "mask": "attn3d", "self_attn": False}),
]


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("config, case", FORWARD_CASES, ids=str)
def test_mha_forward_matches_torch_with_grads_of_inputs_and_parameters(rng, config, case, training):
    t_mod, m_mod = _twins(config)
    t_mod.train(training)
    m_mod.train(training)
    unbatched = case.get("unbatched", False)
    self_attn = case.get("self_attn", True)
    q, k, v = _inputs(rng, config, unbatched, self_attn)
    src = q.shape[0 if unbatched or not config.get("batch_first") else 1] if self_attn else 5
    kpm, attn = _masks(rng, case.get("mask"), unbatched, 3, 4 if not self_attn else src, src)
    kwargs = {"need_weights": case.get("need_weights", True),
              "average_attn_weights": case.get("average_attn_weights", True)}
    tq, mq = _t(q, True), _m(q, True)
    tk, mk = (tq, mq) if self_attn else (_t(k, True), _m(k, True))
    tv, mv = (tq, mq) if self_attn else (_t(v, True), _m(v, True))
    to, tw = t_mod(tq, tk, tv, key_padding_mask=_t(kpm), attn_mask=_t(attn), **kwargs)
    mo, mw = m_mod(mq, mk, mv, key_padding_mask=_m(kpm), attn_mask=_m(attn), **kwargs)
    _close(mo, to)
    assert (mw is None) == (tw is None)
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    t_loss = (to * torch.tensor(g)).sum()
    m_loss = (mo * mininn.tensor(g)).sum()
    if tw is not None:
        _close(mw, tw)
        gw = rng.standard_normal(tuple(tw.shape)).astype(np.float32)
        t_loss = t_loss + (tw * torch.tensor(gw)).sum()
        m_loss = m_loss + (mw * mininn.tensor(gw)).sum()
    t_loss.backward()
    m_loss.backward()
    m_params = dict(m_mod.named_parameters())
    assert list(m_params) == [n for n, _ in t_mod.named_parameters()]
    for name, tp in t_mod.named_parameters():
        _close(m_params[name].grad, tp.grad, tol=2e-5)
    for t_in, m_in in {id(tq): (tq, mq), id(tk): (tk, mk), id(tv): (tv, mv)}.values():
        _close(m_in.grad, t_in.grad)


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_in_eval_under_no_grad_matches_torchs_fast_path(rng, batch_first):
    t_mod, m_mod = _twins({"batch_first": batch_first})
    t_mod.eval()
    m_mod.eval()
    q, _, _ = _inputs(rng, {"batch_first": batch_first})
    kpm = np.zeros((3, 4), dtype=bool)
    kpm[1, 2:] = True
    with torch.no_grad():
        to, tw = t_mod(_t(q), _t(q), _t(q), key_padding_mask=_t(kpm))
    with mininn.no_grad():
        mq = _m(q)
        mo, mw = m_mod(mq, mq, mq, key_padding_mask=_m(kpm))
    _close(mo, to)
    _close(mw, tw)


def test_mha_causal_hint_matches_torch(rng):
    t_mod, m_mod = _twins({"batch_first": True})
    q, _, _ = _inputs(rng, {"batch_first": True})
    causal = np.triu(np.full((4, 4), -np.inf, dtype=np.float32), 1)
    for need_weights in (False, True):
        to, _ = t_mod(_t(q), _t(q), _t(q), attn_mask=_t(causal), is_causal=True,
                      need_weights=need_weights)
        mq = _m(q)
        mo, _ = m_mod(mq, mq, mq, attn_mask=_m(causal), is_causal=True, need_weights=need_weights)
        _close(mo, to)


def test_mha_fully_padded_sequences_give_nan_weights_like_torch(rng):
    t_mod, m_mod = _twins({"batch_first": True})
    q, _, _ = _inputs(rng, {"batch_first": True})
    kpm = np.zeros((3, 4), dtype=bool)
    kpm[2] = True
    to, tw = t_mod(_t(q), _t(q), _t(q), key_padding_mask=_t(kpm))
    mq = _m(q)
    mo, mw = m_mod(mq, mq, mq, key_padding_mask=_m(kpm))
    np.testing.assert_array_equal(np.isnan(mo.detach().numpy()), np.isnan(to.detach().numpy()))
    np.testing.assert_array_equal(np.isnan(mw.detach().numpy()), np.isnan(tw.detach().numpy()))
    to, _ = t_mod(_t(q), _t(q), _t(q), key_padding_mask=_t(kpm), need_weights=False)
    mo, _ = m_mod(mq, mq, mq, key_padding_mask=_m(kpm), need_weights=False)
    _close(mo, to)


def test_functional_mha_with_static_keys_and_values_matches_torch(rng):
    t_mod, m_mod = _twins({})
    q = rng.standard_normal((4, 3, 8)).astype(np.float32)
    sk = rng.standard_normal((6, 5, 4)).astype(np.float32)
    sv = rng.standard_normal((6, 5, 4)).astype(np.float32)

    def run(lib, mod, conv):
        return lib.multi_head_attention_forward(
            conv(q), conv(q), conv(q), 8, 2, mod.in_proj_weight, mod.in_proj_bias, None, None,
            False, 0.0, mod.out_proj.weight, mod.out_proj.bias, training=False,
            static_k=conv(sk), static_v=conv(sv))

    to, tw = run(TF, t_mod, _t)
    mo, mw = run(F, m_mod, _m)
    _close(mo, to)
    _close(mw, tw)


# ---- MultiheadAttention: errors and warnings -----------------------------------------------
def _both_errors(config, q_shape, k_shape, v_shape, **kwargs):
    t_mod, m_mod = _twins(config)
    arrays = [np.zeros(s, dtype=np.float32) for s in (q_shape, k_shape, v_shape)]
    t_kw = {k: _t(v) for k, v in kwargs.items() if isinstance(v, np.ndarray)}
    m_kw = {k: _m(v) for k, v in kwargs.items() if isinstance(v, np.ndarray)}
    t_kw.update({k: v for k, v in kwargs.items() if not isinstance(v, np.ndarray)})
    m_kw.update({k: v for k, v in kwargs.items() if not isinstance(v, np.ndarray)})
    expected = _error(t_mod, *map(_t, arrays), **t_kw)
    got = _error(m_mod, *map(_m, arrays), **m_kw)
    return got, (expected[0], expected[1].replace("torch.Size", "mininn.Size"))


@pytest.mark.parametrize(
    "shapes, kwargs",
    [
        (((4, 8), (5, 3, 8), (5, 3, 8)), {}),
        (((4, 3, 8), (5, 8), (5, 8)), {}),
        (((1, 4, 3, 8),) * 3, {}),
        (((4, 3, 8),) * 3, {"key_padding_mask": np.zeros(4, dtype=bool)}),
        (((4, 3, 8),) * 3, {"attn_mask": np.zeros(4, dtype=bool)}),
        (((4, 3, 8),) * 3, {"attn_mask": np.zeros((4, 5), dtype=bool)}),
        (((4, 3, 8),) * 3, {"attn_mask": np.zeros((5, 4, 4), dtype=bool)}),
        (((4, 3, 8),) * 3, {"key_padding_mask": np.zeros((2, 4), dtype=bool)}),
        (((4, 3, 8),) * 3, {"key_padding_mask": np.zeros((3, 5), dtype=bool)}),
        (((4, 3, 8),) * 3, {"attn_mask": np.zeros((4, 4), dtype=np.int64)}),
        (((4, 3, 8),) * 3, {"is_causal": True}),
        (((4, 3, 6),) * 3, {}),
        (((4, 3, 8), (5, 3, 8), (6, 3, 8)), {}),
        (((4, 8), (5, 8), (5, 8)), {"attn_mask": np.zeros((3, 4, 5), dtype=bool)}),
    ],
)
def test_mha_input_errors_match_torch(shapes, kwargs):
    got, expected = _both_errors({}, *shapes, **kwargs)
    assert got == expected


def test_mixed_mask_types_warn_like_torch(rng):
    t_mod, m_mod = _twins({})
    q = rng.standard_normal((4, 3, 8)).astype(np.float32)
    kpm = np.zeros((3, 4), dtype=bool)
    attn = np.zeros((4, 4), dtype=np.float32)
    with pytest.warns(UserWarning) as t_rec:
        t_mod(_t(q), _t(q), _t(q), key_padding_mask=_t(kpm), attn_mask=_t(attn))
    with pytest.warns(UserWarning) as m_rec:
        m_mod(_m(q), _m(q), _m(q), key_padding_mask=_m(kpm), attn_mask=_m(attn))
    assert [str(r.message) for r in m_rec] == [str(r.message) for r in t_rec]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m_mod(_m(q), _m(q), _m(q), key_padding_mask=_m(kpm), attn_mask=_m(attn > 0))


def test_mha_dropout_applies_to_returned_weights_only_in_training(rng):
    m_mod = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    x = _m(rng.standard_normal((2, 16, 8)).astype(np.float32))
    mininn.manual_seed(3)
    _, dropped = m_mod(x, x, x, average_attn_weights=False)
    kept = dropped.detach().numpy()
    assert (kept == 0).mean() == pytest.approx(0.5, abs=0.1)
    m_mod.eval()
    _, clean = m_mod(x, x, x, average_attn_weights=False)
    clean = clean.detach().numpy()
    nonzero = kept != 0
    np.testing.assert_allclose(kept[nonzero], clean[nonzero] * 2, rtol=1e-5)
    np.testing.assert_allclose(clean.sum(axis=-1), 1.0, rtol=1e-5)
