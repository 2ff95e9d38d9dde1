# ruff: noqa: A001, A002, N803 - names kept as in the PyTorch tests this file ports
"""A port of PyTorch's ``test/nn/test_module_hooks.py`` to mininn.

The test names, scenarios and assertions follow PyTorch's suite (TestModuleHooks,
TestStateDictHooks, TestModuleGlobalHooks, TestModuleHookNN), rewritten as pytest
functions against ``mininn``. Library layers are replaced by tiny modules defined here
(``Sigmoid``, ``Linear``, ``Norm``, ``AbsLoss``) so the port does not depend on
mininn's layer files; ``torch.save``/``torch.load`` of a whole module becomes pickle.

Left out, and why:
- ``test_hook_inplace``: needs autograd view/version tracking ("Output 0 of
  BackwardHookFunctionBackward is a view and is being modified inplace"), which
  mininn's autograd does not have.
- Dynamo/``torch.compile`` and CUDA memory-leak variants: no compiler, CPU only.
Adapted:
- ``test_hook_buffer_registration`` sets an attribute on each buffer; mininn's plain
  ``Tensor`` has ``__slots__``, so the port registers ``nn.Buffer`` objects.
- ``TestModuleGlobalHooks.tearDown`` rebinds torch's global dicts; the port clears
  mininn's dicts (and the global full/non-full flag) in a fixture instead.
"""

from __future__ import annotations

import copy
import gc
import math
import pickle
import warnings
import weakref
from functools import partial

import numpy as np
import pytest

import mininn
from mininn import nn
from mininn.nn.modules import _hooks

# torch warns the same way for the deprecated non-full hooks these tests exercise
pytestmark = [
    pytest.mark.filterwarnings("ignore:Using a non-full backward hook:FutureWarning"),
    pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning"),
]


def _np(t):
    return np.asarray(t.detach()._data if hasattr(t, "_data") else t)


def assert_close(a, b, atol=1e-5):
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=atol)


@pytest.fixture(autouse=True)
def _reset_global_hooks():
    yield
    for d in (
        _hooks._global_forward_pre_hooks,
        _hooks._global_forward_hooks,
        _hooks._global_forward_hooks_always_called,
        _hooks._global_forward_hooks_with_kwargs,
        _hooks._global_backward_hooks,
        _hooks._global_backward_pre_hooks,
    ):
        d.clear()
    _hooks._global_flags.is_full_backward_hook = None


# ---- small stand-ins for torch's library layers ----------------------------------------------


class Sigmoid(nn.Module):
    def forward(self, x):
        return x.sigmoid()


