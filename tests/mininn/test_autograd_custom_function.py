"""``mininn.autograd.Function`` against ``torch.autograd.Function``: the same subclass source,
built once on each library, run on the same float64 inputs.

Values, gradients, ``needs_input_grad`` and the messages of the bad paths are compared with
what torch does at test time (nothing torch says is copied into an expectation here), and
``mininn.autograd.gradcheck`` checks each backward against finite differences.
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import mininn
from mininn.autograd import GradcheckError, gradcheck
from mininn.torch_alias import load_code

torch = pytest.importorskip("torch")

LIBS = {"torch": torch, "mininn": mininn}
USER_MODEL = Path(__file__).parents[1] / "app" / "user_models" / "custom_function"


@functools.cache
def functions(name: str) -> SimpleNamespace:
    """The custom Functions that real model files write, defined on ``LIBS[name]``."""
    lib = LIBS[name]
    seen: list[Any] = []  # what forward and backward observe, for the tests to compare

    class Swish(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * lib.sigmoid(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            s = lib.sigmoid(x)
            return grad * (s * (1 + x * (1 - s)))

    class RoundSTE(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.round()

        @staticmethod
        def backward(ctx, grad):
            return grad

    class GradReverse(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, alpha):
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad.neg() * ctx.alpha, None

    class MatMul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(("forward", ctx.needs_input_grad, lib.is_grad_enabled()))
            ctx.save_for_backward(a, b)
            return a.mm(b)

        @staticmethod
        def backward(ctx, grad):
            seen.append(("backward", ctx.needs_input_grad, lib.is_grad_enabled()))
            a, b = ctx.saved_tensors
            grad_a = grad.mm(b.t()) if ctx.needs_input_grad[0] else None
            grad_b = a.t().mm(grad) if ctx.needs_input_grad[1] else None
            return grad_a, grad_b

    class Linear(lib.autograd.Function):  # torch's documentation example, bias broadcast over rows
        @staticmethod
        def forward(x, weight, bias=None):
            out = x.mm(weight.t())
            return out if bias is None else out + bias

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, weight, bias = inputs
            ctx.save_for_backward(x, weight)
            ctx.has_bias = bias is not None

        @staticmethod
        def backward(ctx, grad):
            x, weight = ctx.saved_tensors
            grad_bias = grad if ctx.has_bias else None  # (B, out): engine sums it to bias's (out,)
            return grad.mm(weight), grad.t().mm(x), grad_bias

    class MaxWithIndex(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            values, index = x.max(dim=1)
            ctx.mark_non_differentiable(index)
            ctx.save_for_backward(x, index)
            return values, index

        @staticmethod
        def backward(ctx, grad_values, grad_index):
            seen.append(("max", grad_index.dtype == lib.int64, bool((grad_index == 0).all())))
            x, index = ctx.saved_tensors
            grad = lib.zeros_like(x)
            grad[lib.arange(x.shape[0]), index] = grad_values
            return grad

    class TwoHeads(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, grad_double, grad_triple):
            seen.append(("heads", grad_double is None, grad_triple is None))
            total = 0
            if grad_double is not None:
                total = total + grad_double * 2
            if grad_triple is not None:
                total = total + grad_triple * 3
            return total, None

    class OnceSquare(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            seen.append(("once", lib.is_grad_enabled()))
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    class ScaleInPlace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, factor):
            x.mul_(factor)
            ctx.mark_dirty(x)
            ctx.factor = factor
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor, None

    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 5

    class Mixed(lib.autograd.Function):  # a tuple output holding a non-tensor and an index
        @staticmethod
        def forward(ctx, x):
            return x * 2, "label", x.argmax()

        @staticmethod
        def backward(ctx, grad, grad_label, grad_index):
            seen.append(("mixed", grad_label, grad_index.dtype == lib.int64))
            return grad * 2

    return SimpleNamespace(lib=lib, seen=seen, **{c.__name__: c for c in (
        Swish, RoundSTE, GradReverse, MatMul, Linear, MaxWithIndex, TwoHeads, OnceSquare, ScaleInPlace,
        Identity, Mixed,
    )})


def _arrays(*shapes: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) * 1.7 for shape in shapes]


def _on_both(run: Callable[[SimpleNamespace, list[Any]], Any], arrays: list[np.ndarray],
             requires_grad: tuple[bool, ...] | None = None) -> dict[str, tuple[Any, list[Any]]]:
    """``run(fns, inputs)`` on each library; its result and the inputs' grads, as NumPy."""
    results = {}
    for name in LIBS:
        fns = functions(name)
        flags = requires_grad or (True,) * len(arrays)
        inputs = [fns.lib.tensor(a.copy(), requires_grad=r) for a, r in zip(arrays, flags)]
        out = run(fns, inputs)
        grads = [None if t.grad is None else t.grad.numpy() for t in inputs]
        results[name] = (_numpy(out), grads)
    return results


