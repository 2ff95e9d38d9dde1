"""Dropout, channel-wise Dropout1d/2d/3d and alpha dropout: training-only masking with the global
generator, torch's scaling, warnings and messages."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, state_layout

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_zeroes_about_p_and_scales_survivors_by_one_over_one_minus_p(p):
    mininn.manual_seed(0)
    x = mininn.ones(200, 500, requires_grad=True)
    y = nn.Dropout(p)(x)
    values = y.numpy(force=True)
    kept = values != 0
    n = values.size
    assert abs((~kept).mean() - p) < 5 * np.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(values[kept], 1 / (1 - p), rtol=1e-6)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), values)  # d(x * mask)/dx = mask


def test_dropout_in_eval_mode_or_with_p_zero_returns_its_input():
    x = mininn.randn(3, 4)
    assert nn.Dropout(0.5).eval()(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert F.dropout(x, 0.5, training=False) is x


def test_dropout_with_p_one_zeroes_everything_and_its_gradient():
    x = mininn.randn(3, 4, requires_grad=True)
    y = nn.Dropout(1.0)(x)
    y.sum().backward()
    assert not y.numpy(force=True).any() and not x.grad.numpy().any()


def test_dropout_masks_are_reproducible_under_manual_seed():
    x = mininn.ones(50, 50)
    mininn.manual_seed(123)
    a = F.dropout(x, 0.3).numpy()
    mininn.manual_seed(123)
    b = F.dropout(x, 0.3).numpy()
    c = F.dropout(x, 0.3).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_dropout_keeps_the_input_dtype():
    for dtype in (mininn.float32, mininn.float64):
        assert F.dropout(mininn.ones(10, dtype=dtype), 0.5).dtype == dtype


def test_dropout_still_drops_under_no_grad_in_training_mode():
    mininn.manual_seed(1)
    with mininn.no_grad():
        y = nn.Dropout(0.5)(mininn.ones(1000))
    assert 300 < int((y.numpy() == 0).sum()) < 700 and y.grad_fn is None


def test_inplace_dropout_without_grad_writes_into_its_input():
    mininn.manual_seed(2)
    x = mininn.ones(100)
    y = nn.Dropout(0.5, inplace=True)(x)
    assert y is x and set(np.unique(x.numpy())) <= {0.0, 2.0}


@pytest.mark.parametrize("p", [1.5, -0.1])
def test_dropout_bad_probability_raises_torch_message(p):
    same_error(lambda: torch.nn.Dropout(p), lambda: nn.Dropout(p))
    same_error(lambda: torch.nn.functional.dropout(torch.ones(3), p), lambda: F.dropout(mininn.ones(3), p))


@pytest.mark.parametrize("args", [(), (0.2, True), (0.0,)])
def test_dropout_repr_and_empty_state_dict_match_torch(args):
    assert repr(nn.Dropout(*args)) == repr(torch.nn.Dropout(*args))
    assert state_layout(nn.Dropout(*args)) == []


# ---- channel-wise and alpha dropout ------------------------------------------------------------

NEW_LAYERS = ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]
NEW_FUNCTIONS = ["dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]
CHANNEL_CASES = [  # layer, input shape, the dims that share one draw
    ("Dropout1d", (8, 30, 5), (2,)),
    ("Dropout1d", (30, 5), (1,)),
    ("Dropout2d", (8, 30, 4, 3), (2, 3)),
    ("Dropout3d", (4, 30, 2, 3, 2), (2, 3, 4)),
    ("Dropout3d", (30, 2, 3, 2), (1, 2, 3)),
    ("FeatureAlphaDropout", (8, 30, 4), (2,)),
]


def _constant_along(values, dims):
    return all((values == values.take([0], axis=d)).all() for d in dims)


@pytest.mark.parametrize("name,shape,shared", CHANNEL_CASES, ids=str)
def test_channel_dropout_draws_once_per_channel_with_torchs_scaling(name, shape, shared):
    mininn.manual_seed(0)
    p = 0.4
    x = mininn.ones(*shape, dtype=mininn.float64, requires_grad=True)
    y = getattr(nn, name)(p)(x)
    values = y.numpy(force=True)
    assert _constant_along(values, shared)
    assert not _constant_along(values, [d for d in range(len(shape)) if d not in shared][:1])
    torch.manual_seed(0)
    expected = np.unique(getattr(torch.nn, name)(p)(torch.ones(*shape, dtype=torch.float64)).numpy())
    np.testing.assert_allclose(np.unique(values), expected, rtol=1e-12)  # the same two values
    y.backward(mininn.ones(*shape, dtype=mininn.float64))
    scale = values - values.min() if name.startswith("Feature") else values
    np.testing.assert_allclose(x.grad.numpy(), scale * (x.grad.numpy().max() / scale.max()), rtol=1e-12)
    dropped = values == values.min()
    assert abs(dropped.mean() - p) < 0.15


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_alpha_dropout_uses_torchs_affine_map_and_keeps_zero_mean_unit_variance(p):
    x = np.random.default_rng(0).standard_normal((400, 500))
    mininn.manual_seed(0)
    mx = mininn.tensor(x, requires_grad=True)
    y = nn.AlphaDropout(p)(mx)
    values = y.numpy(force=True)
    a = 1 / np.sqrt((1.7580993408473766 ** 2 * p + 1) * (1 - p))
    kept = np.isclose(values, a * x + 1.7580993408473766 * a * p, rtol=1e-12)
    np.testing.assert_allclose(values[~kept], -1.7580993408473766 * a * (1 - p), rtol=1e-12)
    assert abs((~kept).mean() - p) < 0.01
    assert abs(values.mean()) < 0.02 and abs(values.std() - 1) < 0.02
    theirs = torch.nn.AlphaDropout(p)(torch.zeros(1000, dtype=torch.float64)).numpy()
    ours = nn.AlphaDropout(p)(mininn.zeros(1000, dtype=mininn.float64)).numpy()
    np.testing.assert_allclose(np.unique(ours), np.unique(theirs), rtol=1e-12)  # the two values of 0
    y.backward(mininn.ones(*x.shape, dtype=mininn.float64))
    np.testing.assert_allclose(mx.grad.numpy(), np.where(kept, a, 0.0), rtol=1e-12)


@pytest.mark.parametrize("name", NEW_LAYERS)
def test_new_dropout_layers_are_the_identity_in_eval_mode_or_with_p_zero(name):
    x = mininn.randn(3, 4, 5) if name == "Dropout1d" else mininn.randn(2, 3, 4, 5)
    assert getattr(nn, name)(0.5).eval()(x) is x
    assert getattr(nn, name)(0.0)(x) is x


@pytest.mark.parametrize("fn", NEW_FUNCTIONS)
def test_new_dropout_functions_with_p_one_zero_everything_and_default_training_like_torch(fn):
    x = mininn.randn(*((2, 3, 4) if fn == "dropout1d" else (2, 3, 4, 5)), requires_grad=True)
    call = getattr(F, fn)
    y = call(x, 1.0, True)
    y.sum().backward()
    assert not y.numpy(force=True).any() and not x.grad.numpy().any()
    assert call.__defaults__ == getattr(torch.nn.functional, fn).__defaults__


@pytest.mark.parametrize("name", NEW_LAYERS)
def test_inplace_channel_dropout_without_grad_writes_into_its_input(name):
    mininn.manual_seed(4)
    x = mininn.ones(*{"Dropout1d": (16, 3), "Dropout3d": (2, 16, 3, 2, 2)}.get(name, (4, 16, 3, 2)))
    with mininn.no_grad():
        y = getattr(nn, name)(0.5, inplace=True)(x)
    if "Alpha" in name:  # torch's alpha dropout layers ignore inplace
        assert y is not x and (x.numpy() == 1).all()
    else:
        assert y is x and len(np.unique(x.numpy())) == 2


@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.dropout1d(lib.ones(3)),
    lambda lib: lib.nn.functional.dropout1d(lib.ones(2, 3, 4, 5), training=False),
    lambda lib: lib.nn.Dropout1d()(lib.ones(2, 2, 2, 2)),
    lambda lib: lib.nn.functional.dropout2d(lib.ones(()), 0.5),
    lambda lib: lib.nn.functional.dropout3d(lib.ones(()), 0.5),
    lambda lib: lib.nn.functional.feature_alpha_dropout(lib.ones(3), 0.5, True),
    lambda lib: lib.nn.functional.dropout2d(lib.ones(3, 4), 1.5),
    lambda lib: lib.nn.functional.alpha_dropout(lib.ones(3, 4), -0.5),
    lambda lib: lib.nn.functional.feature_alpha_dropout(lib.ones(3, 4), 1.5),
    lambda lib: lib.nn.AlphaDropout(1.5),
    lambda lib: lib.nn.Dropout3d(-1),
    lambda lib: lib.nn.functional.dropout2d(lib.ones(2, 3, requires_grad=True), 0.5, inplace=True),
])
def test_new_dropout_errors_match_torch(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(lambda: call(torch), lambda: call(mininn))


@pytest.mark.parametrize("name,ndim,message", [
    ("dropout2d", 3, "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout"),
    ("dropout2d", 2, "dropout2d: Received a 2-D input to dropout2d, which is deprecated"),
    ("dropout2d", 5, "dropout2d: Received a 5-D input to dropout2d, which is deprecated"),
    ("dropout3d", 3, "dropout3d: Received a 3-D input to dropout3d, which is deprecated"),
    ("dropout3d", 6, "dropout3d: Received a 6-D input to dropout3d, which is deprecated"),
])
def test_channel_dropout_warns_like_torch_for_unexpected_ranks(name, ndim, message):
    messages = []
    for lib in (torch, mininn):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            getattr(lib.nn.functional, name)(lib.ones(*([2] * ndim)), 0.5, training=False)
        messages.append([str(w.message) for w in caught])
    assert messages[1] == messages[0] and messages[0][0].startswith(message)


def test_channel_dropout_is_silent_for_expected_ranks():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.dropout2d(mininn.ones(2, 3, 4, 5))
        F.dropout3d(mininn.ones(3, 4, 5, 6))
        F.dropout3d(mininn.ones(2, 3, 4, 5, 6))
        F.dropout1d(mininn.ones(3, 4))


@pytest.mark.parametrize("name", NEW_LAYERS)
@pytest.mark.parametrize("args", [(), (0.2, True), (0.0,)])
def test_new_dropout_reprs_and_empty_state_dicts_match_torch(name, args):
    assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))
    assert state_layout(getattr(nn, name)(*args)) == []