class Linear(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        bound = 1 / math.sqrt(i)
        self.weight = nn.Parameter(mininn.rand(o, i) * 2 * bound - bound)
        self.bias = nn.Parameter(mininn.rand(o) * 2 * bound - bound)

    def forward(self, x):
        return x @ self.weight.T + self.bias


class Norm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(mininn.ones(n))
        self.bias = nn.Parameter(mininn.zeros(n))
        self.register_buffer("running_mean", mininn.zeros(n))

    def forward(self, x):
        mean = x.mean(0)
        return (x - mean) * self.weight + self.bias


class AbsLoss(nn.Module):
    def forward(self, a, b):
        d = a - b
        return (d * d).mean()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq1 = nn.Sequential(*[Linear(10, 10) for _ in range(2)])
        self.seq2 = nn.Sequential(*[Linear(10, 10) for _ in range(2)])

    def forward(self, x):
        return self.seq2(self.seq1(x))


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = Net()
        self.net2 = Net()

    def forward(self, x):
        return self.net2(self.net1(x))


class KwargModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = Net()
        self.net2 = Net()

    def forward(self, x, bias=None):
        if bias is not None:
            x = x + bias
        return x

    def internal_forward_hook(self, module, args, kwargs, out):
        return out + kwargs["bias"]


class FailsInForwardModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = Linear(10, 10)

    def forward(self, x, fail=True):
        if fail:
            raise RuntimeError("failing in forward")
        return self.layer(x)


class DummyContextManager:
    def __init__(self, stack):
        self.stack = stack

    def __enter__(self):
        self.stack.append(2)

    def __exit__(self, *args):
        self.stack.append(-1)


def forward_hook(fired, expected_module, hook_id, module, inp, out):
    fired.append(hook_id)
    assert module is expected_module
    assert len(inp) == 1


def forward_pre_hook(fired, expected_module, hook_id, module, inp):
    fired.append(hook_id)
    assert module is expected_module
    assert len(inp) == 1


def full_backward_hook(fired, expected_module, hook_id, module, grad_input, grad_output):
    fired.append(hook_id)
    assert module is expected_module
    assert len(grad_input) == 1 and len(grad_output) == 1


def full_backward_pre_hook(fired, expected_module, hook_id, module, grad_output):
    fired.append(hook_id)
    assert module is expected_module
    assert len(grad_output) == 1


def kwarg_forward_pre_hook(fired, expected_module, hook_id, module, args, kwargs):
    fired.append(hook_id)
    assert module is expected_module
    assert len(args) == 1
    kwargs["bias"] = 2 * kwargs["bias"]
    return args, kwargs


def kwarg_forward_hook(fired, expected_module, hook_id, module, args, kwargs, out):
    fired.append(hook_id)
    assert module is expected_module
    assert len(args) == 1
    return out + kwargs["bias"]


def _hook_to_pickle(*args, **kwargs):
    pass


def _create_basic_net():
    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer_dummy_param = nn.Parameter(mininn.empty(3, 5))
            self.layer_dummy_buf = nn.Buffer(mininn.zeros(1, 3, 3, 7))

    class BasicNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = Layer()
            self.dummy_param = nn.Parameter(mininn.empty(3, 5))
            self.dummy_buf = nn.Buffer(mininn.zeros(7, 3, 3, 1))

    layer = Layer()
    net = BasicNet()
    return layer, net, nn.Sequential(net, layer)


# ---- TestModuleHooks --------------------------------------------------------------------------


def test_forward_hooks():
    fired = []
    model = ToyModel()
    x = mininn.randn(10, 10)
    hook = partial(forward_hook, fired, model.net1.seq2)
    model.net1.seq2.register_forward_hook(partial(hook, 0))
    model.net1.seq2.register_forward_hook(partial(hook, 1), prepend=True)
    model.net1.seq2.register_forward_hook(partial(hook, 2))
    model.net1.seq2.register_forward_hook(partial(hook, 3))
    model.net1.seq2.register_forward_hook(partial(hook, 4), prepend=True)
    expected = [4, 1, 0, 2, 3]
    assert fired == []
    out = model(x)
    assert fired == expected
    out.sum().backward()
    assert fired == expected
    model(x).sum().backward()
    assert fired == expected + expected


def test_forward_pre_hooks():
    fired = []
    model = ToyModel()
    x = mininn.randn(10, 10)
    hook = partial(forward_pre_hook, fired, model.net2.seq1)
    model.net2.seq1.register_forward_pre_hook(partial(hook, 0), prepend=True)
    model.net2.seq1.register_forward_pre_hook(partial(hook, 1))
    model.net2.seq1.register_forward_pre_hook(partial(hook, 2))
    model.net2.seq1.register_forward_pre_hook(partial(hook, 3))
    model.net2.seq1.register_forward_pre_hook(partial(hook, 4), prepend=True)
    expected = [4, 0, 1, 2, 3]
    assert fired == []
    out = model(x)
    assert fired == expected
    out.sum().backward()
    assert fired == expected
    model(x).sum().backward()
    assert fired == expected + expected


def test_full_backward_hooks():
    fired = []
    model = ToyModel()
    x = mininn.randn(10, 10)
    hook = partial(full_backward_hook, fired, model.net1)
    model.net1.register_full_backward_hook(partial(hook, 0))
    model.net1.register_full_backward_hook(partial(hook, 1))
    model.net1.register_full_backward_hook(partial(hook, 2))
    model.net1.register_full_backward_hook(partial(hook, 3), prepend=True)
    model.net1.register_full_backward_hook(partial(hook, 4), prepend=True)
    expected = [4, 3, 0, 1, 2]
    out = model(x)
    assert fired == []
    out.sum().backward()
    assert fired == expected
    model(x).sum().backward()
    assert fired == expected + expected


def test_full_backward_pre_hooks():
    fired = []
    model = ToyModel()
    x = mininn.randn(10, 10)
    hook = partial(full_backward_pre_hook, fired, model.net1)
    model.net1.register_full_backward_pre_hook(partial(hook, 0), prepend=True)
    model.net1.register_full_backward_pre_hook(partial(hook, 1), prepend=True)
    model.net1.register_full_backward_pre_hook(partial(hook, 2))
    model.net1.register_full_backward_pre_hook(partial(hook, 3))
    model.net1.register_full_backward_pre_hook(partial(hook, 4))
    expected = [1, 0, 2, 3, 4]
    out = model(x)
    assert fired == []
    out.sum().backward()
    assert fired == expected
    model(x).sum().backward()
    assert fired == expected + expected

    # a backward pre-hook changes what flows further back
    a = mininn.ones(2, requires_grad=True)
    lin = Linear(2, 2)
    lin.register_full_backward_pre_hook(lambda _m, grad_output: (grad_output[0] * 0,))
    lin(a).sum().backward()
    assert_close(a.grad, np.zeros(2))


def test_mixed_hooks():
    fired = []
    model = ToyModel()
    x = mininn.randn(10, 10)
    model.register_forward_pre_hook(partial(forward_pre_hook, fired, model, 0))
    model.register_forward_hook(partial(forward_hook, fired, model, 1))
    model.register_full_backward_pre_hook(partial(full_backward_pre_hook, fired, model, 2))
    model.register_full_backward_hook(partial(full_backward_hook, fired, model, 3))
    out = model(x)
    assert fired == [0, 1]
    out.sum().backward()
    assert fired == [0, 1, 2, 3]
    model(x).sum().backward()
    assert fired == [0, 1, 2, 3, 0, 1, 2, 3]


def test_kwarg_hooks():
    fired = []
    x, bias = mininn.ones(10, 10), mininn.ones(10, 10)
    model = KwargModel()
    model.register_forward_pre_hook(partial(kwarg_forward_pre_hook, fired, model, 0), with_kwargs=True)
    out = model(x, bias=bias)
    assert fired == [0]
    assert_close(out, _np(x) + 2 * _np(bias))

    fired = []
    model = KwargModel()
    model.register_forward_hook(partial(kwarg_forward_hook, fired, model, 1), with_kwargs=True)
    model.register_forward_pre_hook(partial(kwarg_forward_pre_hook, fired, model, 0), with_kwargs=True)
    out = model(x, bias=bias)
    assert fired == [0, 1]
    assert_close(out, _np(x) + 4 * _np(bias))

    model = KwargModel()
    model.register_forward_hook(model.internal_forward_hook, with_kwargs=True)
    assert_close(model(x, bias=bias), _np(x) + 2 * _np(bias))


def test_remove_kwarg_hooks():
    fired = []
    x, bias = mininn.ones(10, 10), mininn.ones(10, 10)
    model = KwargModel()
    fwd = model.register_forward_hook(partial(kwarg_forward_hook, fired, model, 1), with_kwargs=True)
    pre = model.register_forward_pre_hook(partial(kwarg_forward_pre_hook, fired, model, 0), with_kwargs=True)
    out = model(x, bias=bias)
    assert fired == [0, 1]
    assert_close(out, _np(x) + 4 * _np(bias))

    fwd.remove()
    out = model(x, bias=bias)
    assert fired == [0, 1, 0]
    assert_close(out, _np(x) + 2 * _np(bias))
    assert fwd.id not in model._forward_hooks_with_kwargs

    pre.remove()
    out = model(x, bias=bias)
    assert fired == [0, 1, 0]
    assert_close(out, _np(x) + _np(bias))
    assert pre.id not in model._forward_pre_hooks_with_kwargs


def test_always_called_forward_hooks():
    x = mininn.ones(10, 10)
    model = FailsInForwardModel()
    stack = []
    ctx = None

    def setup_context():
        nonlocal ctx
        ctx = DummyContextManager(stack)

    def ctx_setup_hook(m, i):
        setup_context()
        ctx.__enter__()

    def ctx_setup_failure_hook(m, i):
        setup_context()
        ctx.__enter__()
        raise RuntimeError("failing in ctx setup")

    def ctx_shutdown_hook(m, i, o):
        ctx.__exit__()

    def ctx_shutdown_failure_hook(m, i, o):
        ctx.__exit__()
        raise RuntimeError("failing in ctx shutdown")

    def throw_hook(m, i, o):
        raise RuntimeError("failing in throw")

    pre = model.register_forward_pre_hook(ctx_setup_hook)
    fwd = model.register_forward_hook(ctx_shutdown_hook, always_call=True)
    assert len(model._forward_hooks_always_called) == 1

    with pytest.raises(RuntimeError, match="failing in forward"):
        model(x)
    assert stack == [2, -1]

    model(x, fail=False)  # no error: the always-called hook runs once
    assert stack == [2, -1, 2, -1]

    pre.remove()
    model.register_forward_pre_hook(ctx_setup_failure_hook)
    with pytest.raises(RuntimeError, match="failing in ctx setup"):
        model(x, fail=False)
    assert stack == [2, -1] * 3

    fwd2 = model.register_forward_hook(throw_hook, prepend=True, always_call=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="failing in ctx setup"):
            model(x, fail=False)
    assert stack == [2, -1] * 4

    fwd.remove()
    fwd2.remove()
    assert len(model._forward_hooks_always_called) == 0

    fwd3 = model.register_forward_hook(ctx_shutdown_failure_hook, always_call=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="failing in ctx setup"):
            model(x, fail=False)
    assert stack == [2, -1] * 5
    fwd3.remove()

    glob = nn.modules.module.register_module_forward_hook(ctx_shutdown_hook, always_call=True)
    assert len(_hooks._global_forward_hooks_always_called) == 1
    with pytest.raises(RuntimeError, match="failing in ctx setup"):
        model(x, fail=False)
    assert stack == [2, -1] * 6

    glob.remove()
    assert len(_hooks._global_forward_hooks_always_called) == 0
    with pytest.raises(RuntimeError, match="failing in ctx setup"):
        model(x)
    assert stack == [2, -1] * 6 + [2]


def test_bw_hook_warning_for_non_tensor_or_tuple():
    counter = {"forward": 0, "backward": 0}

    def fw_pre_hook(module, _inputs):
        counter["forward"] += 1

    def fw_hook(module, _inputs, _outputs):
        counter["forward"] += 1

    def bw_hook(module, *_grads):
        counter["backward"] += 1

    class TestModule(nn.Module):
        def forward(self, d):
            inp = d["x"]
            e = inp.exp()
            return {"x": e / e.sum()}

    x = mininn.ones(2, requires_grad=True)
    model = TestModule()
    model.register_forward_pre_hook(fw_pre_hook)
    model.register_forward_hook(fw_hook)
    model.register_full_backward_pre_hook(bw_hook)
    model.register_full_backward_hook(bw_hook)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        model({"x": x})["x"].sum().backward()
    assert counter == {"forward": 2, "backward": 0}
    assert len(w) == 1
    assert "should be a Tensor or a tuple of Tensors" in str(w[0].message)


# ---- TestStateDictHooks -----------------------------------------------------------------------


def test_load_state_dict_pre_hook():
    m = Linear(10, 10)
    m_state_dict = m.state_dict()
    m_load = Linear(10, 10)
    hook_called = 0

    def hook_without_module(state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        nonlocal hook_called
        assert list(state_dict) == list(m_state_dict)
        hook_called += 1

    def hook_with_module(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        nonlocal hook_called
        assert list(state_dict) == list(m_state_dict)
        assert module is m_load
        hook_called += 1

    m_load._register_load_state_dict_pre_hook(hook_without_module)
    m_load.load_state_dict(m_state_dict)
    assert hook_called == 1

    hook_called = 0
    m_load._register_load_state_dict_pre_hook(hook_with_module, True)
    m_load.load_state_dict(m_state_dict)
    assert hook_called == 2


def test_no_extra_ref_to_module():
    try:
        gc.disable()
        m = Linear(10, 10)
        m._register_load_state_dict_pre_hook(_hook_to_pickle, True)
        weak_m = weakref.ref(m)
        del m
        assert weak_m() is None
    finally:
        gc.enable()


def test_pickled_hook():
    m = Linear(10, 10)
    m._register_load_state_dict_pre_hook(_hook_to_pickle, True)
    pickle.loads(pickle.dumps(m))


def test_load_state_dict_module_pre_hook():
    hook_called = 0

    class MyModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.foo = nn.Parameter(mininn.rand(10))

        def my_pre_load_hook(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            nonlocal hook_called
            assert [] == errors == unexpected == missing
            assert strict
            hook_called += 1

        def my_pre_load_hook_with_module(
            self, module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors
        ):
            nonlocal hook_called
            assert [] == errors == unexpected == missing
            assert strict
            assert self is module
            hook_called += 1

    class MyModuleContainer(nn.Module):
        def __init__(self, mod):
            super().__init__()
            self.mod = mod

    for ctor in [MyModuleContainer, lambda x: x]:
        m = ctor(MyModule())
        state_dict = m.state_dict()
        mod = m.mod if isinstance(m, MyModuleContainer) else m
        hook_called = 0
        mod._register_load_state_dict_pre_hook(mod.my_pre_load_hook)
        m.load_state_dict(state_dict)
        assert hook_called == 1
        hook_called = 0
        mod._register_load_state_dict_pre_hook(mod.my_pre_load_hook_with_module, True)
        m.load_state_dict(state_dict)
        assert hook_called == 2


def test_load_state_dict_post_hook():
    hook_called = 0

    class MyModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.foo = nn.Parameter(mininn.rand(10))

        def my_post_load_hook(self, module, incompatible_keys):
            nonlocal hook_called
            assert module is self
            incompatible_keys.missing_keys.append("foo")
            incompatible_keys.unexpected_keys.append("bar")
            hook_called += 1

    nested = MyModule()
    wrapped = nn.ModuleList([nested])
    handle = nested.register_load_state_dict_post_hook(nested.my_post_load_hook)
    ret = wrapped.load_state_dict(wrapped.state_dict(), strict=False)
    assert hook_called == 1
    assert ret.missing_keys == ["foo"] and ret.unexpected_keys == ["bar"]
    with pytest.raises(RuntimeError, match="foo.*\n.*bar"):
        wrapped.load_state_dict(wrapped.state_dict(), strict=True)
    assert hook_called == 2
    handle.remove()
    ret = wrapped.load_state_dict(wrapped.state_dict(), strict=False)
    assert ret.missing_keys == [] and ret.unexpected_keys == []
    assert hook_called == 2

    def load_hook_clear_incompatible(module, incompatible_keys):
        incompatible_keys.missing_keys.clear()
        incompatible_keys.unexpected_keys.clear()

    nested.register_load_state_dict_post_hook(load_hook_clear_incompatible)
    state_dict = wrapped.state_dict()
    state_dict["extra"] = mininn.ones(1)
    ret = wrapped.load_state_dict(state_dict, strict=True)
    assert ret.missing_keys == [] and ret.unexpected_keys == []


def test_load_state_dict_post_hook_backward_compatibility():
    called = False

    def my_post_load_hook(mod, _):
        nonlocal called
        called = True

    for m in [Sigmoid(), Linear(2, 2), Norm(3)]:
        called = False
        sd = copy.deepcopy(m.state_dict())
        assert hasattr(m, "_load_state_dict_post_hooks")
        delattr(m, "_load_state_dict_post_hooks")  # an older pickle without it
        m = pickle.loads(pickle.dumps(m))
        m.load_state_dict(sd)
        assert not called
        m.register_load_state_dict_post_hook(my_post_load_hook)
        m.load_state_dict(sd)
        assert called


# ---- TestModuleGlobalHooks --------------------------------------------------------------------


def _expected_sigmoid_of_ones():
    return np.full((5, 5), 1 / (1 + 1 / math.e), np.float32)


def test_module_global_hooks():
    module_1, module_2, module_3 = Sigmoid(), Sigmoid(), Sigmoid()
    input = mininn.ones(5, 5, requires_grad=True)
    counter = {"forwards": 0, "backwards": 0}

    def fw_hook(inc, h_module, input, output):
        assert isinstance(input, tuple) and isinstance(output, mininn.Tensor)
        assert isinstance(h_module, Sigmoid)
        assert_close(input[0], np.ones((5, 5)))
        assert_close(output, _expected_sigmoid_of_ones())
        counter["forwards"] += inc

    def bw_hook(inc, h_module, grad_input, grad_output):
        assert isinstance(grad_input, tuple) and isinstance(grad_output, tuple)
        assert isinstance(h_module, Sigmoid)
        assert_close(grad_output[0], np.ones((5, 5)) * 2)
        counter["backwards"] += inc

    mm = nn.modules.module
    test_fwd = mm.register_module_forward_hook(lambda *args: fw_hook(1, *args))
    module_1(input)
    module_2(input)
    module_3(input)
    assert counter == {"forwards": 3, "backwards": 0}

    test_bwd = mm.register_module_backward_hook(lambda *args: bw_hook(1, *args))
    output_1, output_2, output_3 = module_1(input), module_2(input), module_3(input)
    assert counter == {"forwards": 6, "backwards": 0}
    output_1.backward(mininn.ones(5, 5) * 2, retain_graph=True)
    output_2.backward(mininn.ones(5, 5) * 2, retain_graph=False)
    output_3.backward(mininn.ones(5, 5) * 2, retain_graph=False)
    assert counter == {"forwards": 6, "backwards": 3}
    output_1.backward(mininn.ones(5, 5) * 2, retain_graph=True)
    assert counter == {"forwards": 6, "backwards": 4}

    test2_fwd = mm.register_module_forward_hook(lambda *args: fw_hook(2, *args))
    module_1(input)
    module_2(input)
    module_3(input)
    assert counter == {"forwards": 15, "backwards": 4}

    test2_bwd = mm.register_module_backward_hook(lambda *args: bw_hook(2, *args))
    module_1(input).backward(mininn.ones(5, 5) * 2)
    assert counter == {"forwards": 18, "backwards": 7}

    test2_bwd.remove()
    module_2(input).backward(mininn.ones(5, 5) * 2)
    assert counter == {"forwards": 21, "backwards": 8}

    test2_fwd.remove()
    module_3(input).backward(mininn.ones(5, 5) * 2)
    assert counter == {"forwards": 22, "backwards": 9}
    test_fwd.remove()
    test_bwd.remove()


def test_module_global_hook_invalid_outputs():
    module = Sigmoid()
    input = mininn.randn(5, 5, requires_grad=True)

    def bw_fail1(self, grad_input, grad_output):
        return grad_input[:-1]

    def bw_fail2(self, grad_input, grad_output):
        return grad_input + (mininn.randn(2, 2),)

    with nn.modules.module.register_module_backward_hook(bw_fail1):
        with pytest.raises(RuntimeError, match="got 0, but expected 1"):
            module(input).sum().backward()
    with nn.modules.module.register_module_backward_hook(bw_fail2):
        with pytest.raises(RuntimeError, match="got 2, but expected 1"):
            module(input).sum().backward()


def test_module_backward_global_hook_writeable():
    module = Sigmoid()
    input = mininn.randn(5, 5, requires_grad=True)
    sig_x = _np(input.sigmoid())

    def bw_hook(module, grad_input, grad_output):
        assert all(isinstance(g, mininn.Tensor) for g in grad_input + grad_output)
        return tuple(gi * 2 for gi in grad_input)

    nn.modules.module.register_module_backward_hook(bw_hook)
    module(input).backward(mininn.ones(5, 5))
    assert_close(input.grad, sig_x * (1 - sig_x) * 2)


def test_module_global_forward_preforward_hook_writeable():
    module = Sigmoid()
    input = mininn.randn(5, 5, requires_grad=True)
    sig_x = _np(input.sigmoid())
    nn.modules.module.register_module_forward_pre_hook(lambda m, inp: inp[0].relu())
    nn.modules.module.register_module_forward_hook(lambda m, inp, out: -out)
    output = module(input)
    assert_close(output, -_np(input.relu().sigmoid()))
    output.backward(mininn.ones(5, 5) * 2, retain_graph=True)
    mask = _np(input) > 0
    assert_close(input.grad, -sig_x * (1 - sig_x) * 2 * mask)


@pytest.mark.parametrize("kind", ["pre", "forward"])
def test_module_forward_hook_removable_during_call(kind):
    # test_module_forward_preforward_hook_removable / test_module_forward_forward_hook_removable
    module = Sigmoid()
    handle = handle_2 = None

    def removable(*args):
        handle.remove()
        return args[-1]

    def removable_2(*args):
        handle_2.remove()
        return args[-1]

    register = module.register_forward_pre_hook if kind == "pre" else module.register_forward_hook
    handle = register(removable)
    handle_2 = register(removable_2)
    assert len(handle.hooks_dict_ref()) == 2 and len(handle_2.hooks_dict_ref()) == 2
    input = mininn.randn(2, 2)
    assert_close(module(input), input.sigmoid())
    assert handle.id not in handle.hooks_dict_ref() and handle_2.id not in handle.hooks_dict_ref()
    assert len(handle.hooks_dict_ref()) == 0 and len(handle_2.hooks_dict_ref()) == 0


def test_global_and_local_hooks_order():
    module = Sigmoid()
    called = dict.fromkeys(["g_pre", "l_pre", "g_fwd", "l_fwd", "g_bwd", "l_bwd"], False)

    def make(name, before, passthrough):
        def hook(*args):
            assert not called[before] if name.startswith("g") else called[before]
            called[name] = True
            return args[passthrough]

        return hook

    mm = nn.modules.module
    mm.register_module_forward_pre_hook(make("g_pre", "l_pre", 1))
    module.register_forward_pre_hook(make("l_pre", "g_pre", 1))
    mm.register_module_forward_hook(make("g_fwd", "l_fwd", 2))
    module.register_forward_hook(make("l_fwd", "g_fwd", 2))
    mm.register_module_backward_hook(make("g_bwd", "l_bwd", 1))
    module.register_backward_hook(make("l_bwd", "g_bwd", 1))
    output = module(mininn.randn(5, 5, requires_grad=True))
    assert called["l_fwd"] and called["l_pre"] and called["g_fwd"] and called["g_pre"]
    output.backward(mininn.ones(5, 5), retain_graph=True)
    assert called["l_bwd"] and called["g_bwd"]


# ---- TestModuleHookNN ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "backward_register_fn",
    ["register_backward_hook", "register_full_backward_hook", "register_full_backward_pre_hook"],
)
def test_hooks(backward_register_fn):
    module = Sigmoid()
    input = mininn.ones(5, 5, requires_grad=True)
    counter = {"forwards": 0, "backwards": 0}

    def fw_hook(inc, h_module, input, output):
        assert isinstance(input, tuple) and isinstance(output, mininn.Tensor)
        assert h_module is module
        assert_close(input[0], np.ones((5, 5)))
        assert_close(output, _expected_sigmoid_of_ones())
        counter["forwards"] += inc

    def bw_hook(inc, h_module, grad_input, grad_output):
        assert isinstance(grad_input, tuple) and isinstance(grad_output, tuple)
        assert h_module is module
        assert_close(grad_output[0], np.ones((5, 5)) * 2)
        counter["backwards"] += inc

    def bw_pre_hook(inc, h_module, grad_output):
        assert isinstance(grad_output, tuple) and h_module is module
        assert_close(grad_output[0], np.ones((5, 5)) * 2)
        counter["backwards"] += inc

    test_fwd = module.register_forward_hook(lambda *args: fw_hook(1, *args))
    module(input)
    module(input)
    assert counter == {"forwards": 2, "backwards": 0}

    bw_fn = bw_pre_hook if backward_register_fn == "register_full_backward_pre_hook" else bw_hook
    test_bwd = getattr(module, backward_register_fn)(lambda *args: bw_fn(1, *args))
    output = module(input)
    assert counter == {"forwards": 3, "backwards": 0}
    output.backward(mininn.ones(5, 5) * 2, retain_graph=True)
    assert counter == {"forwards": 3, "backwards": 1}
    output.backward(mininn.ones(5, 5) * 2, retain_graph=True)
    assert counter == {"forwards": 3, "backwards": 2}

    test2_fwd = module.register_forward_hook(lambda *args: fw_hook(2, *args))
    module(input)
    assert counter == {"forwards": 6, "backwards": 2}

    test2_bwd = getattr(module, backward_register_fn)(lambda *args: bw_fn(2, *args))
    module(input).backward(mininn.ones(5, 5) * 2)
    assert counter == {"forwards": 9, "backwards": 5}
    test2_bwd.remove()
    module(input).backward(mininn.ones(5, 5) * 2)
    assert counter == {"forwards": 12, "backwards": 6}
    test2_fwd.remove()
    module(input).backward(mininn.ones(5, 5) * 2)
    assert counter == {"forwards": 13, "backwards": 7}
    test_fwd.remove()
    test_bwd.remove()


def test_hook_cpp():
    bn = Norm(5)

    def hook(module, grad_inputs, grad_outputs):
        assert len(grad_inputs) == 1 and len(grad_outputs) == 1
        assert module is bn

    bn.register_full_backward_hook(hook)
    bn(mininn.randn(5, 5, requires_grad=True)).sum().backward()


def test_backward_hooks_interaction():
    module = Sigmoid()
    cnt = {"backward_cnt": 0}

    def bw_pre_hook(m, grad_output):
        cnt["backward_cnt"] += 1
        return (grad_output[0] * 0.5,)

    def bw_hook(m, grad_in, grad_output):
        assert_close(grad_output[0], np.full(grad_output[0].shape, 0.5))
        cnt["backward_cnt"] += 1
        return grad_output

    module.register_full_backward_pre_hook(bw_pre_hook)
    module.register_full_backward_hook(bw_hook)
    module(mininn.ones(1, 2, requires_grad=True)).sum().backward()
    assert cnt["backward_cnt"] == 2


def test_hook_invalid_outputs():
    module = Sigmoid()
    input = mininn.randn(5, 5, requires_grad=True)

    def bw_fail1(self, grad_input, grad_output):
        return grad_input[:-1]

    def bw_fail2(self, grad_input, grad_output):
        return grad_input + (mininn.randn(2, 2),)

    with module.register_backward_hook(bw_fail1):
        with pytest.raises(RuntimeError, match="got 0, but expected 1"):
            module(input).sum().backward()
    with module.register_backward_hook(bw_fail2):
        with pytest.raises(RuntimeError, match="got 2, but expected 1"):
            module(input).sum().backward()

    module = Sigmoid()  # a fresh module: full and non-full hooks cannot be mixed on one

    def bw_pre_fail1(self, grad_output):
        return ()

    def bw_pre_fail2(self, grad_output):
        return grad_output + (mininn.randn(2, 2),)

    with module.register_full_backward_pre_hook(bw_pre_fail1):
        with pytest.raises(RuntimeError, match="got 0, but expected 1"):
            module(input).sum().backward()
    with module.register_full_backward_pre_hook(bw_pre_fail2):
        with pytest.raises(RuntimeError, match="got 2, but expected 1"):
            module(input).sum().backward()


def test_hook_requires_grad():
    class MyModule(nn.Module):
        def forward(self, arg1, arg2, arg3):
            assert arg1.requires_grad
            assert not arg2.requires_grad
            assert arg3.requires_grad
            return arg1.sum() + arg2.sum() + arg3.sum()

    inp = mininn.rand(2, requires_grad=True)
    mod = MyModule()
    mod(inp, inp.detach(), inp)
    mod.register_full_backward_hook(lambda mod, gI, gO: None)
    mod(inp, inp.detach(), inp)


def test_hook_no_requires_grad():
    mod = Linear(2, 3)
    inp = mininn.rand(1, 2)
    return_val = "None"
    hook_called = [0]

    def hook(mod, grad_input, grad_output):
        hook_called[0] += 1
        for gI in grad_input:
            assert gI is None
        for gO in grad_output:
            assert tuple(gO.size()) == (1, 3)
        if return_val == "grad_input":
            return grad_input
        if return_val == "invalid":
            return inp
        return None

    mod.register_full_backward_hook(hook)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mod(inp).sum().backward()
        assert hook_called[0] == 1
        return_val = "grad_input"
        mod(inp).sum().backward()
        assert hook_called[0] == 2
        return_val = "invalid"
        with pytest.raises(RuntimeError, match="where no input requires gradient"):
            mod(inp).sum().backward()


def test_hook_last_arg_requires_grad():
    mod = AbsLoss()
    inp = mininn.rand(1, requires_grad=True)
    mod.register_full_backward_hook(lambda m, gI, gO: None)
    mod(inp.detach(), inp)


def test_hook_extra_input():
    class MyModule(nn.Module):
        def forward(self, non_tensor, tensor):
            return tensor.clone(), non_tensor

    inp = mininn.rand(2, requires_grad=True)
    mod = MyModule()
    seen = []

    def hook(mod, grad_input, grad_output):
        assert grad_input[0] is None
        assert isinstance(grad_input[1], mininn.Tensor)
        assert isinstance(grad_output[0], mininn.Tensor)
        assert grad_output[1] is None
        seen.append(True)

    mod.register_full_backward_hook(hook)
    out, _ = mod(True, inp)
    out.sum().backward()
    assert seen == [True]


def test_hook_non_full_warning():
    def noop(*args):
        pass

    a = mininn.rand(2, requires_grad=True)
    b = mininn.rand(2, requires_grad=True)

    class ListInput(nn.Module):
        def forward(self, pair):
            return pair[0].clone(), pair[1].clone()

    class ListOutput(nn.Module):
        def forward(self, a, b):
            return [a.clone(), b.clone()]

    class TwoNodes(nn.Module):
        def forward(self, a, b):
            return a.clone(), b.clone()

    class Chain(nn.Module):
        def forward(self, a):
            return a.clone().clone()

    cases = [
        (ListInput, ([a, b],), "does not take as input a single Tensor or a tuple of Tensors"),
        (ListOutput, (a, b), "does not return a single Tensor or a tuple of Tensors"),
        (TwoNodes, (a, b), "outputs are generated by different autograd Nodes"),
        (Chain, (a,), "the forward contains multiple autograd Nodes"),
    ]
    for cls, args, message in cases:
        m = cls()
        m.register_backward_hook(noop)
        with pytest.warns(FutureWarning, match=message):
            m(*args)


def test_hook_backward_size():
    class MyModule(nn.Module):
        def forward(self, arg1, arg2):
            tmp = arg1.sum() * arg2
            tmp = tmp + arg2.sum() * arg1.sum()
            tmp = tmp.sum().view(1)
            return tmp.expand(8).contiguous()

    module = MyModule()
    inp1 = mininn.randn(5, 5, requires_grad=True)
    inp2 = mininn.randn(10, 10, requires_grad=True)
    seen = []

    def bw_hook(module, grad_input, grad_output):
        assert len(grad_input) == 2
        assert grad_input[0].size() == (5, 5) and grad_input[1].size() == (10, 10)
        assert len(grad_output) == 1 and grad_output[0].size() == (8,)
        seen.append(True)

    with module.register_full_backward_hook(bw_hook):
        module(inp1, inp2).sum().backward()
    assert seen == [True]


def test_hook_backward_writeable():
    module = Sigmoid()
    input = mininn.randn(5, 5, requires_grad=True)
    sig_x = _np(input.sigmoid())

    def bw_hook(module, grad_input, grad_output):
        assert all(isinstance(g, mininn.Tensor) for g in grad_input + grad_output)
        return tuple(gi * 2 for gi in grad_input)

    module.register_backward_hook(bw_hook)
    module(input).backward(mininn.ones(5, 5))
    assert_close(input.grad, sig_x * (1 - sig_x) * 2)


def test_hook_forward_preforward_writable():
    module = Sigmoid()
    input = mininn.randn(5, 5, requires_grad=True)
    sig_x = _np(input.sigmoid())
    module.register_forward_pre_hook(lambda m, inp: inp[0].relu())
    module.register_forward_hook(lambda m, inp, out: -out)
    output = module(input)
    assert_close(output, -_np(input.relu().sigmoid()))
    output.backward(mininn.ones(5, 5) * 2, retain_graph=True)
    assert_close(input.grad, -sig_x * (1 - sig_x) * 2 * (_np(input) > 0))


@pytest.mark.parametrize("return_value", [True, False])
def test_hook_buffer_registration(return_value):
    def hook(module, name, buffer):
        buffer.registered = True
        if return_value:
            return buffer

    with nn.modules.module.register_module_buffer_registration_hook(hook):
        _layer, _net, s = _create_basic_net()
        assert all(getattr(b, "registered", False) for b in s.buffers())
        assert len(list(s.buffers())) == 3


@pytest.mark.parametrize("return_value", [True, False])
def test_hook_submodule_registration(return_value):
    def hook(module, name, submodule):
        module.registered = True
        submodule.registered = True
        if return_value:
            return submodule

    with nn.modules.module.register_module_module_registration_hook(hook):
        _layer, _net, s = _create_basic_net()
        assert all(getattr(m, "registered", False) for m in s.modules())


@pytest.mark.parametrize("return_value", [True, False])
def test_hook_parameter_registration(return_value):
    def hook(module, name, parameter):
        parameter.registered = True
        if return_value:
            return parameter

    with nn.modules.module.register_module_parameter_registration_hook(hook):
        _layer, _net, s = _create_basic_net()
        assert all(getattr(p, "registered", False) for p in s.parameters())
        assert len(list(s.parameters())) == 3