def _numpy(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_numpy(v) for v in value]
    return value.detach().numpy() if hasattr(value, "detach") else value


def _assert_same(results: dict[str, tuple[Any, list[Any]]]) -> None:
    _assert_equal(results["mininn"], results["torch"])


def _assert_equal(ours: Any, theirs: Any) -> None:
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _assert_equal(a, b)
    elif isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray) and ours.dtype == theirs.dtype
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    else:
        assert ours == theirs


def _backward_sum(outputs: Any) -> Any:
    first = outputs[0] if isinstance(outputs, tuple) else outputs
    (first * first.detach().cos()).sum().backward()  # a non-uniform upstream gradient
    return outputs


def _raised(run: Callable[[SimpleNamespace], Any]) -> dict[str, tuple[str, str]]:
    caught = {}
    for name in LIBS:
        with pytest.raises(Exception) as info:
            run(functions(name))
        caught[name] = (type(info.value).__name__, str(info.value))
    return caught


def _assert_same_error(run: Callable[[SimpleNamespace], Any], fragment: str) -> None:
    caught = _raised(run)
    assert caught["mininn"] == caught["torch"]
    assert fragment in caught["mininn"][1]


# -- the patterns real model files use ------------------------------------------------------------

def test_memory_efficient_swish_equals_torch_and_passes_gradcheck() -> None:
    _assert_same(_on_both(lambda f, x: _backward_sum(f.Swish.apply(x[0])), _arrays((4, 5))))
    x = mininn.tensor(_arrays((3, 2))[0], requires_grad=True)
    assert gradcheck(functions("mininn").Swish.apply, (x,))


def test_straight_through_round_rounds_forward_and_passes_the_gradient_unchanged() -> None:
    results = _on_both(lambda f, x: _backward_sum(f.RoundSTE.apply(x[0])), _arrays((3, 4)))
    _assert_same(results)
    out, (grad,) = results["mininn"]
    assert np.array_equal(out, np.round(out))
    np.testing.assert_allclose(grad, np.cos(out))  # d(y * cos(y))/dy with y held: cos(y), passed straight


def test_gradient_reversal_negates_and_scales_with_a_non_tensor_argument() -> None:
    results = _on_both(lambda f, x: _backward_sum(f.GradReverse.apply(x[0], 0.3)), _arrays((2, 3)))
    _assert_same(results)
    out, (grad,) = results["mininn"]
    np.testing.assert_allclose(grad, -0.3 * np.cos(out))


@pytest.mark.parametrize("requires_grad", [(True, True), (True, False), (False, True)])
def test_matmul_with_its_own_backward_sees_needs_input_grad_as_torch(requires_grad: tuple[bool, ...]) -> None:
    for name in LIBS:
        functions(name).seen.clear()
    arrays = _arrays((3, 4), (4, 2))
    _assert_same(_on_both(lambda f, x: _backward_sum(f.MatMul.apply(*x)), arrays, requires_grad))
    assert functions("mininn").seen == functions("torch").seen
    assert functions("mininn").seen[0] == ("forward", requires_grad, False)  # forward records nothing


def test_setup_context_style_linear_with_broadcast_bias_grad() -> None:
    arrays = _arrays((5, 3), (2, 3), (2,))
    _assert_same(_on_both(lambda f, x: _backward_sum(f.Linear.apply(*x)), arrays))
    _assert_same(_on_both(lambda f, x: _backward_sum(f.Linear.apply(x[0], weight=x[1])), arrays[:2]))
    x, w, b = (mininn.tensor(a, requires_grad=True) for a in arrays)
    assert gradcheck(functions("mininn").Linear.apply, (x, w, b))


