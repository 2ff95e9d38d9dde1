"""What module hooks' return values do, against torch 2.13: replaced inputs, outputs and
gradients (module and global hooks), returns of the wrong length, returns when no input needs a
gradient, kwargs flowing from a pre-hook to a forward hook, and always-called hooks when a
pre-hook fails."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import arr, same, to_np  # noqa: E402

from mininn.nn.modules import _hooks  # noqa: E402


@pytest.fixture(autouse=True)
def _forget_global_backward_hook_kind():
    # see test_module_hook_order.py: the global full/non-full choice outlives the hooks
    yield
    torch.nn.modules.module._global_is_full_backward_hook = None
    _hooks._global_flags.is_full_backward_hook = None


def _leaf(ns, a):
    return ns.T(a).requires_grad_()


def _values(t):
    return None if t is None else np.round(to_np(t).astype(np.float64), 4).tolist()


def _sigmoid_module(ns):
    # one autograd node with one input, so the deprecated backward hook sees one grad_input
    class Sigmoid(ns.nn.Module):
        def forward(self, x):
            return x.sigmoid()

    return Sigmoid()


class _Registrar:
    """Registers a hook on the module or globally, and removes everything it registered."""

    def __init__(self, ns, module, where: str) -> None:
        self.ns, self.module, self.where, self.handles = ns, module, where, []

    def __call__(self, kind: str, hook, **kwargs):
        if self.where == "global":
            register = getattr(self.ns.nn.modules.module, f"register_module_{kind}_hook")
        else:
            register = getattr(self.module, f"register_{kind}_hook")
        self.handles.append(register(hook, **kwargs))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        for h in self.handles:
            h.remove()


@pytest.mark.parametrize("where", ["module", "global"])
def test_replaced_input_and_output_keep_the_gradient_path(where: str) -> None:
    def scenario(ns):
        m = _sigmoid_module(ns)
        x = _leaf(ns, arr(2, 3, start=-0.3))
        with _Registrar(ns, m, where) as register:
            register("forward_pre", lambda mod, args: args[0].relu())
            register("forward", lambda mod, args, out: -out)
            y = m(x)
        y.backward(ns.T(np.full((2, 3), 2.0, np.float32)))
        return _values(y), _values(x.grad)

    same(scenario)


@pytest.mark.parametrize(
    ("where", "kind"),
    [(where, kind) for where in ("module", "global") for kind in ("backward", "full_backward")],
)
def test_backward_hook_result_replaces_grad_input(where: str, kind: str) -> None:
    def scenario(ns):
        m = _sigmoid_module(ns)
        x = _leaf(ns, arr(2, 2))
        with _Registrar(ns, m, where) as register:
            register(kind, lambda mod, gi, go: tuple(g * 2 for g in gi))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m(x).backward(ns.T(np.ones((2, 2), np.float32)))
        return _values(x.grad)

    same(scenario)


@pytest.mark.parametrize(
    ("where", "kind", "change"),
    [
        ("module", "backward", "drop"),
        ("module", "backward", "extra"),
        ("module", "full_backward_pre", "drop"),
        ("module", "full_backward_pre", "extra"),
        ("global", "backward", "drop"),
        ("global", "backward", "extra"),
    ],
)
def test_wrong_number_of_returned_gradients_raises(where: str, kind: str, change: str) -> None:
    def scenario(ns):
        m = _sigmoid_module(ns)
        extra = ns.T(arr(3, 3))

        def hook(mod, replaceable, *rest):
            # a backward hook may replace grad_input, a pre-hook grad_output: both come first
            return replaceable[:-1] if change == "drop" else (*replaceable, extra)

        with _Registrar(ns, m, where) as register:
            register(kind, hook)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m(_leaf(ns, arr(2, 2))).sum().backward()

    kind_, message = same(scenario)
    assert kind_ == "RuntimeError" and ("got 0" in message or "got 2" in message)


def test_backward_hook_sees_the_grad_output_a_pre_hook_returned() -> None:
    def scenario(ns):
        seen = []
        m = ns.Act()
        m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 0.5,))
        m.register_full_backward_hook(lambda mod, gi, go: seen.append((_values(gi[0]), _values(go[0]))))
        x = _leaf(ns, arr(1, 2))
        m(x).sum().backward()
        return seen, _values(x.grad)

    assert same(scenario) == ("ok", ([([[1.0, 1.0]], [[0.5, 0.5]])], [[1.0, 1.0]]))


@pytest.mark.parametrize("result", ["none", "grad_input", "a_tensor"])
def test_full_backward_hook_result_when_no_input_requires_grad(result: str) -> None:
    def scenario(ns):
        seen = []
        m = ns.Lin(2, 3)
        x = ns.T(arr(1, 2))

        def hook(mod, gi, go):
            seen.append((gi, [tuple(g.shape) for g in go]))
            return {"none": None, "grad_input": gi, "a_tensor": x}[result]

        m.register_full_backward_hook(hook)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m(x).sum().backward()
        return seen

    outcome = same(scenario)
    if result == "a_tensor":
        assert outcome[0] == "RuntimeError" and "where no input requires gradient" in outcome[1]
    else:
        assert outcome == ("ok", [((None,), [(1, 3)])])


def test_kwargs_forward_hook_sees_kwargs_changed_by_a_kwargs_pre_hook() -> None:
    def scenario(ns):
        seen = []

        class Offset(ns.nn.Module):
            def forward(self, x, offset=0):
                return x + offset

            def add_offset_again(self, mod, args, kwargs, out):
                return out + kwargs["offset"]

        m = Offset()
        m.register_forward_hook(m.add_offset_again, with_kwargs=True)
        m.register_forward_hook(
            lambda mod, args, kwargs, out: seen.append((args, dict(kwargs), out)), with_kwargs=True
        )
        m.register_forward_pre_hook(
            lambda mod, args, kwargs: (args, {"offset": kwargs["offset"] * 2}), with_kwargs=True
        )
        return m(1, offset=3), seen

    assert same(scenario) == ("ok", (13, [((1,), {"offset": 6}, 13)]))


def test_always_called_hooks_run_when_a_pre_hook_raises() -> None:
    def scenario(ns):
        trace = []
        m = ns.Act()
        mm = ns.nn.modules.module

        def failing_pre_hook(mod, args):
            trace.append("pre")
            raise ValueError("pre-hook failed")

        def failing_always(mod, args, out):
            trace.append("failing always")
            raise KeyError("also failed")

        m.register_forward_pre_hook(failing_pre_hook)
        m.register_forward_hook(lambda mod, args, out: trace.append("ordinary"))
        m.register_forward_hook(failing_always, always_call=True, prepend=True)
        m.register_forward_hook(lambda mod, args, out: trace.append(("always", out)), always_call=True)
        on_all = mm.register_module_forward_hook(
            lambda mod, args, out: trace.append("global"), always_call=True
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                m(ns.T(arr(1)))
            except ValueError as e:
                trace.append(e.args[0])
            finally:
                on_all.remove()
        global_flags = mm if ns.name == "torch" else _hooks
        counts = (len(m._forward_hooks_always_called), len(global_flags._global_forward_hooks_always_called))
        return trace, [str(w.message) for w in caught], counts

    trace, messages, counts = same(scenario)[1]
    assert trace == ["pre", "global", "failing always", ("always", None), "pre-hook failed"]
    assert len(messages) == 1 and counts == (2, 0)
