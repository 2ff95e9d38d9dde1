"""Values and gradients of Tensor math against torch 2.13: elementwise, unary,
reductions, softmax and matrix products, in float32 and float64, with broadcasting.
"""

import numpy as np
import pytest
from _tensor_parity import run_both
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mininn

torch = pytest.importorskip("torch")

FLOATS = [np.float32, np.float64]


def _rand(shape, dtype, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.5
    return a.astype(dtype)


BINARY = {
    "add": lambda lib, a, b: a + b,
    "radd": lambda lib, a, b: 2.5 + a,
    "sub": lambda lib, a, b: a - b,
    "rsub": lambda lib, a, b: 1.5 - b,
    "mul": lambda lib, a, b: a * b,
    "rmul": lambda lib, a, b: 3 * a,
    "div": lambda lib, a, b: a / b,
    "rdiv": lambda lib, a, b: 2 / b,
    "pow_tensor": lambda lib, a, b: a.abs() ** b,
    "pow_scalar": lambda lib, a, b: a**3,
    "rpow": lambda lib, a, b: 2**b,
    "add_alpha": lambda lib, a, b: a.add(b, alpha=2),
    "sub_alpha": lambda lib, a, b: lib.sub(a, b, alpha=0.5),
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    "minimum": lambda lib, a, b: lib.minimum(a, b),
    "where": lambda lib, a, b: lib.where(a > b, a, b),
    "where_scalar": lambda lib, a, b: lib.where(a > 0, a, 0.0),
    "remainder": lambda lib, a, b: lib.remainder(a, b.abs() + 0.5),
    "masked_fill": lambda lib, a, b: (a * b).masked_fill(b > 0, -1.0),
    "clamp_tensor": lambda lib, a, b: a.clamp(min=b),
    "matmul_shape_safe": lambda lib, a, b: (a * b).sum(-1),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_op_matches_torch_with_broadcasting(name, dtype):
    a, b = _rand((3, 1, 4), dtype, 1), _rand((5, 4), dtype, 2)
    run_both(BINARY[name], a, b)


UNARY = {
    "neg": lambda lib, a: -a,
    "exp": lambda lib, a: a.exp(),
    "expm1": lambda lib, a: lib.expm1(a),
    "log": lambda lib, a: (a.abs() + 0.1).log(),
    "log1p": lambda lib, a: lib.log1p(a.abs()),
    "sqrt": lambda lib, a: (a.abs() + 0.1).sqrt(),
    "rsqrt": lambda lib, a: (a.abs() + 0.1).rsqrt(),
    "reciprocal": lambda lib, a: (a.abs() + 0.1).reciprocal(),
    "tanh": lambda lib, a: a.tanh(),
    "sigmoid": lambda lib, a: a.sigmoid(),
    "relu": lambda lib, a: a.relu(),
    "abs": lambda lib, a: a.abs(),
    "sin": lambda lib, a: a.sin(),
    "cos": lambda lib, a: a.cos(),
    "square": lambda lib, a: lib.square(a),
    "erf": lambda lib, a: (a * 2).erf(),
    "clamp": lambda lib, a: a.clamp(-0.5, 0.7),
    "clamp_min": lambda lib, a: a.clamp(min=0.1),
    "clamp_max": lambda lib, a: lib.clamp(a, max=0.1),
    "clip": lambda lib, a: a.clip(-1, 1),
    "softmax": lambda lib, a: a.softmax(-1),
    "softmax_dim0": lambda lib, a: lib.softmax(a, 0),
    "log_softmax": lambda lib, a: a.log_softmax(1),
    "sign_times": lambda lib, a: a * a.sign(),
    "floor_ceil_round": lambda lib, a: a.floor() + a.ceil() + a.round() + a.trunc() + a,
    "pos": lambda lib, a: +a,
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_op_matches_torch(name, dtype):
    run_both(UNARY[name], _rand((4, 6), dtype, 3) * 2)


def test_erf_is_accurate_over_its_whole_range_in_float64():
    x = np.concatenate([np.linspace(-7, 7, 20001), [0.0, 1e-300, -1e-20, np.inf, -np.inf]])
    got = mininn.tensor(x).erf().numpy()
    want = torch.tensor(x).erf().numpy()
    np.testing.assert_allclose(got, want, rtol=5e-15, atol=1e-300)
    assert np.isnan(mininn.tensor([np.nan]).erf().item())


REDUCTIONS = {
    "sum": lambda lib, a: a.sum(),
    "sum_dim": lambda lib, a: a.sum(1),
    "sum_dims_keepdim": lambda lib, a: a.sum((0, 2), keepdim=True),
    "sum_neg_dim": lambda lib, a: lib.sum(a, -1),
    "mean": lambda lib, a: a.mean(),
    "mean_dims": lambda lib, a: a.mean((-1, 0)),
    "mean_keepdim": lambda lib, a: a.mean(1, keepdim=True),
    "prod": lambda lib, a: a.prod(),
    "prod_dim": lambda lib, a: a.prod(1, keepdim=True),
    "max_all": lambda lib, a: a.max(),
    "min_all": lambda lib, a: lib.min(a),
    "max_dim": lambda lib, a: a.max(1),
    "min_dim_keepdim": lambda lib, a: a.min(dim=-1, keepdim=True),
    "amax": lambda lib, a: a.amax(1),
    "amin_dims": lambda lib, a: a.amin((0, 2), keepdim=True),
    "amax_all": lambda lib, a: lib.amax(a),
    "var": lambda lib, a: a.var(),
    "var_dim": lambda lib, a: a.var(1),
    "var_unbiased_false": lambda lib, a: a.var(1, unbiased=False, keepdim=True),
    "var_correction": lambda lib, a: a.var(dim=(0, 1), correction=0),
    "std": lambda lib, a: a.std(),
    "std_dim": lambda lib, a: a.std(-1, keepdim=True),
    "logsumexp": lambda lib, a: a.logsumexp(1),
    "logsumexp_dims": lambda lib, a: lib.logsumexp(a, (0, 2), keepdim=True),
    "cumsum": lambda lib, a: a.cumsum(1),
    "norm_like": lambda lib, a: (a * a).sum(-1).sqrt(),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_matches_torch(name, dtype):
    run_both(REDUCTIONS[name], _rand((3, 4, 5), dtype, 4))


def test_reductions_of_integer_tensors_follow_torch_dtypes():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    for fn in (
        lambda lib, x: x.sum(),
        lambda lib, x: x.sum(0),
        lambda lib, x: x.prod(1),
        lambda lib, x: x.max(),
        lambda lib, x: x.max(1),
        lambda lib, x: x.argmax(),
        lambda lib, x: x.argmin(1, keepdim=True),
        lambda lib, x: x.cumsum(1),
        lambda lib, x: x.amax(0),
        lambda lib, x: (x > 3).sum(),
        lambda lib, x: (x > 3).all(1),
        lambda lib, x: (x > 3).any(),
        lambda lib, x: lib.count_nonzero(x, 1),
    ):
        run_both(fn, a)


def test_max_and_min_over_a_dim_return_named_values_and_indices():
    x = mininn.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]])
    out = x.max(dim=1)
    assert out.values.tolist() == [5.0, 7.0]
    assert out.indices.tolist() == [1, 0]
    values, indices = x.min(0)
    assert values.tolist() == [1.0, 0.0, 2.0] and indices.tolist() == [0, 1, 0]
    assert type(out).__name__ == "max"
    assert not out.indices.requires_grad and out.indices.dtype is mininn.int64


def test_max_with_a_tensor_argument_is_elementwise_maximum():
    a, b = mininn.tensor([1.0, 4.0]), mininn.tensor([3.0, 2.0])
    assert mininn.max(a, b).tolist() == [3.0, 4.0]
    assert a.min(b).tolist() == [1.0, 2.0]


def test_ties_share_gradient_like_torch():
    vals = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    run_both(lambda lib, a: a.amax(1), vals)
    run_both(lambda lib, a: a.max(), vals)
    run_both(lambda lib, a: lib.maximum(a, a.flip(1)), vals)
    run_both(lambda lib, a: a.clamp(min=2.0, max=3.0), vals)
    run_both(lambda lib, a: a.relu() + (a - 2).abs(), vals)


def test_prod_gradient_with_zeros_matches_torch():
    vals = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]])
    run_both(lambda lib, a: a.prod(1), vals)
    run_both(lambda lib, a: a.prod(), vals[2:])


