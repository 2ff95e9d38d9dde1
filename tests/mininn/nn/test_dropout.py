"""Dropout: training-only masking with the global generator, torch's scaling and messages."""

from __future__ import annotations

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
