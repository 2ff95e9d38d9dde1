"""Parameter and Buffer against torch 2.13: sharing, repr, requires_grad, copying."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import arr, same, to_np  # noqa: E402

import mininn  # noqa: E402
from mininn import nn  # noqa: E402


def test_parameter_is_a_tensor_sharing_the_data() -> None:
    t = mininn.tensor(arr(2, 2))
    p = nn.Parameter(t)
    assert isinstance(p, mininn.Tensor) and isinstance(p, nn.Parameter)
    assert p.data_ptr() == t.data_ptr()
    assert p.requires_grad and p.is_leaf and not t.requires_grad
    t[0, 0] = 42.0
    assert to_np(p)[0, 0] == 42.0


def test_parameter_repr_matches_torch() -> None:
    def scenario(ns):
        return (
            repr(ns.nn.Parameter(ns.T(arr(2)))),
            repr(ns.nn.Parameter(ns.T(arr(2)), requires_grad=False)),
            repr(ns.nn.Parameter()),
        )

    assert same(scenario)[1][0] == "Parameter containing:\ntensor([0.0000, 0.1000], requires_grad=True)"


def test_parameter_of_integer_tensor_needs_requires_grad_false() -> None:
    assert same(lambda ns: ns.nn.Parameter(ns.T(np.array([1])))) == (
        "RuntimeError",
        "Only Tensors of floating point and complex dtype can require gradients",
    )
    assert same(lambda ns: ns.nn.Parameter(ns.T(np.array([1])), requires_grad=False).requires_grad) == (
        "ok",
        False,
    )


def test_parameter_of_parameter_shares_and_empty_parameter() -> None:
    p = nn.Parameter(mininn.tensor(arr(3)))
    q = nn.Parameter(p, requires_grad=False)
    assert q.data_ptr() == p.data_ptr() and not q.requires_grad
    assert same(lambda ns: (tuple(ns.nn.Parameter().shape), str(ns.nn.Parameter().dtype))) == (
        "ok",
        ((0,), "mininn.float32"),
    )


def test_parameter_ops_give_plain_tensors_with_grad() -> None:
    def scenario(ns):
        p = ns.nn.Parameter(ns.T(arr(2)))
        y = p * 2
        y.sum().backward()
        return type(y).__name__, y.requires_grad, to_np(p.grad).tolist()

    assert same(scenario) == ("ok", ("Tensor", True, [2.0, 2.0]))


def test_parameter_deepcopy_copies_data_and_keeps_type() -> None:
    def scenario(ns):
        p = ns.nn.Parameter(ns.T(arr(2)), requires_grad=False)
        p.custom = "meta"  # not copied, as in torch
        c = copy.deepcopy(p)
        memo_same = copy.deepcopy([p, p])
        with ns.lib.no_grad():
            c.mul_(0)
        return (
            type(c).__name__,
            c.requires_grad,
            hasattr(c, "custom"),
            [round(float(v), 4) for v in to_np(p)],
            memo_same[0] is memo_same[1],
        )

    assert same(scenario) == ("ok", ("Parameter", False, False, [0.0, 0.1], True))


def test_parameter_pickle_round_trip() -> None:
    p = nn.Parameter(mininn.tensor(arr(2, 2)))
    p.tag = 1
    q = pickle.loads(pickle.dumps(p))
    assert type(q) is nn.Parameter and q.requires_grad and q.tag == 1
    np.testing.assert_array_equal(to_np(q), to_np(p))


def test_buffer_shares_data_carries_persistence_and_requires_grad() -> None:
    def scenario(ns):
        t = ns.T(arr(2)).requires_grad_()
        b = ns.nn.Buffer(t, persistent=False)
        return b.persistent, b.requires_grad, isinstance(b, ns.lib.Tensor), tuple(ns.nn.Buffer().shape)

    assert same(scenario) == ("ok", (False, True, True, (0,)))
    data = mininn.tensor(arr(2))
    assert nn.Buffer(data).data_ptr() == data.data_ptr()


def test_buffer_deepcopy_and_pickle_keep_persistence() -> None:
    b = nn.Buffer(mininn.tensor(arr(2)), persistent=False)
    for c in (copy.deepcopy(b), pickle.loads(pickle.dumps(b))):
        assert isinstance(c, nn.Buffer) and c.persistent is False
        assert c.data_ptr() != b.data_ptr()
        np.testing.assert_array_equal(to_np(c), to_np(b))
