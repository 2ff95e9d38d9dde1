"""TransformerEncoderLayer and TransformerEncoder against torch 2.13: structure, outputs in
train (dropout 0) and eval (torch's fast paths), gradients, masks and padded outputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, state_layout

torch = pytest.importorskip("torch")


def _t(a, grad=False):
    return None if a is None else torch.tensor(a, requires_grad=grad)


def _m(a, grad=False):
    return None if a is None else mininn.tensor(a.copy(), requires_grad=grad)


def _close(m, t, tol=2e-5):
    np.testing.assert_allclose(m.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _copy_weights(t_mod, m_mod):
    missing, unexpected = m_mod.load_state_dict(
        {k: mininn.tensor(v.detach().numpy().copy()) for k, v in t_mod.state_dict().items()})
    assert missing == [] and unexpected == []


def _layer_twins(**config):
    config.setdefault("dropout", 0.0)
    torch.manual_seed(0)
    t = torch.nn.TransformerEncoderLayer(16, 4, 32, **config)
    m = nn.TransformerEncoderLayer(16, 4, 32, **config)
    _copy_weights(t, m)
    return t, m


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---- TransformerEncoderLayer ---------------------------------------------------------------
@pytest.mark.parametrize("config", [{}, {"activation": "gelu", "norm_first": True},
                                    {"bias": False, "batch_first": True},
                                    {"activation": torch.nn.GELU}], ids=str)
def test_layer_children_state_dict_and_repr_match_torch(config):
    if config.get("activation") is torch.nn.GELU:
        t = torch.nn.TransformerEncoderLayer(8, 2, 16, activation=torch.nn.GELU())
        m = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU())
    else:
        t = torch.nn.TransformerEncoderLayer(8, 2, 16, **config)
        m = nn.TransformerEncoderLayer(8, 2, 16, **config)
    assert [n for n, _ in m.named_children()] == [n for n, _ in t.named_children()]
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == {
        k: tuple(v.shape) for k, v in t.state_dict().items()}
    assert list(m.state_dict()) == list(t.state_dict())
    assert repr(m) == repr(t)
    assert m.activation_relu_or_gelu == t.activation_relu_or_gelu
    assert m.norm_first == t.norm_first


def test_layer_activation_choices_and_errors():
    assert nn.TransformerEncoderLayer(8, 2, 16).activation is F.relu
    assert nn.TransformerEncoderLayer(8, 2, 16, activation="gelu").activation is F.gelu
    custom = nn.TransformerEncoderLayer(8, 2, 16, activation=mininn.tanh)
    assert custom.activation_relu_or_gelu == 0
    with pytest.raises(RuntimeError) as err:
        nn.TransformerEncoderLayer(8, 2, 16, activation="swish")
    with pytest.raises(RuntimeError) as t_err:
        torch.nn.TransformerEncoderLayer(8, 2, 16, activation="swish")
    assert str(err.value) == str(t_err.value)


LAYER_CASES = [
    ({}, {}),
    ({"batch_first": True}, {"kpm": True}),
    ({"norm_first": True, "activation": "gelu"}, {"causal": True}),
    ({"batch_first": True, "norm_first": True}, {"kpm": True, "causal": True}),
    ({"activation": "gelu", "layer_norm_eps": 1e-3}, {"mask3d": True}),
    ({"bias": False, "batch_first": True}, {"kpm": True}),
    ({}, {"unbatched": True}),
]


def _layer_inputs(rng, config, case, n=3, s=5):
    bf = config.get("batch_first", False)
    shape = (s, 16) if case.get("unbatched") else ((n, s, 16) if bf else (s, n, 16))
    x = rng.standard_normal(shape).astype(np.float32)
    kpm = mask = None
    if case.get("kpm"):
        kpm = np.zeros((n, s), dtype=bool)
        kpm[1, 3:] = True
        kpm[2, 4:] = True
    if case.get("causal"):
        mask = np.triu(np.ones((s, s), dtype=bool), 1)
    if case.get("mask3d"):
        mask = rng.standard_normal((n * 4, s, s)).astype(np.float32)
    return x, kpm, mask


@pytest.mark.parametrize("mode", ["train", "eval", "eval_no_grad"])
@pytest.mark.parametrize("config, case", LAYER_CASES, ids=str)
def test_layer_forward_and_grads_match_torch(rng, config, case, mode):
    t_mod, m_mod = _layer_twins(**config)
    t_mod.train(mode == "train")
    m_mod.train(mode == "train")
    x, kpm, mask = _layer_inputs(rng, config, case)
    causal = bool(case.get("causal"))
    if mode == "eval_no_grad":
        with torch.no_grad():
            to = t_mod(_t(x), src_mask=_t(mask), src_key_padding_mask=_t(kpm), is_causal=causal)
        with mininn.no_grad():
            mo = m_mod(_m(x), src_mask=_m(mask), src_key_padding_mask=_m(kpm), is_causal=causal)
        _close(mo, to)
        return
    tx, mx = _t(x, True), _m(x, True)
    to = t_mod(tx, src_mask=_t(mask), src_key_padding_mask=_t(kpm), is_causal=causal)
    mo = m_mod(mx, src_mask=_m(mask), src_key_padding_mask=_m(kpm), is_causal=causal)
    _close(mo, to)
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    to.backward(torch.tensor(g))
    mo.backward(mininn.tensor(g))
    _close(mx.grad, tx.grad)
    m_params = dict(m_mod.named_parameters())
    assert list(m_params) == [n for n, _ in t_mod.named_parameters()]
    for name, tp in t_mod.named_parameters():
        _close(m_params[name].grad, tp.grad, tol=5e-5)


def test_layer_dropout_is_active_only_in_training(rng):
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.5)
    x = _m(rng.standard_normal((5, 2, 16)).astype(np.float32))
    mininn.manual_seed(1)
    a = layer(x).detach().numpy()
    mininn.manual_seed(2)
    b = layer(x).detach().numpy()
    assert not np.allclose(a, b)
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())


# ---- TransformerEncoder --------------------------------------------------------------------
def _encoder_twins(num_layers=2, norm=True, enable_nested_tensor=True, mask_check=True, **config):
    config.setdefault("dropout", 0.0)
    config.setdefault("batch_first", True)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(16, 4, 32, **config), num_layers,
            norm=torch.nn.LayerNorm(16) if norm else None,
            enable_nested_tensor=enable_nested_tensor, mask_check=mask_check)
        m = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(16, 4, 32, **config), num_layers,
            norm=nn.LayerNorm(16) if norm else None,
            enable_nested_tensor=enable_nested_tensor, mask_check=mask_check)
    with torch.no_grad():
        for p in t.parameters():
            p.add_(torch.randn_like(p) * 0.1)  # distinct layers, non-trivial norms
    _copy_weights(t, m)
    return t, m


def test_encoder_deep_copies_the_layer():
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    enc = nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3 and enc.num_layers == 3
    assert all(lay is not layer for lay in enc.layers)
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    np.testing.assert_array_equal(enc.layers[2].linear1.weight.detach().numpy(),
                                  layer.linear1.weight.detach().numpy())
    t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 3,
                                    norm=torch.nn.LayerNorm(8))
    m = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(8))
    assert list(m.state_dict()) == list(t.state_dict())
    assert repr(m) == repr(t)


@pytest.mark.parametrize(
    "config",
    [{}, {"norm_first": True, "batch_first": True}, {"batch_first": True, "activation": F.tanh}],
    ids=["seq_first", "norm_first", "tanh_activation"],
)
def test_encoder_warns_why_nested_tensors_are_off_like_torch(config):
    t_config = dict(config)
    if t_config.get("activation") is F.tanh:
        t_config["activation"] = torch.tanh
    with pytest.warns(UserWarning) as t_rec:
        t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, **t_config), 1)
    with pytest.warns(UserWarning) as m_rec:
        m = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, **config), 1)
    assert [str(r.message) for r in m_rec] == [str(r.message) for r in t_rec]
    assert m.use_nested_tensor is t.use_nested_tensor is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1)
    assert ok.use_nested_tensor is True


def _padding(n=3, s=6, left_aligned=True):
    kpm = np.zeros((n, s), dtype=bool)
    kpm[1, 4:] = True
    kpm[2, 2:] = True
    if not left_aligned:
        kpm[0, 0] = True
    return kpm


ENCODER_CASES = [
    ({}, {"kpm": _padding()}),  # torch's nested-tensor path: padded outputs come back as zeros
    ({}, {"kpm": _padding(left_aligned=False)}),  # mask_check rejects it: plain computation
    ({"mask_check": False}, {"kpm": _padding(left_aligned=False)}),
    ({"enable_nested_tensor": False}, {"kpm": _padding()}),
    ({}, {}),
    ({}, {"mask": "causal"}),
    ({}, {"mask": "causal", "kpm": _padding()}),
    ({"norm": False, "batch_first": False}, {"kpm": _padding()}),
    ({"activation": "gelu"}, {"kpm": _padding()}),
]


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
@pytest.mark.filterwarnings("ignore:Support for mismatched src_key_padding_mask:UserWarning")
@pytest.mark.parametrize("config, case", ENCODER_CASES, ids=str)
def test_encoder_in_eval_under_no_grad_matches_torch_including_padded_outputs(rng, config, case):
    t_mod, m_mod = _encoder_twins(**config)
    t_mod.eval()
    m_mod.eval()
    bf = config.get("batch_first", True)
    x = rng.standard_normal((3, 6, 16) if bf else (6, 3, 16)).astype(np.float32)
    kpm = case.get("kpm")
    mask = None
    if case.get("mask") == "causal":
        mask = torch.nn.Transformer.generate_square_subsequent_mask(6).numpy()
    with torch.no_grad():
        to = t_mod(_t(x), mask=_t(mask), src_key_padding_mask=_t(kpm))
    with mininn.no_grad():
        mo = m_mod(_m(x), mask=_m(mask), src_key_padding_mask=_m(kpm))
    _close(mo, to)


def test_encoder_zeroes_padded_positions_only_on_torchs_nested_path(rng):
    t_mod, m_mod = _encoder_twins(norm=False)
    m_mod.eval()
    x = _m(rng.standard_normal((3, 6, 16)).astype(np.float32))
    kpm = _m(_padding())
    with mininn.no_grad():
        out = m_mod(x, src_key_padding_mask=kpm).numpy()
    assert (out[2, 2:] == 0).all() and (out[1, 4:] == 0).all()
    assert (out[0] != 0).all()
    out_grad_mode = m_mod(x, src_key_padding_mask=kpm).detach().numpy()  # params need grad
    assert (out_grad_mode[2, 2:] != 0).all()
    np.testing.assert_allclose(out_grad_mode[0], out[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("batch_first", [True, False])
def test_encoder_training_forward_and_grads_match_torch(rng, batch_first):
    t_mod, m_mod = _encoder_twins(batch_first=batch_first)
    x = rng.standard_normal((3, 6, 16) if batch_first else (6, 3, 16)).astype(np.float32)
    kpm = _padding()
    mask = np.triu(np.ones((6, 6), dtype=bool), 1)
    tx, mx = _t(x, True), _m(x, True)
    to = t_mod(tx, mask=_t(mask), src_key_padding_mask=_t(kpm))
    mo = m_mod(mx, mask=_m(mask), src_key_padding_mask=_m(kpm))
    _close(mo, to)
    to.sum().backward()
    mo.sum().backward()
    _close(mx.grad, tx.grad, tol=5e-5)
    m_params = dict(m_mod.named_parameters())
    assert list(m_params) == [n for n, _ in t_mod.named_parameters()]
    for name, tp in t_mod.named_parameters():
        _close(m_params[name].grad, tp.grad, tol=1e-4)


def test_encoder_detects_a_causal_mask_and_passes_the_hint_down(rng):
    _, m_mod = _encoder_twins(num_layers=1, norm=False)
    seen = []
    m_mod.layers[0].register_forward_pre_hook(
        lambda mod, args, kwargs: seen.append(kwargs["is_causal"]), with_kwargs=True)
    x = _m(rng.standard_normal((2, 6, 16)).astype(np.float32))
    causal = _m(torch.nn.Transformer.generate_square_subsequent_mask(6).numpy())
    m_mod(x, mask=causal)
    m_mod(x, mask=_m(np.zeros((6, 6), dtype=np.float32)))
    m_mod(x, mask=causal, is_causal=False)
    assert seen == [True, False, False]


# ---- TransformerDecoderLayer, TransformerDecoder, Transformer --------------------------------
@pytest.mark.parametrize("config", [{}, {"activation": "gelu", "norm_first": True},
                                    {"bias": False, "batch_first": True}], ids=str)
def test_decoder_layer_children_state_dict_and_repr_match_torch(config):
    t = torch.nn.TransformerDecoderLayer(8, 2, 16, **config)
    m = nn.TransformerDecoderLayer(8, 2, 16, **config)
    assert [n for n, _ in m.named_children()] == [n for n, _ in t.named_children()]
    assert state_layout(m) == state_layout(t)
    assert repr(m) == repr(t)
    assert m.norm_first == t.norm_first


def test_decoder_layer_activation_choices_and_errors():
    assert nn.TransformerDecoderLayer(8, 2, 16).activation is F.relu
    assert nn.TransformerDecoderLayer(8, 2, 16, activation="gelu").activation is F.gelu
    gelu = nn.GELU()
    layer = nn.TransformerDecoderLayer(8, 2, 16, activation=gelu)
    assert layer.activation is gelu and dict(layer.named_children())["activation"] is gelu
    same_error(lambda: torch.nn.TransformerDecoderLayer(8, 2, 16, activation="swish"),
               lambda: nn.TransformerDecoderLayer(8, 2, 16, activation="swish"))


def _transformer_twins(dtype=np.float32, **config):
    config.setdefault("dropout", 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        t = torch.nn.Transformer(16, 4, 2, 2, 32, **config)
        m = nn.Transformer(16, 4, 2, 2, 32, **config)
    if dtype == np.float64:
        t.double()
        m.double()
    with torch.no_grad():
        for p in t.parameters():
            p.add_(torch.randn_like(p) * 0.1)  # non-trivial norms and biases
    _copy_weights(t, m)
    return t, m


def test_transformer_children_state_dict_repr_and_attributes_match_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.Transformer(8, 2, 2, 1, 16, norm_first=True, activation="gelu")
        m = nn.Transformer(8, 2, 2, 1, 16, norm_first=True, activation="gelu")
    assert state_layout(m) == state_layout(t)
    assert repr(m) == repr(t)
    assert (m.d_model, m.nhead, m.batch_first) == (t.d_model, t.nhead, t.batch_first)
    assert m.decoder.num_layers == t.decoder.num_layers == 1


def test_transformer_warns_about_nested_tensors_like_torch():
    with pytest.warns(UserWarning) as t_rec:
        torch.nn.Transformer(8, 2, 1, 1, 16)
    with pytest.warns(UserWarning) as m_rec:
        nn.Transformer(8, 2, 1, 1, 16)
    assert [str(r.message) for r in m_rec] == [str(r.message) for r in t_rec]


def test_transformer_initialises_every_matrix_with_xavier_uniform():
    mininn.manual_seed(0)
    m = nn.Transformer(64, 4, 1, 1, 128, batch_first=True)
    for name, p in m.named_parameters():
        values = p.detach().numpy()
        if p.ndim > 1:
            fan_out, fan_in = p.shape[0], p.shape[1]
            bound = np.sqrt(6.0 / (fan_in + fan_out))
            assert np.abs(values).max() <= bound, name
            np.testing.assert_allclose(values.std(), bound / np.sqrt(3), rtol=0.1, err_msg=name)
        elif "norm" in name:
            np.testing.assert_array_equal(values, 1.0 if name.endswith("weight") else 0.0)
        elif "in_proj_bias" in name or "out_proj.bias" in name:
            np.testing.assert_array_equal(values, 0.0)


def test_transformer_keeps_custom_encoder_and_decoder_and_reinitialises_them():
    mininn.manual_seed(0)
    encoder = nn.Linear(64, 64)
    decoder_layer = nn.TransformerDecoderLayer(64, 4, 32)
    decoder = nn.TransformerDecoder(decoder_layer, 1)
    m = nn.Transformer(64, 4, custom_encoder=encoder, custom_decoder=decoder)
    assert m.encoder is encoder and m.decoder is decoder
    assert list(m.state_dict())[:2] == ["encoder.weight", "encoder.bias"]
    assert np.abs(encoder.weight.detach().numpy()).max() > 1 / 8  # xavier bound, not kaiming's 1/8


def test_generate_square_subsequent_mask_matches_torch():
    for dtype, t_dtype in [(None, None), (mininn.float64, torch.float64)]:
        m = nn.Transformer.generate_square_subsequent_mask(4, dtype=dtype)
        t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=t_dtype)
        assert m.dtype.name == str(t.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(m.numpy(), t.numpy())


def _transformer_inputs(rng, dtype, batch_first, case, n=2, s=5, t=4):
    unbatched = case.get("unbatched")

    def seq(length):
        shape = (length, 16) if unbatched else ((n, length, 16) if batch_first else (length, n, 16))
        return rng.standard_normal(shape).astype(dtype)

    masks = {}
    if case.get("src_mask"):
        masks["src_mask"] = rng.random((s, s)) < 0.2  # bool, True blocks
        np.fill_diagonal(masks["src_mask"], False)
    if case.get("tgt_mask") == "causal":
        masks["tgt_mask"] = np.triu(np.full((t, t), -np.inf, dtype=dtype), 1)
    elif case.get("tgt_mask") == "bool":
        masks["tgt_mask"] = np.triu(np.ones((t, t), dtype=bool), 1)
    if case.get("memory_mask"):
        masks["memory_mask"] = rng.standard_normal((n * 4, t, s)).astype(dtype)
    if case.get("kpm"):
        src_kpm = np.zeros((n, s), dtype=bool)
        src_kpm[1, 3:] = True
        tgt_kpm = np.zeros((n, t), dtype=bool)
        tgt_kpm[0, 3:] = True
        masks.update(src_key_padding_mask=src_kpm, tgt_key_padding_mask=tgt_kpm,
                     memory_key_padding_mask=src_kpm)
    return seq(s), seq(t), masks


TRANSFORMER_CASES = [
    ({}, {}),
    ({"batch_first": True}, {"src_mask": True, "tgt_mask": "causal", "kpm": True}),
    ({"norm_first": True, "activation": "gelu"}, {"tgt_mask": "bool", "memory_mask": True}),
    ({"batch_first": True, "bias": False}, {"kpm": True, "tgt_mask": "causal"}),
    ({"layer_norm_eps": 1e-3}, {"unbatched": True, "tgt_mask": "causal"}),
]


TRANSFORMER_RUNS = (
    [(config, case, training, np.float32) for config, case in TRANSFORMER_CASES for training in (True, False)]
    + [(config, case, True, np.float64) for config, case in TRANSFORMER_CASES[1:3]]
)


@pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning")
@pytest.mark.parametrize("config, case, training, dtype", TRANSFORMER_RUNS, ids=str)
def test_transformer_forward_and_grads_match_torch(rng, config, case, training, dtype):
    t_mod, m_mod = _transformer_twins(dtype, **config)
    t_mod.train(training)
    m_mod.train(training)
    src, tgt, masks = _transformer_inputs(rng, dtype, config.get("batch_first", False), case)
    t_src, t_tgt, m_src, m_tgt = _t(src, True), _t(tgt, True), _m(src, True), _m(tgt, True)
    to = t_mod(t_src, t_tgt, **{k: _t(v) for k, v in masks.items()})
    mo = m_mod(m_src, m_tgt, **{k: _m(v) for k, v in masks.items()})
    tol = 2e-5 if dtype == np.float32 else 1e-10
    assert mo.dtype.name == str(to.dtype).removeprefix("torch.")
    _close(mo, to, tol)
    g = rng.standard_normal(tuple(to.shape)).astype(dtype)
    to.backward(torch.tensor(g))
    mo.backward(mininn.tensor(g))
    _close(m_src.grad, t_src.grad, 5 * tol)
    _close(m_tgt.grad, t_tgt.grad, 5 * tol)
    m_params = dict(m_mod.named_parameters())
    assert list(m_params) == [n for n, _ in t_mod.named_parameters()]
    for name, tp in t_mod.named_parameters():
        _close(m_params[name].grad, tp.grad, 5 * tol)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
@pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning")
def test_transformer_in_eval_under_no_grad_matches_torch(rng):
    t_mod, m_mod = _transformer_twins(batch_first=True)
    t_mod.eval()
    m_mod.eval()
    src, tgt, masks = _transformer_inputs(rng, np.float32, True, {"kpm": True, "tgt_mask": "causal"})
    with torch.no_grad():
        to = t_mod(_t(src), _t(tgt), **{k: _t(v) for k, v in masks.items()})
    with mininn.no_grad():
        mo = m_mod(_m(src), _m(tgt), **{k: _m(v) for k, v in masks.items()})
    _close(mo, to)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")
def test_transformer_dropout_is_active_only_in_training(rng):
    m = nn.Transformer(16, 4, 1, 1, 32, dropout=0.5)
    src = _m(rng.standard_normal((5, 2, 16)).astype(np.float32))
    tgt = _m(rng.standard_normal((4, 2, 16)).astype(np.float32))
    assert not np.allclose(m(src, tgt).detach().numpy(), m(src, tgt).detach().numpy())
    m.eval()
    np.testing.assert_array_equal(m(src, tgt).detach().numpy(), m(src, tgt).detach().numpy())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("src_shape, tgt_shape", [((5, 2, 16), (4, 3, 16)), ((5, 2, 16), (4, 2, 8)),
                                                  ((2, 5, 16), (3, 4, 16)), ((5, 8), (4, 16))])
def test_transformer_rejects_mismatched_inputs_like_torch(batch_first, src_shape, tgt_shape):
    t_mod, m_mod = _transformer_twins(batch_first=batch_first)
    src, tgt = np.zeros(src_shape, np.float32), np.zeros(tgt_shape, np.float32)
    same_error(lambda: t_mod(_t(src), _t(tgt)), lambda: m_mod(_m(src), _m(tgt)))


def test_decoder_detects_a_causal_tgt_mask_and_passes_the_hints_down(rng):
    layer = nn.TransformerDecoderLayer(16, 4, 32, batch_first=True)
    decoder = nn.TransformerDecoder(layer, 1)
    seen = []
    decoder.layers[0].register_forward_pre_hook(
        lambda mod, args, kwargs: seen.append((kwargs["tgt_is_causal"], kwargs["memory_is_causal"])),
        with_kwargs=True)
    tgt = _m(rng.standard_normal((2, 4, 16)).astype(np.float32))
    memory = _m(rng.standard_normal((2, 5, 16)).astype(np.float32))
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    decoder(tgt, memory, tgt_mask=causal)
    decoder(tgt, memory, tgt_mask=mininn.zeros(4, 4))
    decoder(tgt, memory, tgt_mask=causal, tgt_is_causal=False)
    decoder(tgt, memory)
    assert seen == [(True, False), (False, False), (False, False), (False, False)]


DECODER_CASES = [
    ({}, {"tgt_is_causal": True}),
    ({"batch_first": True, "norm_first": True}, {"kpm": True}),
    ({"activation": "gelu", "bias": False}, {"memory_mask": True, "memory_is_causal": False}),
    ({}, {"unbatched": True, "tgt_is_causal": True}),
]


@pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning")
@pytest.mark.parametrize("num_layers", [None, 2], ids=["layer", "decoder"])
@pytest.mark.parametrize("mode", ["train", "eval_no_grad"])
@pytest.mark.parametrize("config, case", DECODER_CASES, ids=str)
def test_decoder_layer_and_decoder_match_torch(rng, config, case, mode, num_layers):
    config = dict(config, dropout=0.0)
    torch.manual_seed(0)
    t = torch.nn.TransformerDecoderLayer(16, 4, 32, **config)
    m = nn.TransformerDecoderLayer(16, 4, 32, **config)
    if num_layers:
        t = torch.nn.TransformerDecoder(t, num_layers, norm=torch.nn.LayerNorm(16))
        m = nn.TransformerDecoder(m, num_layers, norm=nn.LayerNorm(16))
    _copy_weights(t, m)
    t.train(mode == "train")
    m.train(mode == "train")
    bf, n, s, tl = config.get("batch_first", False), 2, 5, 4

    def seq(length):
        shape = (length, 16) if case.get("unbatched") else ((n, length, 16) if bf else (length, n, 16))
        return rng.standard_normal(shape).astype(np.float32)

    tgt, memory = seq(tl), seq(s)
    kwargs = {}
    if case.get("tgt_is_causal"):
        kwargs.update(tgt_mask=np.triu(np.full((tl, tl), -np.inf, np.float32), 1), tgt_is_causal=True)
    if case.get("memory_mask"):
        kwargs.update(memory_mask=rng.random((tl, s)) < 0.3, memory_is_causal=False)
    if case.get("kpm"):
        kpm = np.zeros((n, tl), dtype=bool)
        kpm[1, 2:] = True
        kwargs.update(tgt_key_padding_mask=kpm, memory_key_padding_mask=np.zeros((n, s), dtype=bool))
    t_kw = {k: _t(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    m_kw = {k: _m(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    if mode == "eval_no_grad":
        with torch.no_grad():
            to = t(_t(tgt), _t(memory), **t_kw)
        with mininn.no_grad():
            mo = m(_m(tgt), _m(memory), **m_kw)
        _close(mo, to)
        return
    t_in, m_in = (_t(tgt, True), _t(memory, True)), (_m(tgt, True), _m(memory, True))
    to, mo = t(*t_in, **t_kw), m(*m_in, **m_kw)
    _close(mo, to)
    g = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    to.backward(torch.tensor(g))
    mo.backward(mininn.tensor(g))
    for mx, tx in zip(m_in, t_in):
        _close(mx.grad, tx.grad, 5e-5)
    m_params = dict(m.named_parameters())
    for name, tp in t.named_parameters():
        _close(m_params[name].grad, tp.grad, 1e-4)


BAD_MASKS = [
    {"tgt_is_causal": True},
    {"tgt_mask": ("zeros", (3, 3), "float32")},
    {"memory_key_padding_mask": ("zeros", (2, 4), "bool")},
    {"src_key_padding_mask": ("zeros", (2, 4), "int64")},
]


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")
@pytest.mark.parametrize("bad", BAD_MASKS, ids=str)
def test_transformer_rejects_bad_masks_like_torch(bad):
    t, m = torch.nn.Transformer(8, 2, 1, 1, 16), nn.Transformer(8, 2, 1, 1, 16)

    def call(lib, module):
        kwargs = {k: getattr(lib, v[0])(*v[1], dtype=getattr(lib, v[2])) if isinstance(v, tuple) else v
                  for k, v in bad.items()}
        return lambda: module(lib.zeros(3, 2, 8), lib.zeros(4, 2, 8), **kwargs)

    same_error(call(torch, t), call(mininn, m))