def test_softmax_is_stable_for_large_inputs():
    vals = np.array([[1000.0, 1001.0, -1000.0], [-np.inf, 0.0, 1.0]], dtype=np.float32)
    run_both(lambda lib, a: a.softmax(-1), vals, check_grad=False)
    run_both(lambda lib, a: a.log_softmax(-1), vals[:1])
    run_both(lambda lib, a: a.logsumexp(-1), vals)


MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 2)),
    ((5, 1, 2, 3), (4, 3, 2)),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES)
def test_matmul_matches_torch_for_all_rank_combinations(sa, sb, dtype):
    run_both(lambda lib, a, b: a @ b, _rand(sa, dtype, 5), _rand(sb, dtype, 6), scale=10)


def test_mm_bmm_outer_dot_and_einsum_match_torch():
    a, b = _rand((4, 2, 3), np.float64, 1), _rand((4, 3, 5), np.float64, 2)
    run_both(lambda lib, x, y: lib.bmm(x, y), a, b)
    run_both(lambda lib, x, y: lib.mm(x[0], y[0]), a, b)
    run_both(lambda lib, x, y: x[0].mm(y[0]), a, b)
    v, w = _rand((3,), np.float64, 3), _rand((4,), np.float64, 4)
    run_both(lambda lib, x, y: lib.outer(x, y), v, w)
    run_both(lambda lib, x, y: lib.dot(x, x), v, w)
    run_both(lambda lib, x, y: lib.einsum("bij,bjk->bik", x, y), a, b)
    run_both(lambda lib, x, y: lib.einsum("...ij,...jk", x, y), a, b)
    run_both(lambda lib, x, y: lib.einsum("bij->j", x), a, b)
    run_both(lambda lib, x, y: lib.einsum("i,j->ij", x, y), v, w)
    run_both(lambda lib, x, y: lib.einsum("bij,bjk,k->bi", x, y, y[0, 0]), a, b)


