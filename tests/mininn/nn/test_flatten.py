"""Flatten and Unflatten against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn import nn
from tests.mininn.nn._layer_parity import assert_parity, same_error

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("args,shape", [
    ((), (2, 3, 4, 5)), ((0, 2), (2, 3, 4, 5)), ((2, -1), (2, 3, 4, 5)), ((-3, -2), (2, 3, 4, 5)),
    ((), (2, 3)), ((0, -1), (7,)), ((1, 1), (2, 3, 4)),
], ids=str)
def test_flatten_matches_torch_shapes_values_and_gradients(args, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    assert_parity(torch.nn.Flatten(*args), nn.Flatten(*args), x)


@pytest.mark.parametrize("dim,sizes,shape", [
    (1, (2, 3), (4, 6)), (1, [2, -1], (4, 6, 5)), (-1, (5, 1), (2, 5)), (0, (2, 2), (4, 3)),
], ids=str)
def test_unflatten_matches_torch_shapes_values_and_gradients(dim, sizes, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    assert_parity(torch.nn.Unflatten(dim, sizes), nn.Unflatten(dim, sizes), x)


@pytest.mark.parametrize("make", [
    lambda m: m.Flatten(), lambda m: m.Flatten(0, 2), lambda m: m.Unflatten(1, (2, 3)),
    lambda m: m.Unflatten(1, [2, 3]),
])
def test_flatten_reprs_and_empty_state_dicts_match_torch(make):
    assert repr(make(nn)) == repr(make(torch.nn))
    assert list(make(nn).state_dict()) == []


@pytest.mark.parametrize("args", [(1, 3), (1, (2, "a")), (1, (2.0, 3))], ids=str)
def test_unflatten_constructor_errors_match_torch(args):
    same_error(lambda: torch.nn.Unflatten(*args), lambda: nn.Unflatten(*args))


@pytest.mark.parametrize("make,shape", [
    (lambda m: m.Unflatten(1, (2, 3)), (2, 5)),
    (lambda m: m.Flatten(2, 1), (2, 3, 4)),
])
def test_flatten_forward_errors_match_torch(make, shape):
    same_error(lambda: make(torch.nn)(torch.ones(shape)), lambda: make(nn)(mininn.ones(shape)))
