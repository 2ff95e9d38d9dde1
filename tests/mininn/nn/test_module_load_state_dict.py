"""load_state_dict against torch 2.13, beyond test_module_state_dict.py: extra state of any
type, rejected inputs, partial loads, overridden save/load steps, assign=True with a fresh
optimizer, and no reference cycles left behind."""

from __future__ import annotations

import copy
import gc

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import MININN, arr, same, to_np  # noqa: E402

import mininn  # noqa: E402
from mininn import nn  # noqa: E402
from mininn.optim import Adam  # noqa: E402


def _values(t):
    return np.round(to_np(t).astype(np.float64), 4).tolist()


@pytest.mark.parametrize("extra", ["text", "number", "module"])
def test_extra_state_may_be_any_object(extra: str) -> None:
    def scenario(ns):
        class Tagged(ns.nn.Module):
            def __init__(self, tag):
                super().__init__()
                self.tag = tag

            def get_extra_state(self):
                return self.tag

            def set_extra_state(self, state):
                self.tag = state

        tag = {"text": "v2", "number": 5, "module": ns.Act()}[extra]
        source, target = Tagged(tag), Tagged("old")
        result = target.load_state_dict(source.state_dict())
        return repr(result), target.tag is tag, list(target.state_dict())

    assert same(scenario) == ("ok", ("<All keys matched successfully>", True, ["_extra_state"]))


def test_set_extra_state_without_get_extra_state_reports_a_missing_key() -> None:
    def scenario(ns):
        class LoadOnly(ns.nn.Module):
            def set_extra_state(self, state):
                pass

        m = LoadOnly()
        m.load_state_dict(m.state_dict())

    kind, message = same(scenario)
    assert kind == "RuntimeError" and 'Missing key(s) in state_dict: "_extra_state"' in message


@pytest.mark.parametrize("value", ["nested_tuple", "string", "number"])
def test_non_tensor_values_are_rejected(value: str) -> None:
    def scenario(ns):
        m = ns.Lin(2, 2, bias=False)
        bad = {"nested_tuple": ((1.0, 1.0), (2.0, 2.0)), "string": "w", "number": 3.0}[value]
        m.load_state_dict({"weight": bad})

    kind, message = same(scenario)
    assert kind == "RuntimeError" and "Tensor-like object from checkpoint but received" in message


@pytest.mark.parametrize("value", ["", 2, None])
def test_non_mapping_is_rejected(value) -> None:
    kind, message = same(lambda ns: ns.Lin(1, 1).load_state_dict(value))
    assert kind == "TypeError" and message.startswith("Expected state_dict to be dict-like")


def test_partial_non_strict_load_changes_only_the_given_keys() -> None:
    def scenario(ns):
        m = ns.Net()
        before = {k: _values(v) for k, v in m.state_dict().items()}
        update = {
            "fc1.weight": ns.T(np.ones((3, 4), np.float32)),
            "bn.running_mean": ns.T(arr(3, start=5.0)),
            "nonexistent": ns.T(arr(3)),
        }
        result = m.load_state_dict(update, strict=False)
        after = {k: _values(v) for k, v in m.state_dict().items()}
        changed = sorted(k for k in after if after[k] != before[k])
        return changed, repr(result)

    changed = same(scenario)[1][0]
    assert changed == ["bn.running_mean", "fc1.weight"]


def test_overridden_save_and_load_steps_are_used() -> None:
    def scenario(ns):
        class Offset(ns.nn.Module):
            """Saves its parameter shifted by one under another key, and undoes it on load."""

            def __init__(self):
                super().__init__()
                self.value = ns.nn.Parameter(ns.T(np.ones(1, np.float32)))
                self.inner = ns.Lin(1, 1)

            def _save_to_state_dict(self, destination, prefix, keep_vars):
                destination[prefix + "shifted"] = self.value.detach() + 1

            def _load_from_state_dict(self, sd, prefix, local_metadata, strict, missing, unexpected, errors):
                with ns.lib.no_grad():
                    self.value.copy_(sd[prefix + "shifted"] - 1)

        source = ns.nn.Sequential(Offset())
        with ns.lib.no_grad():
            source[0].value.fill_(10.0)
            source[0].inner.weight.fill_(5.0)
        sd = source.state_dict()
        target = ns.nn.Sequential(Offset())
        target.load_state_dict(sd)
        return sorted(sd), _values(sd["0.shifted"]), _values(target[0].value), _values(target[0].inner.weight)

    assert same(scenario) == (
        "ok",
        (["0.inner.bias", "0.inner.weight", "0.shifted"], [11.0], [10.0], [[5.0]]),
    )


def test_loading_leaves_no_reference_cycles() -> None:
    m = MININN.nn.Sequential(MININN.Lin(4, 4), MININN.Norm(4), MININN.nn.ModuleList([MININN.Lin(4, 4)]))
    sd = copy.deepcopy(m).state_dict()
    gc.collect()
    m.load_state_dict(sd)
    assert gc.collect() == 0


def test_assign_then_optimizer_trains_like_the_original() -> None:
    # mininn only: the result is compared with the original model, not with torch
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = MININN.Lin(3, 2)
            self.norm = MININN.Norm(2)

        def forward(self, x):
            return self.fc(x) * self.norm.weight + self.norm.bias

    def train(net, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            net(mininn.tensor(arr(4, 3))).pow(2).sum().backward()
            opt.step()

    net = Head()
    opt = Adam(net.parameters(), lr=0.1)
    train(net, opt, 2)
    net_state, opt_state = copy.deepcopy(net.state_dict()), copy.deepcopy(opt.state_dict())
    clone = Head()
    clone.load_state_dict(net_state, assign=True)
    clone_opt = Adam(clone.parameters(), lr=0.1)  # built after assigning
    clone_opt.load_state_dict(opt_state)
    train(net, opt, 2)
    train(clone, clone_opt, 2)
    assert list(clone.state_dict()) == list(net.state_dict())
    for key, value in net.state_dict().items():
        np.testing.assert_allclose(to_np(clone.state_dict()[key]), to_np(value), rtol=1e-6)


@pytest.mark.parametrize("weight", ["transposed", "wrong_shape"])
def test_assign_accepts_other_strides_but_not_other_shapes(weight: str) -> None:
    def scenario(ns):
        m = ns.Lin(3, 5)
        sd = m.state_dict()
        sd["weight"] = ns.T(arr(3, 5)).transpose(0, 1) if weight == "transposed" else ns.T(arr(2, 4))
        m.load_state_dict(sd, assign=True)
        return tuple(m.weight.shape), type(m.weight).__name__

    outcome = same(scenario)
    if weight == "transposed":
        assert outcome == ("ok", ((5, 3), "Parameter"))
    else:
        assert outcome[0] == "RuntimeError" and "size mismatch for weight" in outcome[1]
