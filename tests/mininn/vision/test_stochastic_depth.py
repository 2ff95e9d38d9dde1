"""mininn.vision.ops.stochastic_depth and StochasticDepth against torchvision's."""

from __future__ import annotations

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
from mininn.vision.ops import StochasticDepth, stochastic_depth

torchvision = import_torchvision()
torch = pytest.importorskip("torch")


@pytest.mark.parametrize("mode", ["row", "batch"])
def test_identity_outside_training_and_at_zero_probability(mode: str) -> None:
    x = mininn.randn(4, 3, 2)
    assert stochastic_depth(x, 0.7, mode, training=False) is x
    assert stochastic_depth(x, 0.0, mode, training=True) is x
    layer = StochasticDepth(0.7, mode).eval()
    assert layer(x) is x


def test_row_mode_drops_whole_rows_and_scales_survivors() -> None:
    mininn.manual_seed(0)
    x = mininn.ones(4000, 3, 2)
    y = stochastic_depth(x, 0.25, "row").numpy()
    per_row = y.reshape(4000, -1)
    assert set(np.unique(per_row)) <= {0.0, np.float32(1 / 0.75)}
    assert (per_row == per_row[:, :1]).all()  # a row is kept or dropped whole
    assert abs((per_row[:, 0] == 0).mean() - 0.25) < 0.03


def test_batch_mode_drops_the_whole_input_or_none_of_it() -> None:
    mininn.manual_seed(1)
    outcomes = set()
    for _ in range(40):
        y = stochastic_depth(mininn.ones(3, 5), 0.5, "batch").numpy()
        assert len(np.unique(y)) == 1
        outcomes.add(float(y[0, 0]))
    assert outcomes == {0.0, 2.0}


def test_probability_one_zeroes_everything() -> None:
    y = stochastic_depth(mininn.ones(5, 2), 1.0, "row")
    np.testing.assert_array_equal(y.numpy(), np.zeros((5, 2), np.float32))


def test_gradient_flows_through_kept_rows_only() -> None:
    mininn.manual_seed(2)
    x = mininn.ones(64, 3, requires_grad=True)
    y = stochastic_depth(x, 0.5, "row")
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


@pytest.mark.parametrize(("p", "mode"), [(-0.1, "row"), (1.5, "batch"), (0.5, "rows"), (0.5, "")])
def test_bad_arguments_raise_torchvisions_errors(p: float, mode: str) -> None:
    with pytest.raises(ValueError) as theirs:
        torchvision.ops.stochastic_depth(torch.ones(2, 2), p, mode)
    with pytest.raises(ValueError) as ours:
        stochastic_depth(mininn.ones(2, 2), p, mode)
    assert str(ours.value) == str(theirs.value)


def test_module_repr_and_state_match_torchvision() -> None:
    ours, theirs = StochasticDepth(0.2, "row"), torchvision.ops.StochasticDepth(0.2, "row")
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == []
