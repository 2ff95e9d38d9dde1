"""Tensor attributes, printing, conversions, type promotion and in-place ops against torch."""

import copy
import itertools
import pickle

import numpy as np
import pytest
from _tensor_parity import as_numpy, run_both

import mininn

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64"]


def _make(lib, name, shape=(2,)):
    dt = getattr(lib, name)
    return (lib.arange(int(np.prod(shape))).reshape(shape) % 3 + 1).to(dt)


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


@pytest.mark.parametrize(("left", "right"), list(itertools.combinations_with_replacement(DTYPES, 2)))
def test_tensor_tensor_promotion_matches_torch(left, right):
    for op in ("add", "mul", "truediv", "maximum"):
        for shapes in (((2,), (2,)), ((2,), ()), ((), (2,))):
            results = []
            for lib in (torch, mininn):
                a, b = _make(lib, left, shapes[0]), _make(lib, right, shapes[1])
                if op == "truediv":
                    results.append(_dtype_name(a / b))
                elif op == "maximum":
                    results.append(_dtype_name(lib.maximum(a, b)))
                elif op == "add" and left == right == "bool":
                    results.append(_dtype_name(a + b))
                else:
                    results.append(_dtype_name(getattr(a, op)(b)))
            assert results[0] == results[1], (op, left, right, shapes)


@pytest.mark.parametrize("name", DTYPES)
def test_tensor_scalar_promotion_matches_torch(name):
    for scalar in (2, 2.5, True):
        for fn in (lambda t, s: t + s, lambda t, s: s * t, lambda t, s: t / s, lambda t, s: t * s + 1):
            want = _dtype_name(fn(_make(torch, name), scalar))
            got = _dtype_name(fn(_make(mininn, name), scalar))
            assert got == want, (name, scalar)


