"""When module hooks fire, and in which order, against torch 2.13: registration order and
``prepend`` for each hook kind, forward versus backward phase, global hooks on many modules,
and hooks that remove themselves (or a neighbour) while the module runs."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from _nn_twins import arr, same, to_np  # noqa: E402

from mininn.nn.modules import _hooks  # noqa: E402


@pytest.fixture(autouse=True)
def _forget_global_backward_hook_kind():
    # Both libraries remember whether a global backward hook was ever full or not, even
    # after its removal; reset that so the tests do not depend on each other.
    yield
    torch.nn.modules.module._global_is_full_backward_hook = None
    _hooks._global_flags.is_full_backward_hook = None


def _leaf(ns, a):
    return ns.T(a).requires_grad_()


@pytest.mark.parametrize("kind", ["forward_pre", "forward", "full_backward_pre", "full_backward"])
def test_prepend_puts_a_hook_ahead_of_the_earlier_ones(kind: str) -> None:
    def scenario(ns):
        trace = []
        m = ns.Lin(2, 2)
        register = getattr(m, f"register_{kind}_hook")
        for name, prepend in [("a", False), ("b", True), ("c", False), ("d", True), ("e", False)]:
            register(lambda *args, name=name: trace.append(name), prepend=prepend)
        phases = []
        for _ in range(2):
            y = m(_leaf(ns, arr(1, 2)))
            phases.append(list(trace))
            y.sum().backward()
            phases.append(list(trace))
        return phases

    order = ["d", "b", "a", "c", "e"]
    forward_phase = kind.startswith("forward")
    expected = [order, order, order * 2, order * 2] if forward_phase else [[], order, order, order * 2]
    assert same(scenario) == ("ok", expected)


def test_the_four_hook_kinds_fire_in_phase_order() -> None:
    def scenario(ns):
        trace = []
        m = ns.Lin(2, 2)
        m.register_full_backward_hook(lambda mod, gi, go: trace.append("backward"))
        m.register_full_backward_pre_hook(lambda mod, go: trace.append("backward pre"))
        m.register_forward_hook(lambda mod, args, out: trace.append("forward"))
        m.register_forward_pre_hook(lambda mod, args: trace.append("forward pre"))
        for _ in range(2):
            y = m(_leaf(ns, arr(1, 2)))
            trace.append("|")
            y.sum().backward()
        return trace

    round_ = ["forward pre", "forward", "|", "backward pre", "backward"]
    assert same(scenario) == ("ok", round_ * 2)


@pytest.mark.parametrize("backward_kind", ["backward", "full_backward"])
def test_global_hooks_fire_for_every_module_until_removed(backward_kind: str) -> None:
    # a two-stage pipeline: each global hook sees both stages, in forward and in backward order,
    # and a removed hook stops while the others go on
    def scenario(ns):
        events = []
        mm = ns.nn.modules.module
        register_backward = getattr(mm, f"register_module_{backward_kind}_hook")
        encoder, decoder = ns.Act(), ns.Act()
        stage = {encoder: "encoder", decoder: "decoder"}
        x = _leaf(ns, arr(3, 2))

        def note(what):
            return lambda mod, *_: events.append(f"{what}:{stage[mod]}")

        handles = [
            mm.register_module_forward_hook(note("seen")),
            mm.register_module_forward_hook(note("timed")),
            register_backward(note("grad")),
        ]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for removed in (None, 1, 2, 0):
                    if removed is not None:
                        handles[removed].remove()
                        events.append(f"-- without hook {removed}")
                    decoder(encoder(x)).sum().backward()
        finally:
            for h in handles:
                h.remove()  # removing twice is harmless
        return events, to_np(x.grad).tolist()

    events, grad = same(scenario)[1]
    both = ["seen:encoder", "timed:encoder", "seen:decoder", "timed:decoder"]
    assert events == [
        *both, "grad:decoder", "grad:encoder",
        "-- without hook 1", "seen:encoder", "seen:decoder", "grad:decoder", "grad:encoder",
        "-- without hook 2", "seen:encoder", "seen:decoder",
        "-- without hook 0",
    ]
    assert grad == [[16.0, 16.0]] * 3  # four backward passes of d(4x)/dx accumulate


@pytest.mark.parametrize("backward_kind", ["backward", "full_backward"])
def test_global_backward_hook_runs_before_the_modules_own(backward_kind: str) -> None:
    def scenario(ns):
        trace = []
        m = ns.Act()
        mm = ns.nn.modules.module
        register_global = getattr(mm, f"register_module_{backward_kind}_hook")
        register_own = getattr(m, f"register_{backward_kind}_hook")
        register_own(lambda mod, gi, go: trace.append("own"))
        with register_global(lambda mod, gi, go: trace.append("global")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m(_leaf(ns, arr(2))).sum().backward()
        return trace

    assert same(scenario) == ("ok", ["global", "own"])


@pytest.mark.parametrize("kind", ["forward_pre", "forward"])
def test_hooks_may_remove_themselves_and_each_other_during_a_call(kind: str) -> None:
    def scenario(ns):
        trace = []
        m = ns.Act()
        register = getattr(m, f"register_{kind}_hook")
        handles = {}

        def hook(name, removes):
            def run(*args):
                trace.append(name)
                handles[removes].remove()

            return run

        handles["a"] = register(hook("a", removes="a"))
        handles["b"] = register(hook("b", removes="c"))
        handles["c"] = register(hook("c", removes="c"))
        outs = []
        for _ in range(2):
            outs.append([round(float(v), 4) for v in to_np(m(ns.T(arr(2))))])
            trace.append("|")
        return trace, outs, len(handles["a"].hooks_dict_ref())

    # a hook removed during a call still runs in that call, and never again
    assert same(scenario) == ("ok", (["a", "b", "c", "|", "b", "|"], [[0.0, 0.2]] * 2, 1))


def test_removing_a_kwargs_hook_forgets_its_kwargs_flag() -> None:
    def scenario(ns):
        class Shift(ns.nn.Module):
            def forward(self, x, shift):
                return x + shift

        m = Shift()
        post = m.register_forward_hook(lambda mod, args, kwargs, out: out * 10, with_kwargs=True)
        pre = m.register_forward_pre_hook(
            lambda mod, args, kwargs: (args, {"shift": kwargs["shift"] + 1}), with_kwargs=True
        )
        outs = [m(1, shift=1)]
        post.remove()
        outs.append(m(1, shift=1))
        pre.remove()
        outs.append(m(1, shift=1))
        flags = (post.id in m._forward_hooks_with_kwargs, pre.id in m._forward_pre_hooks_with_kwargs)
        return outs, flags

    assert same(scenario) == ("ok", ([30, 3, 2], (False, False)))