def test_gradcheck_catches_a_backward_that_is_wrong() -> None:
    class HalfWrong(mininn.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return grad * 3

    x = mininn.tensor(_arrays((3,))[0], requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(HalfWrong.apply, (x,))


# -- ctx: non-differentiable outputs, materialized grads, once_differentiable, in place ---------

def test_argmax_index_output_is_non_differentiable_and_gets_zeros() -> None:
    for name in LIBS:
        functions(name).seen.clear()
    results = _on_both(lambda f, x: _backward_sum(f.MaxWithIndex.apply(x[0])), _arrays((3, 5)))
    _assert_same(results)
    assert functions("mininn").seen == functions("torch").seen == [("max", True, True)]
    f = functions("mininn")
    values, index = f.MaxWithIndex.apply(mininn.tensor(_arrays((2, 4))[0], requires_grad=True))
    assert values.requires_grad and not index.requires_grad and index.grad_fn is None


@pytest.mark.parametrize("materialize", [True, False])
def test_grads_of_unused_outputs_are_zeros_unless_materialize_grads_is_off(materialize: bool) -> None:
    for name in LIBS:
        functions(name).seen.clear()
    run = lambda f, x: f.TwoHeads.apply(x[0], materialize)[1].sum().backward()  # noqa: E731
    _assert_same(_on_both(run, _arrays((2, 3))))
    assert functions("mininn").seen == functions("torch").seen == [("heads", not materialize, False)]


def test_tuple_output_keeps_a_non_tensor_and_backward_gets_none_for_it() -> None:
    for name in LIBS:
        functions(name).seen.clear()
    results = _on_both(lambda f, x: _backward_sum(f.Mixed.apply(x[0])), _arrays((4,)))
    _assert_same(results)
    assert results["mininn"][0][1] == "label"
    assert functions("mininn").seen == functions("torch").seen == [("mixed", None, True)]


def test_once_differentiable_runs_without_grad_and_differentiating_its_result_raises() -> None:
    for name in LIBS:
        functions(name).seen.clear()
    _assert_same(_on_both(lambda f, x: _backward_sum(f.OnceSquare.apply(x[0])), _arrays((3,))))
    assert functions("mininn").seen == functions("torch").seen == [("once", False)]

    def differentiate_twice(f: SimpleNamespace) -> None:
        x = f.lib.tensor(_arrays((3,))[0], requires_grad=True)
        y = f.OnceSquare.apply(x)
        grad_y = f.lib.ones(3, dtype=f.lib.float64, requires_grad=True)
        grad_x = f.OnceSquare.backward(y.grad_fn, grad_y)  # grad enabled: the result carries an error node
        assert grad_x.requires_grad
        grad_x.sum().backward()

    _assert_same_error(differentiate_twice, "@once_differentiable")


def test_mark_dirty_rebases_the_modified_input_onto_the_function() -> None:
    def run(f: SimpleNamespace, x: list[Any]) -> Any:
        h = x[0] * 1.0
        out = f.ScaleInPlace.apply(h, 2.5)
        assert out is h and type(out.grad_fn).__name__ == "ScaleInPlaceBackward"
        return _backward_sum(out)

    _assert_same(_on_both(run, _arrays((2, 3))))


def test_mark_dirty_on_a_leaf_that_requires_grad_raises_torchs_error() -> None:
    leaf = lambda lib: lib.ones(2, requires_grad=True)  # noqa: E731
    _assert_same_error(lambda f: f.ScaleInPlace.apply(leaf(f.lib), 2.0), "leaf Variable")


def test_an_input_returned_as_it_is_becomes_a_new_tensor_on_the_graph() -> None:
    results = _on_both(lambda f, x: _backward_sum(f.Identity.apply(x[0])), _arrays((3,)))
    _assert_same(results)
    x = mininn.ones(2, requires_grad=True)
    y = functions("mininn").Identity.apply(x)
    assert y is not x and y.grad_fn.name() == "IdentityBackward"
    y.data.add_(1)  # the same data, as torch's view of the input
    assert x.tolist() == [2.0, 2.0]


def test_under_no_grad_or_without_inputs_that_require_grad_only_forward_runs() -> None:
    f = functions("mininn")
    x = mininn.tensor(_arrays((2, 2))[0], requires_grad=True)
    with mininn.no_grad():
        y = f.Swish.apply(x)
    z = f.Swish.apply(x.detach())
    assert not y.requires_grad and y.grad_fn is None and not z.requires_grad
    np.testing.assert_allclose(y.numpy(), z.numpy())
    f.seen.clear()
    with mininn.no_grad():
        f.MatMul.apply(x, x.detach())
    assert f.seen == [("forward", (True, False), False)]  # needs_input_grad says requires_grad, as torch
    for name in LIBS:
        for requires_grad in (True, False):
            x = LIBS[name].ones(2, requires_grad=requires_grad)
            with LIBS[name].no_grad():
                y = functions(name).Identity.apply(x)
            assert y is not x and not y.requires_grad  # an input returned as it is: a new tensor, as torch


def test_grad_fn_is_named_for_the_function_and_shows_the_ctx() -> None:
    for name in LIBS:
        f = functions(name)
        y = f.GradReverse.apply(f.lib.ones(2, requires_grad=True), 0.5)
        assert type(y.grad_fn).__name__ == y.grad_fn.name() == "GradReverseBackward"
        assert y.grad_fn.alpha == 0.5 and y.grad_fn.needs_input_grad == (True, False)
        assert len(y.grad_fn.next_functions) == 1


def test_hooks_on_the_node_and_on_its_output_see_torchs_gradients() -> None:
    def run(f: SimpleNamespace, x: list[Any]) -> Any:
        y = f.Swish.apply(x[0])
        seen = []
        y.register_hook(lambda g: seen.append(g.detach().numpy().copy()))
        y.grad_fn.register_hook(lambda grad_in, grad_out: seen.append(grad_in[0].detach().numpy().copy()))
        _backward_sum(y)
        return seen

    _assert_same(_on_both(run, _arrays((3,))))


def test_saved_tensors_are_freed_after_backward_unless_retain_graph() -> None:
    def twice(f: SimpleNamespace, retain: bool) -> None:
        y = f.Swish.apply(f.lib.ones(2, requires_grad=True))
        y.sum().backward(retain_graph=retain)
        y.sum().backward()

    twice(functions("mininn"), True)
    _assert_same_error(lambda f: twice(f, False), "backward through the graph a second time")


def test_keyword_arguments_fill_forwards_positional_parameters_as_in_torch() -> None:
    _assert_same(_on_both(lambda f, x: _backward_sum(f.GradReverse.apply(x[0], alpha=2.0)), _arrays((3,))))
    _assert_same_error(lambda f: f.GradReverse.apply(f.lib.ones(2), beta=1.0), "unexpected keyword argument")
    _assert_same_error(lambda f: f.GradReverse.apply(f.lib.ones(2), 1.0, alpha=1.0), "multiple values")
    _assert_same_error(lambda f: f.MatMul.apply(b=f.lib.ones(2, 2)), "missing required argument")


# -- bad paths: torch's messages --------------------------------------------------------------------

def _custom(lib: Any, backward: Callable[..., Any]) -> Any:
    class Custom(lib.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            return inputs[0] * 2

    Custom.backward = staticmethod(backward)
    return Custom


def _backward_through(backward: Callable[..., Any], *extra: Any) -> Callable[[SimpleNamespace], None]:
    def run(f: SimpleNamespace) -> None:
        x = f.lib.ones(2, 3, requires_grad=True)
        inputs = [x, *(e(f.lib) if callable(e) else e for e in extra)]
        _custom(f.lib, backward).apply(*inputs).sum().backward()

    return run


@pytest.mark.parametrize(("backward", "extra"), [
    (lambda ctx, g: g, (lambda lib: lib.ones(2, 3, requires_grad=True),)),  # one grad for two inputs
    (lambda ctx, g: (g, g), ()),  # two grads, one input
    (lambda ctx, g: [g, g], (lambda lib: lib.ones(2, 3, requires_grad=True),)),  # a list is one value
], ids=["too-few", "too-many", "list"])
def test_wrong_number_of_gradients_raises_torchs_message(backward: Any, extra: tuple[Any, ...]) -> None:
    _assert_same_error(_backward_through(backward, *extra), "returned an incorrect number of gradients")


def test_extra_trailing_none_gradients_are_allowed() -> None:
    for name in LIBS:
        _backward_through(lambda ctx, g: (g, None, None))(functions(name))


@pytest.mark.parametrize("shape", [(5,), (), (3, 2)])
def test_a_gradient_of_the_wrong_shape_raises_torchs_message(shape: tuple[int, ...]) -> None:
    run = _backward_through(lambda ctx, g: g.new_ones(shape))
    _assert_same_error(run, "returned an invalid gradient at index 0")


def test_a_gradient_that_broadcasts_to_the_input_is_summed_to_its_shape() -> None:
    def run(f: SimpleNamespace, x: list[Any]) -> Any:
        out = _custom(f.lib, lambda ctx, g: g.new_ones(4, 2, 3) * 0.5).apply(x[0])
        out.sum().backward()
        return out

    _assert_same(_on_both(run, _arrays((2, 3))))


def test_a_gradient_of_another_dtype_is_cast_to_the_inputs() -> None:
    def run(f: SimpleNamespace, x: list[Any]) -> Any:
        h = x[0] * 1.0
        seen = []
        h.register_hook(lambda g: seen.append(str(g.dtype).split(".")[1]))
        out = _custom(f.lib, lambda ctx, g: g.float() * 0.5).apply(h)
        out.sum().backward()
        return out, seen

    results = _on_both(run, _arrays((2, 3)))
    _assert_same(results)
    assert results["mininn"][0][1] == ["float64"]


def test_a_gradient_for_a_non_tensor_input_raises_torchs_message() -> None:
    _assert_same_error(_backward_through(lambda ctx, g: (g, g), 3.0), "was not a Variable")


@pytest.mark.parametrize("value", [3, np.ones((2, 3))], ids=["int", "ndarray"])
def test_a_gradient_that_is_not_a_tensor_raises_torchs_message(value: Any) -> None:
    _assert_same_error(_backward_through(lambda ctx, g: value), "expected Variable or None")


def test_a_gradient_for_an_input_that_needs_none_is_dropped_unchecked() -> None:
    for name in LIBS:
        f = functions(name)
        _backward_through(lambda ctx, g: (g, g.new_ones(7)), lambda lib: lib.ones(2, 3))(f)


def test_saving_a_non_tensor_raises_only_when_the_call_is_recorded() -> None:
    def save_int(f: SimpleNamespace, requires_grad: bool) -> Any:
        class SaveInt(f.lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

        return SaveInt.apply(f.lib.ones(2, requires_grad=requires_grad))

    _assert_same_error(lambda f: save_int(f, True), "save_for_backward can only save variables")
    assert save_int(functions("mininn"), False).tolist() == [2.0, 2.0]


def test_dirty_input_not_returned_raises_torchs_message() -> None:
    def run(f: SimpleNamespace) -> None:
        class Forgets(f.lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x * 1

        Forgets.apply(f.lib.ones(2))

    _assert_same_error(run, "marked as dirty")


def test_a_function_without_backward_or_forward_raises_torchs_message() -> None:
    def no_backward(f: SimpleNamespace) -> None:
        class NoBackward(f.lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

        NoBackward.apply(f.lib.ones(2, requires_grad=True)).sum().backward()

    def no_forward(f: SimpleNamespace) -> None:
        class NoForward(f.lib.autograd.Function):
            pass

        NoForward.apply(f.lib.ones(2))

    _assert_same_error(no_backward, "You must implement either the backward or vjp")
    _assert_same_error(no_forward, "You must implement the forward function")


def test_instantiating_warns_and_calling_an_instance_raises_as_torch() -> None:
    messages = {}
    for name in LIBS:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            functions(name).Swish()
        messages[name] = [(w.category, str(w.message).split("> ", 1)[1]) for w in caught]
    assert messages["mininn"] == messages["torch"] and messages["mininn"][0][0] is DeprecationWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _assert_same_error(lambda f: f.Swish()(f.lib.ones(2)), "Legacy autograd function")


# -- served code: torch's import paths, and a model file trained in both --------------------------

def test_served_code_imports_function_ctx_and_once_differentiable_from_torch_paths(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(
        "import torch\n"
        "from torch.autograd import Function\n"
        "from torch.autograd.function import FunctionCtx, once_differentiable\n"
        "NAMES = (torch.autograd.Function, Function, FunctionCtx, once_differentiable,\n"
        "         torch.autograd.function.Function)\n"
    )
    names = load_code(tmp_path, "model.py").NAMES
    assert names == (mininn.autograd.Function, mininn.autograd.Function, mininn.autograd.FunctionCtx,
                     mininn.autograd.once_differentiable, mininn.autograd.Function)


def test_user_model_with_custom_functions_trains_as_in_torch() -> None:
    spec = importlib.util.spec_from_file_location("custom_function_user_model", USER_MODEL / "model.py")
    assert spec is not None and spec.loader is not None
    reference_code = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference_code)
    torch.manual_seed(0)
    reference = reference_code.SwishQuantMLP().double()
    ours = load_code(USER_MODEL, "model.py").SwishQuantMLP().double()
    ours.load_state_dict({k: mininn.tensor(v.detach().numpy()) for k, v in reference.state_dict().items()})
    x = _arrays((6, 6), seed=3)[0]
    for model, lib in ((reference, torch), (ours, mininn)):
        loss = sum((out ** 2).mean() for out in model(lib.tensor(x)))
        loss.backward()
    grads = dict(reference.named_parameters())
    for key, parameter in ours.named_parameters():
        assert parameter.grad is not None, key
        np.testing.assert_allclose(parameter.grad.numpy(), grads[key].grad.numpy(), rtol=1e-10, atol=1e-14,
                                   err_msg=key)
    assert np.abs(ours.body[0].weight.grad.numpy()).max() > 0  # the gradient crossed every Function
