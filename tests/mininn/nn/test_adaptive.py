"""``AdaptiveLogSoftmaxWithLoss`` against torch 2.13: layout, outputs, gradients, log_prob, predict."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, state_layout, to_numpy, tol, twin

torch = pytest.importorskip("torch")

DTYPES = [np.float32, np.float64]
CONFIGS = [
    dict(in_features=8, n_classes=10, cutoffs=[3, 6], div_value=2.0, head_bias=True),
    dict(in_features=16, n_classes=12, cutoffs=[4], div_value=4.0, head_bias=False),
    dict(in_features=8, n_classes=10, cutoffs=[3, 9]),  # a zero-width tail layer
]


def _pair(config, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn when they initialise zero-element weights
        t_mod = torch.nn.AdaptiveLogSoftmaxWithLoss(**config, dtype=getattr(torch, np.dtype(dtype).name))
        m_mod = nn.AdaptiveLogSoftmaxWithLoss(**config, dtype=getattr(mininn, np.dtype(dtype).name))
    return t_mod, twin(t_mod, m_mod)


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_repr_attributes_and_state_layout_match_torch(config):
    t_mod, m_mod = _pair(config, np.float32)
    assert repr(m_mod) == repr(t_mod)
    assert state_layout(m_mod) == state_layout(t_mod)
    for attr in ("in_features", "n_classes", "cutoffs", "div_value", "head_bias", "shortlist_size",
                 "n_clusters", "head_size"):
        assert getattr(m_mod, attr) == getattr(t_mod, attr)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_forward_output_loss_and_all_gradients_match_torch(dtype, config):
    t_mod, m_mod = _pair(config, dtype)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, config["in_features"])).astype(dtype)
    target = np.array([0, config["n_classes"] - 1, 2, config["cutoffs"][0], 5, 1, config["n_classes"] - 2])
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    t_out, m_out = t_mod(tx, torch.tensor(target)), m_mod(mx, mininn.tensor(target))
    assert type(m_out).__name__ == "_ASMoutput" and m_out._fields == ("output", "loss")
    t = tol(dtype)
    np.testing.assert_allclose(to_numpy(m_out.output), to_numpy(t_out.output), **t)
    np.testing.assert_allclose(to_numpy(m_out.loss), to_numpy(t_out.loss), **t)
    cot = rng.standard_normal(7).astype(dtype)
    (t_out.loss + (t_out.output * torch.tensor(cot)).sum()).backward()
    (m_out.loss + (m_out.output * mininn.tensor(cot)).sum()).backward()
    np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), **t)
    for name, tp in t_mod.named_parameters():
        np.testing.assert_allclose(to_numpy(m_mod.get_parameter(name).grad), to_numpy(tp.grad), **t,
                                   err_msg=name)


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_log_prob_and_predict_match_torch(config):
    t_mod, m_mod = _pair(config, np.float64)
    x = np.random.default_rng(1).standard_normal((9, config["in_features"]))
    expected = to_numpy(t_mod.log_prob(torch.tensor(x)))
    np.testing.assert_allclose(to_numpy(m_mod.log_prob(mininn.tensor(x))), expected, **tol(np.float64))
    predicted = m_mod.predict(mininn.tensor(x))
    assert predicted.dtype == mininn.int64
    np.testing.assert_array_equal(predicted.numpy(), t_mod.predict(torch.tensor(x)).numpy())


def test_unbatched_input_gives_a_scalar_output():
    t_mod, m_mod = _pair(CONFIGS[0], np.float64)
    x = np.random.default_rng(2).standard_normal(8)
    t_out, m_out = t_mod(torch.tensor(x), torch.tensor(7)), m_mod(mininn.tensor(x), mininn.tensor(7))
    assert m_out.output.shape == () and m_out.loss.shape == ()
    assert m_out.output.item() == pytest.approx(t_out.output.item(), rel=1e-12)


def test_default_init_draws_each_linear_from_its_kaiming_bound():
    mod = nn.AdaptiveLogSoftmaxWithLoss(64, 400, [100, 200], div_value=2.0, head_bias=True)
    for name, param in mod.named_parameters():
        values = param.detach().numpy()
        fan_in = mod.get_submodule(name.rsplit(".", 1)[0]).in_features
        bound = 1 / np.sqrt(fan_in)
        assert np.abs(values).max() <= bound, name
        assert values.std() == pytest.approx(bound / np.sqrt(3), rel=0.15), name


@pytest.mark.parametrize(
    "kwargs",
    [dict(cutoffs=c) for c in ([6, 3], [3, 3], [0, 3], [3, 10], [])],
    ids=str,
)
def test_bad_cutoffs_raise_torchs_error(kwargs):
    same_error(lambda: torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, **kwargs),
               lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, **kwargs))


@pytest.mark.parametrize(
    "x_shape, target",
    [
        ((5, 8), [0, 4, 10, 2, 7]),
        ((5, 8), [0, -1, 3, 2, 7]),
        ((5, 8), [0, 4, 9, 2]),
        ((8,), [3]),
        ((1, 5, 8), [3]),
        ((5, 8), [[0], [1], [2], [3], [4]]),
        ((5, 8), 3),
    ],
)
def test_bad_inputs_and_targets_raise_torchs_errors(x_shape, target):
    t_mod, m_mod = _pair(CONFIGS[0], np.float32)
    x = np.zeros(x_shape, np.float32)
    same_error(lambda: t_mod(torch.tensor(x), torch.tensor(target)),
               lambda: m_mod(mininn.tensor(x), mininn.tensor(target)))
