"""Module hooks against torch 2.13: forward pre-hooks and hooks (with_kwargs, prepend,
always_call), global hooks, full backward hooks and pre-hooks (tuples, gradients,
replacement), handles, and the no-hook fast path."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import MININN, arr, same, to_np  # noqa: E402

import mininn  # noqa: E402
from mininn import nn  # noqa: E402
from mininn.nn.modules import _hooks  # noqa: E402


def _g(t):
    """A gradient as nested lists rounded (None stays None)."""
    return None if t is None else np.round(to_np(t).astype(np.float64), 5).tolist()


def _gs(ts):
    return None if ts is None else tuple(_g(t) for t in ts)


def _leaf(ns, a):
    return ns.T(a).requires_grad_()


@pytest.fixture(autouse=True)
def _no_leftover_global_hooks():
    yield
    for d in (
        _hooks._global_forward_pre_hooks,
        _hooks._global_forward_hooks,
        _hooks._global_backward_hooks,
        _hooks._global_backward_pre_hooks,
    ):
        assert not d, "a test leaked a global hook"


# ---- forward pre-hooks and hooks ---------------------------------------------------------------


def test_call_order_with_global_and_local_hooks_matches_torch() -> None:
    def scenario(ns):
        trace = []

        class M(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = ns.Lin(2, 2)

            def forward(self, x, scale=1.0):
                trace.append("forward M")
                return self.lin(x) * scale

        m = M()
        mm = ns.nn.modules.module

        def name(mod):
            return type(mod).__name__

        handles = [
            mm.register_module_forward_pre_hook(lambda mod, a: trace.append(f"GLOBAL pre {name(mod)}")),
            mm.register_module_forward_hook(lambda mod, a, o: trace.append(f"GLOBAL fwd {name(mod)}")),
            m.register_forward_pre_hook(lambda mod, a: trace.append("pre1")),
            m.register_forward_pre_hook(lambda mod, a: trace.append("pre0"), prepend=True),
            m.register_forward_pre_hook(
                lambda mod, a, kw: trace.append(f"pre_kw {sorted(kw.items())}"), with_kwargs=True
            ),
            m.register_forward_hook(lambda mod, a, o: trace.append("fwd1")),
            m.register_forward_hook(lambda mod, a, o: trace.append("fwd0"), prepend=True),
            m.register_forward_hook(
                lambda mod, a, kw, o: trace.append(f"fwd_kw {sorted(kw)}"), with_kwargs=True
            ),
        ]
        try:
            m(ns.T(arr(1, 2)), scale=2.0)
        finally:
            for h in handles:
                h.remove()
        return trace

    out = same(scenario)[1]
    assert out[:4] == ["GLOBAL pre M", "pre0", "pre1", "pre_kw [('scale', 2.0)]"]


def test_pre_hook_return_replaces_input_and_non_tuple_is_wrapped() -> None:
    def scenario(ns):
        seen = []

        class Echo(ns.nn.Module):
            def forward(self, *args):
                seen.append(len(args))
                return args

        m = Echo()
        m.register_forward_pre_hook(lambda mod, a: 5)
        m.register_forward_pre_hook(lambda mod, a: seen.append(a))
        return m(1, 2), seen

    assert same(scenario) == ("ok", ((5,), [(5,), 1]))


def test_pre_hook_with_kwargs_replaces_args_and_kwargs() -> None:
    def scenario(ns):
        class F(ns.nn.Module):
            def forward(self, x, y=0):
                return x + y

        m = F()
        m.register_forward_pre_hook(
            lambda mod, a, kw: ((a[0] * 10,), {"y": kw["y"] + 1}), with_kwargs=True
        )
        return m(1, y=2)

    assert same(scenario) == ("ok", 13)


def test_pre_hook_with_kwargs_bad_return_raises() -> None:
    def scenario(ns):
        m = ns.Act()
        m.register_forward_pre_hook(lambda mod, a, kw: 5, with_kwargs=True)
        m(ns.T(arr(1)))

    assert same(scenario) == (
        "RuntimeError",
        "forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got 5.",
    )


def test_forward_hooks_chain_replacements_and_see_args_after_pre_hooks() -> None:
    def scenario(ns):
        seen = []
        m = ns.Act()
        m.register_forward_pre_hook(lambda mod, a: (a[0] + 1,))
        m.register_forward_hook(lambda mod, a, o: o + 100)
        m.register_forward_hook(lambda mod, a, o: seen.append((_g(a[0]), _g(o))))
        out = m(ns.T(arr(2)))
        return _g(out), seen

    assert same(scenario) == ("ok", ([102.0, 102.2], [([1.0, 1.1], [102.0, 102.2])]))


def test_forward_called_directly_skips_hooks() -> None:
    def scenario(ns):
        trace = []
        m = ns.Act()
        m.register_forward_hook(lambda *a: trace.append("hook"))
        m.forward(ns.T(arr(1)))
        m(ns.T(arr(1)))
        return trace

    assert same(scenario) == ("ok", ["hook"])


def test_handles_remove_idempotently_and_as_context_managers() -> None:
    def scenario(ns):
        trace = []
        m = ns.Act()
        h = m.register_forward_hook(lambda *a: trace.append("a"), with_kwargs=False, always_call=True)
        with m.register_forward_pre_hook(lambda *a: trace.append("ctx")):
            m(ns.T(arr(1)))
        h.remove()
        h.remove()
        m(ns.T(arr(1)))
        return trace, len(m._forward_hooks), len(m._forward_hooks_always_called)

    assert same(scenario) == ("ok", (["ctx", "a"], 0, 0))


def test_handle_ids_are_unique_and_increasing() -> None:
    m = nn.Module()
    ids = [m.register_forward_hook(lambda *a: None).id for _ in range(3)]
    ids.append(nn.modules.module.register_module_forward_pre_hook(lambda *a: None).id)
    _hooks._global_forward_pre_hooks.clear()
    assert ids == sorted(set(ids))


# ---- always_call ------------------------------------------------------------------------------


def test_always_call_hooks_run_when_forward_raises() -> None:
    def scenario(ns):
        trace = []

        class Boom(ns.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        m = Boom()
        m.register_forward_hook(lambda mod, a, o: trace.append(("never", o)))
        m.register_forward_hook(lambda mod, a, o: trace.append(("always", o)), always_call=True)
        m.register_forward_hook(
            lambda mod, a, kw, o: trace.append(("always_kw", sorted(kw), o)),
            always_call=True,
            with_kwargs=True,
        )
        gh = ns.nn.modules.module.register_module_forward_hook(
            lambda mod, a, o: trace.append(("global", o)), always_call=True
        )
        try:
            m(1)
        except ValueError as e:
            trace.append(str(e))
        finally:
            gh.remove()
        return trace

    assert same(scenario) == ("ok", [("global", None), ("always", None), ("always_kw", [], None), "boom"])


def test_always_call_hook_not_rerun_when_later_hook_raises_and_errors_become_warnings() -> None:
    def scenario(ns):
        trace = []
        m = ns.Act()
        m.register_forward_hook(lambda mod, a, o: trace.append("first_always"), always_call=True)

        def failing(mod, a, o):
            raise KeyError("late")

        m.register_forward_hook(failing)

        def noisy(mod, a, o):
            raise RuntimeError("noisy")

        m.register_forward_hook(noisy, always_call=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                m(ns.T(arr(1)))
            except KeyError as e:
                trace.append(e.args[0])
        return trace, [str(x.message) for x in w]

    out = same(scenario)[1]
    assert out[0] == ["first_always", "late"]
    assert out[1] == [
        "module forward hook with ``always_call=True`` raised an exception that was silenced as "
        "another error was raised in forward: noisy"
    ]


# ---- full backward hooks ---------------------------------------------------------------------


def test_full_backward_hook_sees_torch_tuples_and_gradients() -> None:
    def scenario(ns):
        trace = []
        m = ns.Lin(3, 2)
        m.register_full_backward_pre_hook(lambda mod, go: trace.append(("pre", _gs(go))))
        m.register_full_backward_hook(lambda mod, gi, go: trace.append(("bwd", _gs(gi), _gs(go))))
        x = _leaf(ns, arr(2, 3))
        (m(x) * ns.T(arr(2, 2, start=1.0))).sum().backward()
        return trace, _g(x.grad), _g(m.weight.grad)

    same(scenario)


def test_full_backward_hook_with_non_tensor_and_unused_positions() -> None:
    def scenario(ns):
        trace = []
        m = ns.Two()
        m.register_full_backward_hook(lambda mod, gi, go: trace.append((_gs(gi), _gs(go))))
        a, b = _leaf(ns, arr(2)), _leaf(ns, arr(2, start=1.0))
        first, _second = m(a, 3.0, b)
        first.sum().backward()
        return trace, _g(a.grad), _g(b.grad)

    assert same(scenario)[1][0][0][0][1] is None


def test_full_backward_hook_input_without_grad_shows_zeros_like_torch() -> None:
    def scenario(ns):
        trace = []
        m = ns.Two()
        m.register_full_backward_hook(lambda mod, gi, go: trace.append(_gs(gi)))
        a = _leaf(ns, arr(2))
        out = m(a, 2.0, ns.T(arr(2, start=1.0)))
        (out[0].sum() + out[1].sum()).backward()
        return trace, _g(a.grad)

    assert same(scenario)[1][0][0][2] == [0.0, 0.0]


def test_full_backward_hook_unused_input_gets_zeros_like_torch() -> None:
    def scenario(ns):
        trace = []

        class First(ns.nn.Module):
            def forward(self, a, b):
                return a * 2

        m = First()
        m.register_full_backward_hook(lambda mod, gi, go: trace.append(_gs(gi)))
        a, b = _leaf(ns, arr(2)), _leaf(ns, arr(2))
        m(a, b).sum().backward()
        return trace, _g(a.grad), _g(b.grad)

    assert same(scenario) == ("ok", ([([2.0, 2.0], [0.0, 0.0])], [2.0, 2.0], [0.0, 0.0]))


def test_full_backward_hook_can_replace_grad_input() -> None:
    def scenario(ns):
        m = ns.Act()
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
        x = _leaf(ns, arr(3))
        m(x).sum().backward()
        return _g(x.grad)

    assert same(scenario) == ("ok", [0.0, 0.0, 0.0])


def test_backward_pre_hook_can_replace_grad_output() -> None:
    def scenario(ns):
        m = ns.Lin(2, 2)
        m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
        x = _leaf(ns, arr(1, 2))
        m(x).sum().backward()
        return _g(x.grad), _g(m.weight.grad)

    same(scenario)


def test_backward_hook_wrong_length_raises() -> None:
    def scenario(ns):
        m = ns.Act()
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        m(_leaf(ns, arr(2))).sum().backward()

    assert same(scenario) == (
        "RuntimeError",
        "Backward hook returned an invalid number of grad_input, got 2, but expected 1",
    )

    def pre(ns):
        m = ns.Act()
        m.register_full_backward_pre_hook(lambda mod, go: ())
        m(_leaf(ns, arr(2))).sum().backward()

    assert same(pre) == (
        "RuntimeError",
        "Backward pre hook returned an invalid number of grad_output, got 0, but expected 1",
    )


def test_full_backward_hook_fires_with_none_when_no_input_requires_grad() -> None:
    def scenario(ns):
        trace = []
        m = ns.Lin(2, 2)
        m.register_full_backward_hook(lambda mod, gi, go: trace.append((gi, _gs(go))))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(ns.T(arr(1, 2))).sum().backward()
        return trace, [str(x.message)[:60] for x in w], _g(m.weight.grad)

    out = same(scenario)[1]
    assert out[0][0][0] == (None,)


def test_full_backward_hook_does_not_fire_when_no_output_requires_grad() -> None:
    def scenario(ns):
        trace = []
        m = ns.Act()
        m.register_full_backward_hook(lambda *a: trace.append("fired"))
        y = m(ns.T(arr(2)))
        return trace, y.requires_grad

    assert same(scenario) == ("ok", ([], False))


def test_backward_hook_order_across_nested_modules_and_global_hooks() -> None:
    def scenario(ns):
        trace = []

        class M(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = ns.Lin(2, 2)

            def forward(self, x):
                return self.lin(x) * 2

        m = M()
        mm = ns.nn.modules.module
        hs = [
            mm.register_module_full_backward_pre_hook(
                lambda mod, go: trace.append(f"GLOBAL bwd_pre {type(mod).__name__}")
            ),
            mm.register_module_full_backward_hook(
                lambda mod, gi, go: trace.append(f"GLOBAL bwd {type(mod).__name__}")
            ),
            m.register_full_backward_pre_hook(lambda mod, go: trace.append("bwd_pre M")),
            m.register_full_backward_hook(lambda mod, gi, go: trace.append("bwd M")),
        ]
        try:
            m(_leaf(ns, arr(1, 2))).sum().backward()
        finally:
            for h in hs:
                h.remove()
        mm._global_is_full_backward_hook = None
        return trace

    _hooks._global_flags.is_full_backward_hook = None
    assert same(scenario) == (
        "ok",
        [
            "GLOBAL bwd_pre M",
            "bwd_pre M",
            "GLOBAL bwd_pre Lin",
            "GLOBAL bwd Lin",
            "GLOBAL bwd M",
            "bwd M",
        ],
    )
    _hooks._global_flags.is_full_backward_hook = None


def test_mixing_regular_and_full_backward_hooks_raises() -> None:
    def scenario(ns):
        m = ns.Act()
        m.register_full_backward_hook(lambda *a: None)
        m.register_backward_hook(lambda *a: None)

    assert same(scenario) == (
        "RuntimeError",
        "Cannot use both regular backward hooks and full backward hooks on a single Module. "
        "Please use only one of them.",
    )

    def reverse(ns):
        m = ns.Act()
        m.register_backward_hook(lambda *a: None)
        m.register_full_backward_hook(lambda *a: None)

    same(reverse)


def test_deprecated_backward_hook_fires_on_output_grad_fn() -> None:
    fired = []
    m = MININN.Act()
    m.register_backward_hook(lambda mod, gi, go: fired.append((len(gi), len(go))))
    with pytest.warns(FutureWarning, match="the forward contains multiple autograd Nodes"):
        out = m(mininn.tensor(arr(2), requires_grad=True))
    out.sum().backward()
    assert fired and fired[0][1] == 1


def test_hooks_keep_gradients_identical_to_no_hooks() -> None:
    def grads(with_hooks: bool):
        m = MININN.Net()
        if with_hooks:
            for sub in m.modules():
                sub.register_full_backward_hook(lambda *a: None)
                sub.register_full_backward_pre_hook(lambda *a: None)
                sub.register_forward_hook(lambda *a: None)
        x = mininn.tensor(arr(2, 4), requires_grad=True)
        m(x).sum().backward()
        return [_g(p.grad) for p in m.parameters()] + [_g(x.grad)]

    assert grads(True) == grads(False)


def test_forward_under_no_grad_with_backward_hooks_returns_plain_output() -> None:
    m = MININN.Lin(2, 2)
    m.register_full_backward_hook(lambda *a: None)
    with mininn.no_grad():
        y = m(mininn.tensor(arr(1, 2), requires_grad=True))
    assert not y.requires_grad


def test_non_tensor_output_with_backward_hook_warns() -> None:
    def scenario(ns):
        class D(ns.nn.Module):
            def forward(self, x):
                return {"y": x * 2}

        m = D()
        m.register_full_backward_hook(lambda *a: None)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            m(_leaf(ns, arr(1)))
        return [str(x.message) for x in w]

    same(scenario)


# ---- fast path and threads -------------------------------------------------------------------


def test_module_without_hooks_calls_forward_directly(monkeypatch) -> None:
    def boom(*a, **k):
        raise AssertionError("hook path taken")

    monkeypatch.setattr(nn.modules.module, "call_with_hooks", boom)
    assert _g(MININN.Act()(mininn.tensor(arr(2)))) == [0.0, 0.2]


def test_hooks_registered_and_removed_from_threads_while_calling() -> None:
    m = MININN.Act()
    x = mininn.tensor(arr(2))
    errors = []

    def churn() -> None:
        try:
            for _ in range(300):
                with m.register_forward_hook(lambda mod, a, o: None):
                    m(x)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(m._forward_hooks) == 0
