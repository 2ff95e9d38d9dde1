"""The autograd engine against torch: graph shapes, accumulation, hooks, grad modes,
``autograd.grad`` and finite-difference checks of every differentiable op in float64.
"""

import threading

import numpy as np
import pytest
from _tensor_parity import run_both

import mininn
from mininn.autograd import ArrayFunction, Context, gradcheck

torch = pytest.importorskip("torch")


def _pair(values, dtype=np.float64):
    a = np.asarray(values, dtype=dtype)
    return mininn.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def test_diamond_graph_sums_both_paths_like_torch():
    def fn(lib, x):
        y = x * 2
        a, b = y.exp(), y.sin()
        return (a * b + y).sum()

    run_both(fn, np.array([0.1, -0.3, 0.7]))


def test_tensor_used_many_times_and_as_both_operands():
    run_both(lambda lib, x: x * x * x + x @ x + x / x, np.array([1.0, 2.0, 3.0]))


def test_gradients_accumulate_across_backward_calls_like_torch():
    x, tx = _pair([1.0, 2.0])
    for _ in range(3):
        (x * x).sum().backward()
        (tx * tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_backward_with_explicit_gradient_and_retain_graph():
    x, tx = _pair([1.0, 2.0, 3.0])
    y, ty = x.exp(), tx.exp()
    g = np.array([1.0, -1.0, 0.5])
    y.backward(mininn.tensor(g), retain_graph=True)
    ty.backward(torch.tensor(g), retain_graph=True)
    y.backward(mininn.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_backward_with_inputs_accumulates_only_into_those_like_torch():
    grads = []
    for lib in (mininn, torch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        h = a * b
        (h * h).sum().backward(inputs=[b, h])
        grads.append((a.grad, b.grad.tolist(), h.grad.tolist()))
    assert grads[0][0] is None and grads[1][0] is None
    assert grads[0][1:] == grads[1][1:]


def test_leaf_grad_keeps_leaf_dtype_and_shape():
    x = mininn.ones(2, 3, dtype=mininn.float32, requires_grad=True)
    (x.double() * 2).sum().backward()
    assert x.grad.dtype is mininn.float32 and x.grad.shape == (2, 3)
    assert x.grad.grad_fn is None and not x.grad.requires_grad


def test_grad_fn_names_and_next_functions_look_like_torch():
    x, tx = _pair([1.0, 2.0])
    y, ty = x * 2 + 1, tx * 2 + 1
    assert y.grad_fn.name() == ty.grad_fn.name() == "AddBackward0"
    (mul, _), = [e for e in y.grad_fn.next_functions if e[0] is not None]
    assert mul.name() == "MulBackward0"
    assert mul.next_functions[0][0].name() == "AccumulateGrad"
    assert mul.next_functions[0][0].variable is x


def test_register_hook_sees_and_replaces_gradients_like_torch():
    seen = {}
    for lib in (mininn, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 3
        y.register_hook(lambda g: g * 10)
        x.register_hook(lambda g, lib=lib: seen.__setitem__(lib.__name__, g.tolist()))
        y.sum().backward()
        seen[lib.__name__ + ".grad"] = x.grad.tolist()
    assert seen["mininn"] == seen["torch"] == [30.0, 30.0]
    assert seen["mininn.grad"] == seen["torch.grad"]


def test_removed_hook_no_longer_runs():
    x = mininn.tensor([1.0], requires_grad=True)
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    handle.remove()
    (x * 2).sum().backward()
    assert calls == [] and x.grad.tolist() == [2.0]


def test_retain_grad_keeps_non_leaf_gradients_like_torch():
    x, tx = _pair([1.0, 2.0])
    y, ty = x * x, tx * tx
    y.retain_grad()
    ty.retain_grad()
    (y * 3).sum().backward()
    (ty * 3).sum().backward()
    assert y.retains_grad and y.grad.tolist() == ty.grad.tolist() == [3.0, 3.0]
    z = x * 2
    (z * 1).sum().backward()
    assert z.grad is None


def test_node_hooks_run_before_and_after_the_node():
    x = mininn.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    order = []
    y.grad_fn.register_prehook(lambda gout: order.append(("pre", gout[0].tolist())))
    y.grad_fn.register_hook(lambda gin, gout: order.append(("post", gin[0].tolist())))
    y.sum().backward()
    assert order == [("pre", [1.0, 1.0]), ("post", [2.0, 2.0])]


def test_ten_thousand_deep_chain_with_many_ops():
    x = mininn.tensor([0.5], dtype=mininn.float64, requires_grad=True)
    y = x
    for i in range(10_000):
        y = (y + 0.0001).tanh() if i % 2 else y * 1.0
    y.sum().backward()
    assert x.grad is not None and np.isfinite(x.grad.item())


def test_no_grad_enable_grad_and_set_grad_enabled_nest_like_torch():
    x = mininn.ones(1, requires_grad=True)
    with mininn.no_grad():
        assert not mininn.is_grad_enabled() and not (x * 2).requires_grad
        with mininn.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    assert mininn.is_grad_enabled()
    with mininn.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert mininn.is_grad_enabled()
    mininn.set_grad_enabled(False)
    try:
        assert not mininn.is_grad_enabled()
    finally:
        mininn.set_grad_enabled(True)
    with mininn.inference_mode():
        assert not (x * 2).requires_grad
    with mininn.inference_mode(False):
        assert (x * 2).requires_grad


def test_grad_modes_work_as_decorators():
    x = mininn.ones(1, requires_grad=True)

    @mininn.no_grad()
    def off():
        return x * 2

    @mininn.enable_grad()
    def on():
        return x * 2

    @mininn.inference_mode()
    def infer():
        return x * 2

    @mininn.set_grad_enabled(False)
    def also_off():
        return x * 2

    assert mininn.is_grad_enabled()  # the decorator must not switch it at definition time
    assert not off().requires_grad and not infer().requires_grad and not also_off().requires_grad
    with mininn.no_grad():
        assert on().requires_grad
    assert off.__name__ == "off"


def test_grad_mode_is_per_thread():
    x = mininn.ones(1, requires_grad=True)
    results = {}

    def worker():
        results["thread"] = (x * 2).requires_grad

    with mininn.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert results["thread"] is True


def test_autograd_grad_returns_gradients_without_touching_dot_grad():
    x, tx = _pair([1.0, 2.0, 3.0])
    w, tw = _pair([0.5, -1.0, 2.0])
    (gx, gw) = mininn.autograd.grad((x * w).sum(), [x, w])
    (tgx, tgw) = torch.autograd.grad((tx * tw).sum(), [tx, tw])
    np.testing.assert_allclose(gx.numpy(), tgx.numpy())
    np.testing.assert_allclose(gw.numpy(), tgw.numpy())
    assert x.grad is None and w.grad is None
    y = x * 2
    (gy,) = mininn.autograd.grad((y * y).sum(), y)
    assert gy.tolist() == (4 * x.detach()).tolist()


def test_autograd_grad_errors_match_torch():
    for lib in (mininn, torch):
        x = lib.ones(2, requires_grad=True)
        unused = lib.ones(2, requires_grad=True)
        unused_msg = (
            r"^The differentiated Tensor at index 1 appears to not have been used in the graph\. "
            r"Set allow_unused=True if this is the desired behavior\.$"
        )
        with pytest.raises(RuntimeError, match=unused_msg):
            lib.autograd.grad((x * 2).sum(), [x, unused])
        g = lib.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
        assert g[1] is None
        with pytest.raises(RuntimeError, match="^One of the differentiated Tensors does not require grad$"):
            lib.autograd.grad((x * 2).sum(), [lib.ones(2)])


def test_custom_function_with_needs_input_grad():
    class ScaledSquare(ArrayFunction):
        @staticmethod
        def forward(ctx: Context, a, scale):
            ctx.save_for_backward(a)
            ctx.scale = scale
            return a * a * scale

        @staticmethod
        def backward(ctx: Context, g):
            (a,) = ctx.saved_tensors
            assert ctx.needs_input_grad == (True, False)
            return g * 2 * a * ctx.scale, None

    x = mininn.tensor([1.0, 3.0], requires_grad=True)
    y = ScaledSquare.apply(x, 0.5)
    assert y.grad_fn.name() == "ScaledSquareBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 3.0]


GRADCHECK = {
    "arith": lambda a, b: (a * b - a / (b.abs() + 1)) ** 2,
    "unary": lambda a, b: a.exp() + a.tanh() + a.sigmoid() + a.sin() * a.cos() + a.erf(),
    "logs": lambda a, b: (a.abs() + 1).log() + (b.abs() + 0.5).sqrt() + (b.abs() + 0.5).rsqrt(),
    "softmax": lambda a, b: a.softmax(-1) * b.log_softmax(0),
    "reductions": lambda a, b: a.sum(0) + a.mean(1).sum() + a.var(1).sum() + a.std(0).sum(),
    "logsumexp_prod": lambda a, b: a.logsumexp(1).sum() + b.prod(1).sum(),
    "amax": lambda a, b: a.amax(1) + b.max(0).values.sum(),
    "matmul": lambda a, b: a @ b.T,
    "shape": lambda a, b: a.permute(1, 0).reshape(-1)[::2] * b.flatten().flip(0)[:6],
    "index": lambda a, b: a[[0, 0, 1]] + b[:, 1:3].sum() + a.gather(1, mininn.tensor([[0], [1], [2]])),
    "join": lambda a, b: mininn.cat([a, b], 1).sum(1) * mininn.stack([a, b], 2).sum((1, 2)),
    "split": lambda a, b: a.split(1, 1)[0] * b.chunk(2, 1)[1][:, :1],
    "where": lambda a, b: mininn.where(a > 0, a * 2, b) + mininn.maximum(a, b * 0.5),
    "clamp": lambda a, b: a.clamp(-0.5, 0.5) + b.relu() + a.abs(),
    "einsum": lambda a, b: mininn.einsum("ij,kj->ik", a, b),
    "expand_repeat": lambda a, b: a[:, :1].expand(3, 4) * b.repeat(1, 1),
    "sort_topk": lambda a, b: a.sort(1).values + b.topk(2, dim=1).values.sum(1, keepdim=True),
    "cumsum_roll": lambda a, b: a.cumsum(1) * b.roll(1, 0),
    "pow_tensor": lambda a, b: (a.abs() + 0.5) ** b,
}


@pytest.mark.parametrize("name", sorted(GRADCHECK))
def test_gradients_agree_with_finite_differences_in_float64(name):
    rng = np.random.default_rng(0)
    a = mininn.tensor(rng.standard_normal((3, 4)) + 0.05, requires_grad=True)
    b = mininn.tensor(rng.standard_normal((3, 4)) - 0.05, requires_grad=True)
    assert gradcheck(GRADCHECK[name], (a, b))


def test_gradcheck_detects_a_wrong_backward():
    class Wrong(ArrayFunction):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = mininn.tensor([1.0, 2.0], dtype=mininn.float64, requires_grad=True)
    with pytest.raises(mininn.autograd.GradcheckError, match="Jacobian mismatch"):
        gradcheck(Wrong.apply, (x,))
    assert gradcheck(Wrong.apply, (x,), raise_exception=False) is False
