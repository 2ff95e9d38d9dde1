"""Hooks around state_dict / load_state_dict against torch 2.13, beyond the basics in
test_module_state_dict.py: the private load pre-hook's two signatures, what a nested pre-hook
sees, post-hooks that report keys, and hooks on modules that are collected or pickled."""

from __future__ import annotations

import gc
import pickle
import warnings
import weakref

import pytest

torch = pytest.importorskip("torch")

from _nn_twins import MININN, arr, same  # noqa: E402

from mininn import nn  # noqa: E402


def _wrapped_lin(ns, nested: bool):
    """A Lin, alone or inside a container; returns (root, the Lin)."""
    lin = ns.Lin(2, 2)
    return (ns.nn.ModuleList([lin]), lin) if nested else (lin, lin)


@pytest.mark.parametrize("nested", [False, True])
def test_private_load_pre_hook_gets_the_module_only_when_asked(nested: bool) -> None:
    def scenario(ns):
        seen = []
        root, lin = _wrapped_lin(ns, nested)

        def describe(module, sd, prefix, strict, missing, unexpected, errors):
            owner = None if module is None else module is lin
            return (owner, sorted(sd), prefix, strict, missing, unexpected, errors)

        def without_module(sd, prefix, local_metadata, strict, missing, unexpected, errors):
            seen.append(describe(None, sd, prefix, strict, missing, unexpected, errors))

        def with_module(module, sd, prefix, local_metadata, strict, missing, unexpected, errors):
            seen.append(describe(module, sd, prefix, strict, missing, unexpected, errors))

        lin._register_load_state_dict_pre_hook(without_module)
        root.load_state_dict(root.state_dict())
        lin._register_load_state_dict_pre_hook(with_module, True)
        root.load_state_dict(root.state_dict())
        return seen

    seen = same(scenario)[1]
    assert [s[0] for s in seen] == [None, None, True]


def test_nested_load_pre_hook_sees_only_its_own_keys() -> None:
    def scenario(ns):
        seen = []
        inner = ns.nn.Sequential(ns.Lin(1, 1), ns.Lin(1, 1))
        model = ns.nn.Sequential(ns.nn.Sequential(inner, ns.Lin(1, 1)), ns.Norm(1))

        def hook(module, sd, prefix, local_metadata, strict, missing, unexpected, errors):
            seen.append((prefix, sorted(sd), sorted(module.state_dict())))

        inner[1].register_load_state_dict_pre_hook(hook)
        model.load_state_dict(model.state_dict())
        return seen

    assert same(scenario) == ("ok", [("0.0.1.", ["0.0.1.bias", "0.0.1.weight"], ["bias", "weight"])])


def test_load_post_hook_reports_keys_until_removed() -> None:
    def scenario(ns):
        inner = ns.Lin(2, 2)
        outer = ns.nn.ModuleList([inner])

        def report(module, keys):
            assert module is inner
            keys.missing_keys.append("ghost")
            keys.unexpected_keys.append("stray")

        handle = inner.register_load_state_dict_post_hook(report)
        lenient = outer.load_state_dict(outer.state_dict(), strict=False)
        try:
            outer.load_state_dict(outer.state_dict())
            strict = None
        except RuntimeError as e:
            strict = e.args[0]
        handle.remove()
        after = outer.load_state_dict(outer.state_dict(), strict=False)
        return repr(lenient), strict, repr(after)

    lenient, strict, after = same(scenario)[1]
    assert "ghost" in lenient and "stray" in lenient
    assert after == "<All keys matched successfully>"


def test_load_pre_hook_with_module_keeps_no_strong_reference() -> None:
    def scenario(ns):
        gc.disable()
        try:
            m = ns.Lin(2, 2)
            m._register_load_state_dict_pre_hook(_ignore, True)
            alive = weakref.ref(m)
            del m
            return alive() is None
        finally:
            gc.enable()

    assert same(scenario) == ("ok", True)


def test_keyword_destination_does_not_warn() -> None:
    def scenario(ns):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            keys = sorted(ns.Lin(1, 1).state_dict(destination={}))
        return keys, len(caught)

    assert same(scenario) == ("ok", (["bias", "weight"], 0))


# ---- pickling (mininn only: torch cannot pickle the twins' local classes) ----------------------


def _ignore(*args) -> None:
    """A module-level hook, so that modules holding it can be pickled."""


_seen_by_hook: list[str] = []


def _note_load(module, keys) -> None:
    _seen_by_hook.append(type(module).__name__)


class Gain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gain = nn.Parameter(MININN.T(arr(2)))
        self.register_buffer("calls", MININN.T(arr(1)))


def test_module_with_a_load_pre_hook_pickles() -> None:
    m = Gain()
    m._register_load_state_dict_pre_hook(_ignore, True)
    copy = pickle.loads(pickle.dumps(m))
    assert len(copy._load_state_dict_pre_hooks) == 1
    assert repr(copy.load_state_dict(m.state_dict())) == "<All keys matched successfully>"


@pytest.mark.parametrize(
    "hooks_dict", ["_load_state_dict_post_hooks", "_load_state_dict_pre_hooks", "_state_dict_pre_hooks"]
)
def test_old_pickle_without_a_hook_dict_takes_that_hook(hooks_dict: str) -> None:
    m = nn.Sequential(Gain())
    state = m.state_dict()
    delattr(m[0], hooks_dict)  # as if pickled by a version that did not have it
    restored = pickle.loads(pickle.dumps(m))
    assert getattr(restored[0], hooks_dict) == {}
    _seen_by_hook.clear()
    if hooks_dict == "_load_state_dict_post_hooks":
        restored[0].register_load_state_dict_post_hook(_note_load)
    elif hooks_dict == "_load_state_dict_pre_hooks":
        restored[0].register_load_state_dict_pre_hook(lambda module, *rest: _seen_by_hook.append("pre"))
    else:
        restored[0].register_state_dict_pre_hook(lambda module, *rest: _seen_by_hook.append("save"))
    restored.load_state_dict(state)
    restored.state_dict()
    assert len(_seen_by_hook) == 1
