"""Gradient switches of mininn.nn.Module against torch 2.13: requires_grad_ on parameters but
not buffers, zero_grad with frozen parameters, forward under no_grad, and train()'s mode check."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import arr, same, to_np  # noqa: E402


def _grad_sums(m):
    return [None if p.grad is None else round(float(np.abs(to_np(p.grad)).sum()), 4) for p in m.parameters()]


def test_requires_grad_changes_parameters_not_buffers() -> None:
    def scenario(ns):
        m = ns.Net()
        steps = []
        for flag in (False, True):
            returned = m.requires_grad_(flag)
            params = {p.requires_grad for p in m.parameters()}
            buffers = {b.requires_grad for b in m.buffers()}
            steps.append((returned is m, params, buffers))
        return steps

    assert same(scenario) == ("ok", [(True, {False}, {False}), (True, {True}, {False})])


def test_zero_grad_with_frozen_parameters() -> None:
    def scenario(ns):
        m = ns.Lin(3, 2)
        x = ns.T(arr(2, 3))
        m.requires_grad_(False)
        m.zero_grad()
        steps = [("all frozen", _grad_sums(m))]
        m.weight.requires_grad_(True)
        m(x).sum().backward()
        steps.append(("weight trained", _grad_sums(m)))
        m.zero_grad()
        steps.append(("zeroed", _grad_sums(m)))
        m.bias.requires_grad_(True)
        m(x).sum().backward()
        m.zero_grad(set_to_none=False)
        steps.append(("kept as zeros", _grad_sums(m)))
        m.zero_grad()
        steps.append(("set to None", _grad_sums(m)))
        return steps

    same(scenario)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_under_no_grad_has_no_graph(dtype) -> None:
    def scenario(ns):
        m = ns.Lin(2, 3)
        if dtype == np.float64:
            m.double()
        x = ns.T(arr(1, 2, dtype=dtype))
        tracked = m(x).requires_grad
        with ns.lib.no_grad():
            y = m(x)
        try:
            y.sum().backward()
            error = None
        except RuntimeError as e:
            error = e.args[0]
        return tracked, y.requires_grad, y.grad_fn is None, error

    out = same(scenario)[1]
    assert out[:3] == (True, False, True) and out[3] is not None


@pytest.mark.parametrize("module", ["subclass", "sequential"])
@pytest.mark.parametrize("mode", ["eval", "cpu_device"])
def test_train_rejects_a_non_bool_mode(module: str, mode: str) -> None:
    def scenario(ns):
        m = ns.Net() if module == "subclass" else ns.nn.Sequential(ns.Lin(2, 2), ns.Act())
        m.train("eval" if mode == "eval" else ns.lib.device("cpu"))

    assert same(scenario) == ("ValueError", "training mode is expected to be boolean")
