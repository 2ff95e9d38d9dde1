"""``kl_div``, ``poisson_nll_loss``, ``gaussian_nll_loss`` and their modules against torch 2.13."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._loss_parity import check_loss, same_loss_error

torch = pytest.importorskip("torch")
TF = torch.nn.functional

REDUCTIONS = ["none", "mean", "sum"]
DTYPES = [np.float32, np.float64]


def _rng():
    return np.random.default_rng(0)


# ---- kl_div --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["none", "batchmean", "sum", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch_values_and_grads_of_input_and_target(dtype, reduction, log_target):
    rng = _rng()
    logp = np.log(rng.dirichlet(np.ones(5), 4)).astype(dtype)
    q = rng.dirichlet(np.ones(5), 4)
    target = (np.log(q) if log_target else q).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 'mean' warns; checked below
        check_loss(TF.kl_div, F.kl_div, [logp, target], (0, 1), reduction=reduction, log_target=log_target)


def test_kl_div_zero_target_adds_nothing():
    x = mininn.tensor([0.3, -0.2], requires_grad=True)
    out = F.kl_div(x, mininn.tensor([0.0, 0.5]), reduction="sum")
    assert out.item() == pytest.approx(0.5 * np.log(0.5) + 0.5 * 0.2)
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, -0.5])


def test_kl_div_mean_reduction_warns_with_torchs_message_and_batchmean_does_not():
    x, y = mininn.zeros(2, 3), mininn.full((2, 3), 1 / 3)
    with pytest.warns(UserWarning) as record:
        F.kl_div(x, y)
        nn.KLDivLoss()(x, y)
    with pytest.warns(UserWarning) as torch_record:
        TF.kl_div(torch.zeros(2, 3), torch.full((2, 3), 1 / 3))
    assert [str(r.message) for r in record] == [str(torch_record[0].message)] * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.kl_div(x, y, reduction="batchmean")


def test_kl_div_of_integers_raises_torchs_error():
    same_loss_error(TF.kl_div, F.kl_div, [np.arange(3), np.arange(3)], reduction="sum")


# ---- poisson_nll_loss ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input, full", [(True, False), (True, True), (False, False), (False, True)])
def test_poisson_nll_loss_matches_torch_including_stirlings_term(dtype, reduction, log_input, full):
    rng = _rng()
    x = rng.standard_normal((3, 4)) if log_input else rng.random((3, 4)) * 3
    counts = rng.integers(0, 6, (3, 4)).astype(dtype)
    check_loss(TF.poisson_nll_loss, F.poisson_nll_loss, [x.astype(dtype), counts], (0, 1),
               reduction=reduction, log_input=log_input, full=full)


def test_poisson_nll_loss_of_integers_is_float32_like_torch():
    out = F.poisson_nll_loss(mininn.arange(3), mininn.arange(3))
    expected = TF.poisson_nll_loss(torch.arange(3), torch.arange(3))
    assert out.dtype == mininn.float32
    assert out.item() == pytest.approx(expected.item(), rel=1e-6)


# ---- gaussian_nll_loss -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("var_shape", [(3, 4), (3,), (3, 1), (1, 4)], ids=str)
def test_gaussian_nll_loss_matches_torch_for_each_variance_layout(dtype, reduction, var_shape):
    rng = _rng()
    x, y = rng.standard_normal((2, 3, 4)).astype(dtype)
    var = (rng.random(var_shape) + 0.1).astype(dtype)
    check_loss(TF.gaussian_nll_loss, F.gaussian_nll_loss, [x, y, var], (0, 1, 2), reduction=reduction)


def test_gaussian_nll_loss_clamps_small_variances_but_passes_their_gradient_through():
    rng = _rng()
    x, y = rng.standard_normal((2, 6))
    var = np.array([1e-9, 1e-7, 0.5, 2.0, 1e-6, 3.0])
    check_loss(TF.gaussian_nll_loss, F.gaussian_nll_loss, [x, y, var], (0, 1, 2), reduction="sum", full=True,
               eps=1e-5)


def test_gaussian_nll_loss_takes_a_float_variance():
    x, y = _rng().standard_normal((2, 3))
    check_loss(TF.gaussian_nll_loss, F.gaussian_nll_loss, [x, y], (0, 1), var=0.7, full=True)


@pytest.mark.parametrize(
    "var, kwargs",
    [
        (np.ones((3, 2)), {}),
        (np.ones(4), {}),
        (np.ones((1, 1)), {}),
        (-np.ones((3, 4)), {}),
        (-0.5, {}),
        (np.ones((3, 4)), {"reduction": "avg"}),
    ],
)
def test_gaussian_nll_loss_errors_match_torch(var, kwargs):
    arrays = [np.zeros((3, 4)), np.zeros((3, 4))]
    same_loss_error(TF.gaussian_nll_loss, F.gaussian_nll_loss, arrays, var=var, **kwargs)


@pytest.mark.parametrize("name", ["poisson_nll_loss", "kl_div", "gaussian_nll_loss"])
def test_target_that_does_not_broadcast_raises_torchs_error(name):
    kwargs = {"var": np.ones((3, 4))} if name == "gaussian_nll_loss" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_loss_error(getattr(TF, name), getattr(F, name), [np.zeros((3, 4)), np.zeros((3, 2))], **kwargs)


# ---- modules ---------------------------------------------------------------------------------
def test_modules_keep_their_options_reprs_and_compute_like_torch():
    rng = _rng()
    x = rng.standard_normal((3, 4))
    y = rng.random((3, 4))
    var = rng.random((3, 4)) + 0.1
    pairs = [
        (torch.nn.KLDivLoss(reduction="batchmean", log_target=False),
         nn.KLDivLoss(reduction="batchmean", log_target=False), [x, y], ("log_target",)),
        (torch.nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-4),
         nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-4), [np.abs(x), y * 5],
         ("log_input", "full", "eps")),
        (torch.nn.GaussianNLLLoss(full=True, eps=1e-3, reduction="sum"),
         nn.GaussianNLLLoss(full=True, eps=1e-3, reduction="sum"), [x, y, var], ("full", "eps")),
    ]
    for t_mod, m_mod, arrays, attrs in pairs:
        assert repr(m_mod) == repr(t_mod)
        assert list(m_mod.state_dict()) == list(t_mod.state_dict()) == []
        for attr in ("reduction", *attrs):
            assert getattr(m_mod, attr) == getattr(t_mod, attr)
        check_loss(t_mod, m_mod, arrays, tuple(range(len(arrays))))


def test_legacy_arguments_map_to_a_reduction_with_torchs_warning():
    with pytest.warns(UserWarning, match=r"please use reduction='sum' instead\."):
        assert nn.PoissonNLLLoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match=r"please use reduction='none' instead\."):
        assert nn.KLDivLoss(reduce=False).reduction == "none"