def test_promotion_values_follow_torch():
    run_both(lambda lib, a, b: a + b, np.array([1, 2], np.int64), np.array([0.5, 1.5], np.float32))
    run_both(lambda lib, a, b: a / b, np.array([1, 3], np.int64), np.array([2, 2], np.int64))
    run_both(lambda lib, a, b: a // b, np.array([-7, 7], np.int64), np.array([2, -2], np.int64))
    run_both(lambda lib, a, b: a % b, np.array([-7.5, 7.0]), np.array([2.0, -2.0]))
    run_both(lambda lib, a, b: a * 2.5 + 1, np.array([1, 2], np.int32), np.array([1]))
    run_both(lambda lib, a, b: a.float() + b.double(), np.array([1.5], np.float32), np.array([2.0]))
    run_both(lambda lib, a, b: a ** 2, np.array([3, 4], np.int64), np.array([1]))
    run_both(lambda lib, a, b: 2.0 ** a, np.array([3, 4], np.int64), np.array([1]))


def test_int_tensor_true_division_by_python_int_gives_default_float():
    for lib in (torch, mininn):
        assert _dtype_name(lib.tensor([1, 2]) / 2) == "float32"
    mininn.set_default_dtype(mininn.float64)
    try:
        assert mininn.tensor([1, 2]) / 2 is not None
        assert (mininn.tensor([1, 2]) / 2).dtype is mininn.float64
        assert (mininn.tensor([1, 2]) * 0.5).dtype is mininn.float64
    finally:
        mininn.set_default_dtype(mininn.float32)


def test_comparisons_return_bool_tensors_like_torch():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        run_both(lambda lib, x, y, op=op: getattr(x, op)(y), a, b)
    run_both(lambda lib, x, y: [x == y, x != 2, x < y, x <= 1, x > y, x >= 2, 2 < x], a, b)
    run_both(lambda lib, x, y: [~(x > 1), (x > 1) & (y > 1), (x > 1) | (y < 2), (x > 1) ^ (y > 1)], a, b)
    run_both(lambda lib, x, y: [x.isfinite(), lib.isnan((-x).log()), lib.isinf(x / 0)], a, b)
    run_both(lambda lib, x, y: [lib.logical_not(x > 1), lib.logical_and(x > 1, y > 1)], a, b)


def test_all_any_allclose_equal_match_torch():
    for lib in (torch, mininn):
        a = lib.tensor([1.0, 2.0])
        assert lib.allclose(a, a + 1e-9) and not lib.allclose(a, a + 1)
        assert lib.equal(a, a.clone()) and not lib.equal(a, a[:1])
        assert bool((a > 0).all()) and not bool((a > 1).all()) and bool((a > 1).any())


TORCH_TOP_LEVEL = [
    "Tensor", "Size", "tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "rand", "randn",
    "randint", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
    "manual_seed", "get_default_dtype", "set_default_dtype", "device", "no_grad", "enable_grad",
    "set_grad_enabled", "inference_mode", "is_grad_enabled", "cat", "stack", "split", "chunk", "where",
    "matmul", "einsum", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "clamp", "maximum",
    "minimum", "sum", "mean", "max", "min", "argmax", "softmax", "log_softmax", "logsumexp", "allclose",
    "equal", "is_tensor", "numel", "flatten", "reshape", "permute", "transpose", "squeeze", "unsqueeze",
    "bmm", "mm", "outer", "isfinite", "save", "load", "float16", "float32", "float64", "int32", "int64",
    "bool", "uint8", "int8", "bfloat16",
]


def test_public_api_has_torch_top_level_names():
    missing = [n for n in TORCH_TOP_LEVEL if not hasattr(mininn, n)]
    assert missing == []
    assert set(TORCH_TOP_LEVEL) <= set(mininn.__all__)
    assert all(hasattr(torch, n) for n in TORCH_TOP_LEVEL)


def test_max_named_tuple_prints_like_torch():
    want = repr(torch.tensor([[1.0, 3.0]]).max(1)).replace("torch.", "mininn.")
    assert repr(mininn.tensor([[1.0, 3.0]]).max(1)) == want


def test_attributes_match_torch():
    for lib in (torch, mininn):
        t = lib.zeros(2, 3, 4)
        assert t.shape == (2, 3, 4) and t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
        assert t.ndim == t.dim() == 3 and t.numel() == 24 and lib.numel(t) == 24
        assert isinstance(t.shape, tuple) and t.shape.numel() == 24
        assert t.is_leaf and not t.requires_grad and t.grad is None and t.grad_fn is None
        assert t.device == lib.device("cpu") and t.device.type == "cpu"
        assert t.element_size() == 4 and t.is_floating_point() and lib.is_tensor(t)
    assert repr(mininn.zeros(2, 3).shape) == "mininn.Size([2, 3])"


REPRS = [
    lambda lib: lib.tensor([1.0, 2.5]),
    lambda lib: lib.tensor([1.0, 2.0, -3.0]),
    lambda lib: lib.tensor(3.0),
    lambda lib: lib.tensor([[1, 2], [3, 4]]),
    lambda lib: lib.tensor([True, False]),
    lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64),
    lambda lib: lib.tensor([1, 2], dtype=lib.int32),
    lambda lib: lib.tensor([1.0, 2.0], requires_grad=True),
    lambda lib: lib.tensor([1.0, 2.0], requires_grad=True) * 2,
    lambda lib: lib.tensor([1.0, 2.0], requires_grad=True).sum(),
    lambda lib: lib.tensor([1e-6, 1.0]),
    lambda lib: lib.tensor([]),
    lambda lib: lib.tensor([], dtype=lib.int64),
    lambda lib: lib.zeros(0, 3),
    lambda lib: lib.tensor([[0.1234, -10.5], [3.0, 4.0]]),
    lambda lib: lib.tensor([float("nan"), float("inf"), 1.0]),
]


@pytest.mark.parametrize("case", range(len(REPRS)))
def test_repr_matches_torch_with_mininn_prefix(case):
    want = repr(REPRS[case](torch)).replace("torch.", "mininn.")
    assert repr(REPRS[case](mininn)) == want


def test_repr_summarises_large_tensors_like_torch():
    assert repr(mininn.arange(5000.0)) == repr(torch.arange(5000.0))
    assert repr(mininn.arange(3000).reshape(1000, 3)) == repr(torch.arange(3000).reshape(1000, 3))


def test_conversions_match_torch():
    for lib in (torch, mininn):
        t = lib.tensor([[1.5, 2.0]])
        assert t.tolist() == [[1.5, 2.0]] and t[0, 1].item() == 2.0
        assert float(t[0, 0]) == 1.5 and int(t[0, 1]) == 2 and bool(t[0, 0])
        assert len(t) == 1 and [r.tolist() for r in t] == [[1.5, 2.0]]
        assert np.asarray(t).shape == (1, 2)
        assert lib.tensor([3])[lib.tensor(0)].item() == 3
        assert [10, 20, 30][lib.tensor(1)] == 20