def test_integer_matmul_matches_torch():
    a, b = np.arange(6).reshape(2, 3), np.arange(12).reshape(3, 4)
    run_both(lambda lib, x, y: x @ y, a, b)


@st.composite
def _broadcastable_pair(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4))
    return shapes.input_shapes


@settings(max_examples=25, deadline=None)
@given(shapes=_broadcastable_pair(), dtype=st.sampled_from(FLOATS), op=st.sampled_from(
    ["add", "sub", "mul", "div", "maximum", "where"]))
def test_broadcast_gradients_reduce_to_each_input_shape(shapes, dtype, op):
    sa, sb = shapes
    a, b = _rand(sa, dtype, 7), _rand(sb, dtype, 8, positive=True)
    run_both(BINARY[op], a, b)


@settings(max_examples=20, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=5), data=st.data())
def test_reductions_over_random_dims_match_torch(shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = data.draw(st.booleans())
    name = data.draw(st.sampled_from(["sum", "mean", "amax", "logsumexp", "var", "softmax"]))
    fns = {
        "sum": lambda lib, a: a.sum(dim, keepdim=keepdim),
        "mean": lambda lib, a: a.mean(dim, keepdim=keepdim),
        "amax": lambda lib, a: a.amax(dim, keepdim=keepdim),
        "logsumexp": lambda lib, a: a.logsumexp(dim, keepdim=keepdim),
        "var": lambda lib, a: a.var(dim, keepdim=keepdim, correction=0),
        "softmax": lambda lib, a: a.softmax(dim),
    }
    run_both(fns[name], _rand(shape, np.float64, 9))


def test_no_grad_ops_build_no_graph_and_keep_no_saved_arrays():
    x = mininn.randn(3, requires_grad=True)
    with mininn.no_grad():
        y = (x * x).exp().sum()
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    z = x * x
    assert z.grad_fn.ctx.saved_tensors  # recorded: keeps its inputs for backward
