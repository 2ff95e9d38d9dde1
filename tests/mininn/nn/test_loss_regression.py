"""``smooth_l1_loss``/``SmoothL1Loss`` and ``huber_loss``/``HuberLoss`` against torch 2.13."""

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


def _arrays(dtype, shape=(3, 5), target_shape=None):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    y = rng.standard_normal(target_shape or shape).astype(dtype)
    return x, y


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("beta", [1.0, 0.4, 0.0])
def test_smooth_l1_loss_matches_torch_values_and_grads_of_input_and_target(dtype, reduction, beta):
    check_loss(TF.smooth_l1_loss, F.smooth_l1_loss, list(_arrays(dtype)), (0, 1), reduction=reduction,
               beta=beta)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("delta", [1.0, 0.4, 2.5])
def test_huber_loss_matches_torch_values_and_grads_of_input_and_target(dtype, reduction, delta):
    check_loss(TF.huber_loss, F.huber_loss, list(_arrays(dtype)), (0, 1), reduction=reduction, delta=delta)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_huber_loss_weight_scales_each_element_and_mean_still_divides_by_count(reduction):
    x, y = _arrays(np.float64)
    w = np.random.default_rng(1).random(x.shape)
    check_loss(TF.huber_loss, F.huber_loss, [x, y], (0, 1), reduction=reduction, weight=w)


@pytest.mark.parametrize("name", ["smooth_l1_loss", "huber_loss"])
def test_broadcast_target_warns_like_torch_and_sums_the_target_grad(name):
    x, y = _arrays(np.float32, (3, 5), (5,))
    with pytest.warns(UserWarning) as record:
        check_loss(getattr(TF, name), getattr(F, name), [x, y], (0, 1))
    messages = {str(r.message).replace("torch.", "mininn.") for r in record}
    assert len(messages) == 1 and "Using a target size (mininn.Size([5])) that is different" in messages.pop()


@pytest.mark.parametrize(
    "name, shapes, kwargs",
    [
        ("smooth_l1_loss", [(3,), (3,)], {"beta": -1.0}),
        ("huber_loss", [(3,), (3,)], {"delta": 0.0}),
        ("huber_loss", [(3,), (3,)], {"delta": -2.0}),
        ("huber_loss", [(3, 4), (3, 4)], {"weight": np.ones(4)}),
        ("smooth_l1_loss", [(3, 4), (3,)], {}),
        ("huber_loss", [(3, 4), (2, 4)], {}),
        ("smooth_l1_loss", [(3,), (3,)], {"reduction": "avg"}),
    ],
)
def test_bad_arguments_raise_torchs_errors(name, shapes, kwargs):
    arrays = [np.zeros(s, np.float32) for s in shapes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the target-size warning, checked above
        same_loss_error(getattr(TF, name), getattr(F, name), arrays, **kwargs)


@pytest.mark.parametrize("name", ["smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("kinds", ["ii", "if", "fi", "df", "fd"])
def test_dtype_promotion_and_integer_errors_follow_torch(name, kinds):
    make = {"i": lambda lib: lib.arange(3), "f": lambda lib: lib.ones(3) * 0.5,
            "d": lambda lib: lib.ones(3, dtype=lib.float64) * 0.25}
    outcome = []
    for lib, fn in ((torch, getattr(TF, name)), (mininn, getattr(F, name))):
        try:
            outcome.append(str(fn(make[kinds[0]](lib), make[kinds[1]](lib)).dtype).split(".")[-1])
        except (RuntimeError, NotImplementedError) as e:
            outcome.append(f"{type(e).__name__}: {e}")
    assert outcome[1] == outcome[0]


def test_modules_keep_their_options_and_match_torch():
    x, y = _arrays(np.float32)
    pairs = [
        (torch.nn.SmoothL1Loss(beta=0.3, reduction="sum"), nn.SmoothL1Loss(beta=0.3, reduction="sum")),
        (torch.nn.HuberLoss(delta=0.7, reduction="none"), nn.HuberLoss(delta=0.7, reduction="none")),
    ]
    for t_mod, m_mod in pairs:
        assert repr(m_mod) == repr(t_mod)
        assert list(m_mod.state_dict()) == list(t_mod.state_dict()) == []
        assert (m_mod.reduction, getattr(m_mod, "beta", None), getattr(m_mod, "delta", None)) == (
            t_mod.reduction, getattr(t_mod, "beta", None), getattr(t_mod, "delta", None))
        check_loss(t_mod, m_mod, [x, y], (0, 1))


def test_smooth_l1_module_maps_the_legacy_arguments_with_torchs_warning():
    with pytest.warns(UserWarning, match=r"please use reduction='none' instead\."):
        loss = nn.SmoothL1Loss(reduce=False)
    assert loss.reduction == "none"
    with pytest.warns(UserWarning, match=r"please use reduction='sum' instead\."):
        out = F.smooth_l1_loss(mininn.ones(2), mininn.zeros(2), size_average=False)
    assert out.item() == 1.0