def test_numpy_shares_memory_and_detach_cuts_the_graph():
    x = mininn.ones(3, requires_grad=True)
    d = x.detach()
    d.numpy()[0] = 5.0
    assert x.tolist() == [5.0, 1.0, 1.0]
    assert not d.requires_grad and d.grad_fn is None
    assert x.data.tolist() == x.tolist() and not x.data.requires_grad


@pytest.mark.parametrize("target", ["float64", "float16", "int64", "int32", "bool", "uint8", "bfloat16"])
def test_to_dtype_and_shortcut_casts_match_torch(target):
    run_both(lambda lib, a: a.to(getattr(lib, target)).to(lib.float32),
             np.array([0.0, 1.5, -2.0], np.float32),
             check_grad=target in ("float64", "float16", "bfloat16"), scale=1e3)


def test_cast_shortcuts_and_to_variants():
    x = mininn.tensor([1.7, -2.2])
    assert x.double().dtype is mininn.float64 and x.half().dtype is mininn.float16
    assert x.long().tolist() == [1, -2] and x.int().dtype is mininn.int32
    assert x.bool().dtype is mininn.bool and x.float() is x
    assert x.to("float64").dtype is mininn.float64 and x.to(dtype=mininn.int64).dtype is mininn.int64
    assert x.to("cpu") is x and x.cpu() is x and x.to(x) is x
    assert x.to(mininn.zeros(1, dtype=mininn.float64)).dtype is mininn.float64
    assert x.to("cpu", mininn.float16).dtype is mininn.float16
    assert x.to(copy=True) is not x
    assert x.type() == "torch.FloatTensor" and x.type(mininn.float64).dtype is mininn.float64
    assert x.type_as(mininn.zeros(1, dtype=mininn.int32)).dtype is mininn.int32
    assert x.bfloat16().dtype is mininn.bfloat16


def test_new_factories_follow_the_source_tensor():
    x = mininn.zeros(2, dtype=mininn.float64)
    assert x.new_zeros(3).dtype is mininn.float64 and x.new_zeros((2, 3)).shape == (2, 3)
    assert x.new_ones(2, 2).tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0] and x.new_empty(4).shape == (4,)
    assert x.new_tensor([1, 2]).dtype is mininn.float64
    assert x.new_zeros(2, dtype=mininn.int64).dtype is mininn.int64


def test_clone_keeps_graph_and_deepcopy_pickle_copy_data():
    run_both(lambda lib, a: a.clone() * 3, np.array([1.0, 2.0]))
    x = mininn.tensor([1.0, 2.0], requires_grad=True)
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.tolist() == x.tolist()
    y.data.numpy()[0] = 9
    assert x.tolist() == [1.0, 2.0]
    z = pickle.loads(pickle.dumps(x))
    assert z.requires_grad and z.tolist() == [1.0, 2.0]


