"""What backward hooks receive, against torch 2.13: tuples of gradients per tensor position,
None for non-tensor positions, counts over repeated backward passes, the inputs' requires_grad
left alone, the deprecated hook's warnings, and modules that return a dict."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _nn_twins import arr, same, to_np  # noqa: E402


def _leaf(ns, a):
    return ns.T(a).requires_grad_()


def _shapes(grads):
    return [None if g is None else tuple(g.shape) for g in grads]


def _values(t):
    return np.round(to_np(t).astype(np.float64), 4).tolist()


@pytest.mark.parametrize("kind", ["backward", "full_backward", "full_backward_pre"])
def test_hooks_see_tuples_and_fire_once_per_pass(kind: str) -> None:
    def scenario(ns):
        trace = []

        class Sigmoid(ns.nn.Module):
            def forward(self, x):
                return x.sigmoid()

        m = Sigmoid()
        x = _leaf(ns, np.ones((2, 3), np.float32))
        grad = ns.T(np.full((2, 3), 2.0, np.float32))

        def forward_hook(tag):
            def hook(mod, args, out):
                trace.append((tag, mod is m, type(args).__name__, _values(args[0])[0], _values(out)[0]))

            return hook

        def backward_hook(tag):
            def hook(mod, *grads):
                kinds = [type(g).__name__ for g in grads]
                trace.append((tag, mod is m, kinds, _values(grads[-1][0])[0]))

            return hook

        register_backward = getattr(m, f"register_{kind}_hook")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first_forward = m.register_forward_hook(forward_hook("fwd1"))
            m(x)
            first_backward = register_backward(backward_hook("bwd1"))
            y = m(x)
            y.backward(grad, retain_graph=True)
            y.backward(grad, retain_graph=True)
            trace.append("|")
            second_forward = m.register_forward_hook(forward_hook("fwd2"))
            second_backward = register_backward(backward_hook("bwd2"))
            m(x).backward(grad)
            trace.append("|")
            second_backward.remove()
            m(x).backward(grad)
            second_forward.remove()
            first_forward.remove()
            first_backward.remove()
            m(x).backward(grad)
        return trace

    trace = same(scenario)[1]
    assert trace[0] == ("fwd1", True, "tuple", [1.0, 1.0, 1.0], [0.7311, 0.7311, 0.7311])
    assert [t[0] for t in trace if t != "|"].count("bwd1") == 4


def test_full_backward_hook_on_a_module_with_buffers() -> None:
    def scenario(ns):
        seen = []
        m = ns.Norm(3)
        m.register_full_backward_hook(lambda mod, gi, go: seen.append((mod is m, _shapes(gi), _shapes(go))))
        m(_leaf(ns, arr(2, 3))).sum().backward()
        return seen

    assert same(scenario) == ("ok", [(True, [(2, 3)], [(2, 3)])])


def test_grad_shapes_follow_each_input_and_the_output() -> None:
    def scenario(ns):
        seen = []

        class Mix(ns.nn.Module):
            def forward(self, small, large):
                total = small.sum() * large + large.sum() * small.sum()
                return total.sum().reshape(1).expand(8)

        m = Mix()
        with m.register_full_backward_hook(lambda mod, gi, go: seen.append((_shapes(gi), _shapes(go)))):
            m(_leaf(ns, arr(2, 2)), _leaf(ns, arr(3, 4))).sum().backward()
        return seen

    assert same(scenario) == ("ok", [([(2, 2), (3, 4)], [(8,)])])


def test_non_tensor_positions_get_none() -> None:
    def scenario(ns):
        seen = []

        class Tagged(ns.nn.Module):
            def forward(self, tag, x):
                return x * 3, tag

        m = Tagged()
        m.register_full_backward_hook(lambda mod, gi, go: seen.append((_shapes(gi), _shapes(go))))
        out, tag = m("label", _leaf(ns, arr(2)))
        out.sum().backward()
        return seen, tag

    assert same(scenario) == ("ok", ([([None, (2,)], [(2,), None])], "label"))


def test_backward_hook_keeps_requires_grad_of_the_inputs() -> None:
    def scenario(ns):
        flags = []

        class Record(ns.nn.Module):
            def forward(self, a, b, c):
                flags.append((a.requires_grad, b.requires_grad, c.requires_grad))
                return a.sum() + b.sum() + c.sum()

        m = Record()
        x = _leaf(ns, arr(2))
        m(x, x.detach(), x)
        m.register_full_backward_hook(lambda mod, gi, go: None)
        m(x, x.detach(), x)
        return flags

    assert same(scenario) == ("ok", [(True, False, True)] * 2)


def test_full_backward_hook_when_only_the_last_input_requires_grad() -> None:
    def scenario(ns):
        seen = []

        class SquaredError(ns.nn.Module):
            def forward(self, target, prediction):
                return ((prediction - target) ** 2).mean()

        m = SquaredError()
        m.register_full_backward_hook(lambda mod, gi, go: seen.append(_shapes(gi)))
        prediction = _leaf(ns, arr(3))
        m(prediction.detach() + 1, prediction).backward()
        return seen, _values(prediction.grad)

    # torch reports a zero gradient, not None, for the detached first input
    assert same(scenario)[1][0] == [[(3,), (3,)]]


@pytest.mark.parametrize(
    "forward_shape",
    [
        "list_input",
        "list_output",
        "two_nodes",
        "chained_nodes",
    ],
)
def test_deprecated_backward_hook_warns_about_forwards_it_cannot_describe(forward_shape: str) -> None:
    def scenario(ns):
        class Forward(ns.nn.Module):
            def forward(self, *args):
                if forward_shape == "list_input":
                    return args[0][0].clone(), args[0][1].clone()
                if forward_shape == "list_output":
                    return [args[0].clone(), args[1].clone()]
                if forward_shape == "two_nodes":
                    return args[0].clone(), args[1].clone()
                return args[0].clone().clone()

        a, b = _leaf(ns, arr(2)), _leaf(ns, arr(2))
        args = {"list_input": ([a, b],), "chained_nodes": (a,)}.get(forward_shape, (a, b))
        m = Forward()
        m.register_backward_hook(lambda *grads: None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m(*args)
        return [(w.category.__name__, str(w.message)) for w in caught]

    warned = same(scenario)[1]
    assert len(warned) == 1 and warned[0][0] == "FutureWarning"


def test_dict_output_runs_forward_hooks_but_not_backward_hooks() -> None:
    def scenario(ns):
        trace = []

        class Softmax(ns.nn.Module):
            def forward(self, batch):
                e = batch["x"].exp()
                return {"x": e / e.sum()}

        m = Softmax()
        m.register_forward_pre_hook(lambda mod, args: trace.append("pre"))
        m.register_forward_hook(lambda mod, args, out: trace.append("forward"))
        m.register_full_backward_pre_hook(lambda mod, go: trace.append("backward pre"))
        m.register_full_backward_hook(lambda mod, gi, go: trace.append("backward"))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m({"x": _leaf(ns, arr(2))})["x"].sum().backward()
        return trace, len(caught)

    assert same(scenario) == ("ok", (["pre", "forward"], 1))


def test_dict_output_with_deprecated_backward_hook_still_backpropagates() -> None:
    def scenario(ns):
        class Scored(ns.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = ns.Lin(3, 2)
                self.fired = 0
                self.register_backward_hook(self.count)

            def count(self, module, grad_input, grad_output):
                self.fired += 1

            def forward(self, x):
                return {"score": self.lin(x).sum()}

        m = Scored()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = m(ns.T(arr(2, 3)))
        out["score"].backward()
        return m.fired, _values(m.lin.weight.grad)

    assert same(scenario)[1][0] == 1