INPLACE = {
    "add_": lambda lib, t, o: t.add_(o),
    "add_alpha": lambda lib, t, o: t.add_(o, alpha=-0.5),
    "sub_": lambda lib, t, o: t.sub_(o, alpha=2),
    "mul_": lambda lib, t, o: t.mul_(o),
    "div_": lambda lib, t, o: t.div_(o.abs() + 1),
    "pow_": lambda lib, t, o: t.abs().pow_(2),
    "iadd": lambda lib, t, o: t.__iadd__(o),
    "imul_scalar": lambda lib, t, o: t.__imul__(3),
    "isub": lambda lib, t, o: t.__isub__(o),
    "itruediv": lambda lib, t, o: t.__itruediv__(2),
    "addcmul_": lambda lib, t, o: t.addcmul_(o, o, value=0.5),
    "addcdiv_": lambda lib, t, o: t.addcdiv_(o, o.abs() + 1, value=-2),
    "lerp_": lambda lib, t, o: t.lerp_(o, 0.25),
    "sqrt_": lambda lib, t, o: t.abs().sqrt_(),
    "exp_": lambda lib, t, o: t.exp_(),
    "clamp_": lambda lib, t, o: t.clamp_(-0.3, 0.3),
    "clamp_min_": lambda lib, t, o: t.clamp_(min=0),
    "masked_fill_": lambda lib, t, o: t.masked_fill_(o > 0, 2.0),
    "zero_": lambda lib, t, o: t.zero_(),
    "fill_": lambda lib, t, o: t.fill_(1.25),
    "fill_tensor": lambda lib, t, o: t.fill_(o[0, 0]),
    "copy_": lambda lib, t, o: t.copy_(o),
    "copy_broadcast": lambda lib, t, o: t.copy_(o[0]),
    "copy_cast": lambda lib, t, o: t.copy_(o.double()),
    "neg_": lambda lib, t, o: t.neg_(),
    "relu_": lambda lib, t, o: t.relu_(),
    "sigmoid_": lambda lib, t, o: t.sigmoid_(),
    "tanh_": lambda lib, t, o: t.tanh_(),
    "abs_relu_neg_chain": lambda lib, t, o: t.neg_().relu_().abs_(),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_op_under_no_grad_matches_torch(name):
    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    o = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    outs = []
    for lib in (torch, mininn):
        t = lib.tensor(a, requires_grad=True)
        with lib.no_grad():
            r = INPLACE[name](lib, t, lib.tensor(o))
        outs.append((as_numpy(r), as_numpy(t)))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(set(INPLACE) - {"abs_relu_neg_chain"}))
def test_inplace_op_on_non_leaf_is_recorded_like_torch(name):
    a = np.random.default_rng(2).standard_normal((3, 4))
    o = np.random.default_rng(3).standard_normal((3, 4))

    def fn(lib, x, y):
        t = x * 1.5
        r = INPLACE[name](lib, t, y)
        return r + t

    run_both(fn, a, o)


def test_inplace_returns_self_and_writes_through_views():
    x = mininn.zeros(2, 3)
    assert x.add_(1) is x
    row = x[1]
    row.mul_(4)
    x.view(-1)[0].fill_(7)
    assert x.tolist() == [[7.0, 1.0, 1.0], [4.0, 4.0, 4.0]]
    y = mininn.tensor([1, 2, 3])
    y += 2
    y *= 2
    assert y.dtype is mininn.int64 and y.tolist() == [6, 8, 10]
    with mininn.no_grad():
        y.copy_(mininn.tensor([1.9, 2.1, -1.5]))
    assert y.tolist() == [1, 2, -1]


def test_leaf_that_requires_grad_allows_inplace_only_under_no_grad():
    w = mininn.ones(2, requires_grad=True)
    with mininn.no_grad():
        w.mul_(3).add_(1)
        w[0] = 0.0
        w.normal_()
        w.uniform_(-1, 1)
    assert w.is_leaf and w.requires_grad
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.fill_(1.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.normal_()


def test_random_inplace_fills_are_reproducible_and_have_the_right_distribution():
    mininn.manual_seed(123)
    a = mininn.empty(20000).normal_(2.0, 3.0)
    b = mininn.empty(20000).uniform_(-1.0, 4.0)
    c = mininn.empty(20000).bernoulli_(0.3)
    mininn.manual_seed(123)
    assert mininn.equal(a, mininn.empty(20000).normal_(2.0, 3.0))
    assert abs(a.mean().item() - 2.0) < 0.1 and abs(a.std().item() - 3.0) < 0.1
    assert b.min().item() >= -1.0 and b.max().item() < 4.0 and abs(b.mean().item() - 1.5) < 0.1
    assert set(c.tolist()) == {0.0, 1.0} and abs(c.mean().item() - 0.3) < 0.02
    d = mininn.zeros(1000, dtype=mininn.int64).random_(5, 8)
    assert set(d.tolist()) == {5, 6, 7}


def test_requires_grad_propagates_like_torch():
    a = mininn.ones(2, requires_grad=True)
    b = mininn.ones(2)
    assert (a + b).requires_grad and not (b + b).requires_grad
    assert not (a > 0).requires_grad and not a.argmax().requires_grad
    assert not a.long().requires_grad and a.double().requires_grad
    with mininn.no_grad():
        assert not (a * 2).requires_grad
    assert b.requires_grad_() is b and b.requires_grad
    b.requires_grad = False
    assert not b.requires_grad
    c = a * 2
    c.requires_grad_(True)  # allowed on a non-leaf that already requires grad
    assert c.requires_grad and not c.is_leaf
