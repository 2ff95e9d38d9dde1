"""Tensor functions and methods against torch 2.13: running ops, triangles and diagonals, fused products,
rearrangements, more elementwise math, sampling, and the names model code reaches for."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

FLOATS = [np.float32, np.float64]


def _rand(*shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---- cumulative ---------------------------------------------------------------------------------


def _with_zeros():
    x = _rand(3, 5)
    x[0, 1] = 0.0
    x[1, [1, 3]] = 0.0
    x[2, 4] = 0.0
    return x


@pytest.mark.parametrize("x", [_rand(3, 5), _with_zeros(), _rand(3, 5, dtype=np.float32)],
                         ids=["plain", "zeros", "f32"])
@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_matches_torch_including_the_gradient_through_zeros(x, dim):
    run_both(lambda lib, t: lib.cumprod(t, dim), x)
    run_both(lambda lib, t: t.cumprod(dim=dim), x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_cummax_cummin_logcumsumexp_and_diff_match_torch(dtype):
    ties = np.round(_rand(3, 5, dtype=dtype) * 2) / 2
    run_both(lambda lib, t: tuple(lib.cummax(t, 1)), ties)
    run_both(lambda lib, t: tuple(t.cummin(0)), ties)
    run_both(lambda lib, t: lib.logcumsumexp(t, 1), _rand(3, 5, dtype=dtype) * 30)
    run_both(lambda lib, t: lib.diff(t, 2, 1), _rand(3, 5, dtype=dtype))
    edge = _rand(1, 5, dtype=dtype)
    run_both(lambda lib, t, p: t.diff(dim=0, prepend=p, append=p), _rand(3, 5, dtype=dtype), edge)
    assert repr(mininn.cummax(mininn.tensor([1, 3, 2]), 0)).startswith("mininn.return_types.cummax(")
    assert mininn.cumprod(mininn.tensor([True, True]), 0).dtype is mininn.int64


# ---- triangles and diagonals --------------------------------------------------------------------


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_triangles_and_diagonals_match_torch(k):
    y = _rand(2, 4, 5)
    run_both(lambda lib, t: lib.tril(t, k), y)
    run_both(lambda lib, t: t.triu(diagonal=k), y)
    run_both(lambda lib, t: lib.diagonal(t, k, 0, 2), y)
    run_both(lambda lib, t: t.diagonal(k, -1, 1), y)
    run_both(lambda lib, t: lib.diag_embed(t, k, 0, 2), y)
    run_both(lambda lib, t: lib.diag(t, k), y[0])
    run_both(lambda lib, t: t.diag(k), y[0, 0])
    assert mininn.tril_indices(3, 4, k).tolist() == torch.tril_indices(3, 4, k).tolist()
    assert mininn.triu_indices(4, 3, k).tolist() == torch.triu_indices(4, 3, k).tolist()


def test_trace_and_in_place_triangles_match_torch():
    run_both(lambda lib, t: lib.trace(t), _rand(3, 3))
    run_both(lambda lib, t: (t * 1).tril_(-1), _rand(3, 3))
    mask = mininn.ones(3, 3)
    assert mask.triu_(1) is mask and mask.sum().item() == 3


# ---- fused products and pointwise ops ----------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_fused_products_match_torch(dtype):
    r = lambda *s: _rand(*s, dtype=dtype, seed=len(s))  # noqa: E731
    run_both(lambda lib, i, a, b: lib.addmm(i, a, b, beta=0.5, alpha=2), r(3), r(2, 4), r(4, 3))
    run_both(lambda lib, i, a, b: i.baddbmm(a, b, beta=0.5, alpha=2), r(1, 3), r(2, 2, 4), r(2, 4, 3))
    run_both(lambda lib, i, a, b: lib.addbmm(i, a, b), r(2, 3), r(2, 2, 4), r(2, 4, 3))
    run_both(lambda lib, a, b: a.mv(b), r(2, 4), r(4))
    run_both(lambda lib, i, a, b: lib.addmv(i, a, b, alpha=3), r(2), r(2, 4), r(4))
    run_both(lambda lib, i, a, b: lib.addr(i, a, b), r(2, 4), r(2), r(4))
    run_both(lambda lib, a, b: lib.inner(a, b), r(2, 4), r(3, 4))
    run_both(lambda lib, a, b: lib.tensordot(a, b, dims=2), r(2, 3, 4), r(3, 4, 5))
    run_both(lambda lib, a, b: lib.tensordot(a, b, dims=([0, 2], [2, 0])), r(2, 3, 4), r(4, 5, 2))


def test_addmm_with_beta_zero_ignores_nan_input_like_torch():
    nan = np.full((2, 3), np.nan)
    run_both(lambda lib, i, a, b: lib.addmm(i, a, b, beta=0), nan, _rand(2, 3), _rand(3, 3))


@pytest.mark.parametrize("dtype", FLOATS)
def test_lerp_addcmul_addcdiv_and_clamp_variants_match_torch(dtype):
    a, b, c = _rand(2, 4, dtype=dtype), _rand(4, dtype=dtype, seed=1), _rand(2, 1, dtype=dtype, seed=2)
    run_both(lambda lib, x, y, w: lib.lerp(x, y, w), a, b, c)
    run_both(lambda lib, x, y: x.lerp(y, 0.3), a, b)
    run_both(lambda lib, x, y, z: lib.addcmul(x, y, z, value=0.5), a, b, c)
    run_both(lambda lib, x, y, z: x.addcdiv(y, z + 3, value=0.5), a, b, c)
    run_both(lambda lib, x, lo, hi: lib.clamp(x, min=lo, max=hi), a, b - 1, b + 0.5)
    run_both(lambda lib, x: (lib.clamp_min(x, 0.1), x.clamp_max(-0.1)), a)
    run_both(lambda lib, x: lib.where(x > 0, 1.0, 0.0), a, check_grad=False)
    run_both(lambda lib, x: lib.where(x > 0, x, 0.5), a)


@pytest.mark.parametrize("call", [
    lambda lib: lib.addmm(lib.randn(3), lib.randn(2), lib.randn(2, 3)),
    lambda lib: lib.addmm(lib.randn(3), lib.randn(2, 3), lib.randn(4, 3)),
    lambda lib: lib.addmm(lib.randn(4), lib.randn(2, 3), lib.randn(3, 3)),
    lambda lib: lib.addmm(lib.randn(3), lib.randn(2, 3), lib.randn(3, 3).double()),
    lambda lib: lib.baddbmm(lib.randn(3), lib.randn(2, 3), lib.randn(2, 3, 3)),
    lambda lib: lib.baddbmm(lib.randn(3), lib.randn(2, 2, 3), lib.randn(3, 3, 3)),
    lambda lib: lib.baddbmm(lib.randn(5), lib.randn(2, 2, 3), lib.randn(2, 3, 3)),
    lambda lib: lib.mv(lib.randn(2, 3), lib.randn(4)),
    lambda lib: lib.mv(lib.randn(2, 3), lib.randn(4, 1)),
    lambda lib: lib.addr(lib.randn(2, 3), lib.randn(2), lib.randn(3, 1)),
    lambda lib: lib.inner(lib.randn(2, 3), lib.randn(4)),
    lambda lib: lib.lerp(lib.randn(2), lib.randn(3), 0.5),
    lambda lib: lib.lerp(lib.randn(2), lib.randn(2).double(), 0.5),
    lambda lib: lib.addcmul(lib.randn(2), lib.randn(2), lib.randn(3)),
    lambda lib: lib.tril(lib.randn(3)),
    lambda lib: lib.diag(lib.randn(2, 2, 2)),
    lambda lib: lib.diagonal(lib.randn(2, 2), 0, 1, -1),
    lambda lib: lib.trace(lib.randn(2, 2, 2)),
    lambda lib: lib.logcumsumexp(lib.tensor([1, 2]), 0),
])
def test_matrix_and_pointwise_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


# ---- rearrangements ------------------------------------------------------------------------------


def test_repeat_interleave_matches_torch():
    x = _rand(2, 3)
    run_both(lambda lib, t: lib.repeat_interleave(t, 2), x)
    run_both(lambda lib, t: t.repeat_interleave(2, dim=1), x)
    run_both(lambda lib, t, r: lib.repeat_interleave(t, r, dim=0), x, np.array([0, 3]))
    run_both(lambda lib, t, r: t.repeat_interleave(r, dim=-1), x, np.array([1, 0, 2]))
    run_both(lambda lib, r: lib.repeat_interleave(r), np.array([2, 0, 1]))


@pytest.mark.parametrize("k", [-1, 0, 1, 2, 3])
def test_rot90_matches_torch(k):
    run_both(lambda lib, t: lib.rot90(t, k, [1, 0]), _rand(2, 3, 4))


def test_flips_grids_broadcasts_splits_and_stacks_match_torch():
    x = _rand(2, 3)
    run_both(lambda lib, t: (lib.fliplr(t), t.flipud(), t.ravel()), x)
    run_both(lambda lib, a, b, c: lib.meshgrid(a, b, c, indexing="xy"), _rand(2), _rand(3), _rand(4))
    run_both(lambda lib, a, b: lib.meshgrid([a, b], indexing="ij"), _rand(2), _rand(3))
    run_both(lambda lib, a, b: lib.broadcast_tensors(a, b), _rand(2, 1), _rand(3))
    assert tuple(mininn.broadcast_shapes((2, 1), (3,))) == tuple(torch.broadcast_shapes((2, 1), (3,)))
    run_both(lambda lib, t: lib.tensor_split(t, 3), _rand(7))
    run_both(lambda lib, t: t.tensor_split([1, 5, -1, 9], dim=0), _rand(7, 2))
    run_both(lambda lib, t: (lib.moveaxis(t, 0, 1), lib.swapdims(t, 0, 1), t.swapdims(1, 0)), x)


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
def test_stacking_joins_match_torch(name):
    run_both(lambda lib, a, b: getattr(lib, name)([a, b]), _rand(2), _rand(2))
    run_both(lambda lib, a, b: getattr(lib, name)((a, b)), _rand(2, 3), _rand(2, 3))


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("shape", [(), (2,), (2, 3), (2, 3, 4)])
def test_atleast_nd_matches_torch(name, shape):
    run_both(lambda lib, a: getattr(lib, name)(a), _rand(*shape))
    run_both(lambda lib, a, b: getattr(lib, name)(a, b), _rand(*shape), _rand())


@pytest.mark.parametrize("call", [
    lambda lib: lib.rot90(lib.randn(2, 3), 1, [0]),
    lambda lib: lib.rot90(lib.randn(2, 3), 1, [0, 0]),
    lambda lib: lib.rot90(lib.randn(3), 1),
    lambda lib: lib.fliplr(lib.randn(3)),
    lambda lib: lib.flipud(lib.tensor(1.0)),
    lambda lib: lib.meshgrid(lib.randn(2), lib.randn(3), indexing="foo"),
    lambda lib: lib.broadcast_tensors(lib.randn(2, 2), lib.randn(3)),
    lambda lib: lib.broadcast_shapes((2, 2), (3,)),
    lambda lib: lib.tensor_split(lib.randn(7), 0),
    lambda lib: lib.hstack([]),
    lambda lib: lib.repeat_interleave(lib.tensor([[1, 2], [3, 4]]), lib.tensor([1, 2, 3]), dim=0),
    lambda lib: lib.repeat_interleave(lib.tensor([[1, 2], [3, 4]]), lib.tensor([-1, 2]), dim=0),
    lambda lib: lib.repeat_interleave(lib.tensor([[1, 2], [3, 4]]), -1, dim=0),
])
def test_rearrangement_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


# ---- more elementwise math -----------------------------------------------------------------------

_RNG = np.random.default_rng(1)
_OPEN_UNIT = _RNG.uniform(-0.9, 0.9, 6)  # inside the domains of asin, acos, atanh
_NORMAL = _RNG.standard_normal(6)
_POSITIVE = _RNG.uniform(0.1, 3, 6)
_UNARY = [
    ("tan", _OPEN_UNIT), ("asin", _OPEN_UNIT), ("acos", _OPEN_UNIT), ("atan", _NORMAL), ("sinh", _NORMAL),
    ("cosh", _NORMAL), ("asinh", _NORMAL), ("acosh", _POSITIVE + 1), ("atanh", _OPEN_UNIT),
    ("log2", _POSITIVE), ("log10", _POSITIVE), ("exp2", _NORMAL), ("sinc", np.append(_NORMAL[:5], 0.0)),
    ("logit", _RNG.uniform(0.05, 0.95, 6)), ("frac", _NORMAL * 3), ("arcsin", _OPEN_UNIT),
    ("arctanh", _OPEN_UNIT),
]


@pytest.mark.parametrize("name, x", _UNARY, ids=[n for n, _ in _UNARY])
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_math_matches_torch_with_gradients(name, x, dtype):
    run_both(lambda lib, t: getattr(lib, name)(t), x.astype(dtype))
    run_both(lambda lib, t: getattr(t, name)(), x.astype(dtype))


_BINARY = [
    ("atan2", _RNG.standard_normal((3, 4)), _RNG.standard_normal(4)),
    ("hypot", _RNG.standard_normal((3, 4)), _RNG.standard_normal(4)),
    ("logaddexp", _RNG.standard_normal((3, 4)) * 10, _RNG.standard_normal(4)),
    ("xlogy", np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.5, 2.5])),
    ("fmod", _RNG.standard_normal((3, 4)) * 5, np.array([1.5, -2.0, 2.5, 3.0])),
    ("copysign", _RNG.standard_normal((3, 4)), _RNG.standard_normal(4)),
]


@pytest.mark.parametrize("name, a, b", _BINARY, ids=[n for n, _, _ in _BINARY])
@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_math_matches_torch_with_gradients(name, a, b, dtype):
    run_both(lambda lib, x, y: getattr(lib, name)(x, y), a.astype(dtype), b.astype(dtype))


def test_math_edge_cases_match_torch():
    special = np.array([np.nan, np.inf, -np.inf, 1.0])
    run_both(lambda lib, t: lib.nan_to_num(t), special)
    run_both(lambda lib, t: t.nan_to_num(nan=1.0, posinf=2.0), special.astype(np.float32))
    run_both(lambda lib, t: lib.logit(t, eps=0.1), np.array([0.01, 0.5, 0.95]))
    run_both(lambda lib, t: lib.signbit(t), np.array([-0.0, 1.0, -1.0]))
    run_both(lambda lib, t: (lib.fmod(t, 2), lib.atan2(t, t), lib.log2(t)), np.array([-3, 4, 5]))


# ---- sampling --------------------------------------------------------------------------------------


def test_multinomial_draws_with_the_requested_frequencies_without_a_python_loop():
    mininn.manual_seed(0)
    probs = mininn.tensor([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    draws = mininn.multinomial(probs, 20000, replacement=True).numpy()
    freqs = np.stack([np.bincount(row, minlength=3) / 20000 for row in draws])
    np.testing.assert_allclose(freqs, probs.numpy(), atol=0.02)
    distinct = probs.multinomial(3)
    assert sorted(distinct[0].tolist()) == [0, 1, 2] and distinct[1, 2].item() == 2
    assert mininn.multinomial(mininn.tensor([1.0, 0.0, 0.0]), 2).tolist() == [0, 1]  # zeros come last


@pytest.mark.parametrize("call", [
    lambda lib: lib.multinomial(lib.rand(2, 3, 4), 1),
    lambda lib: lib.multinomial(lib.rand(4), 5),
    lambda lib: lib.multinomial(lib.zeros(4), 1),
    lambda lib: lib.multinomial(lib.tensor([1.0, -1.0]), 1),
    lambda lib: lib.multinomial(lib.tensor([1, 2]), 1),
    lambda lib: lib.multinomial(lib.tensor([1.0, 2.0]), 0),
    lambda lib: lib.normal(lib.zeros(3), -1.0),
])
def test_sampling_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


def test_normal_poisson_bernoulli_and_spaced_factories():
    mininn.manual_seed(1)
    x = mininn.normal(mininn.full((4000,), 2.0), mininn.full((4000,), 3.0)).numpy()
    assert abs(x.mean() - 2) < 0.2 and abs(x.std() - 3) < 0.2
    assert tuple(mininn.normal(0.0, 1.0, (2, 3)).shape) == (2, 3)
    assert abs(mininn.poisson(mininn.full((4000,), 4.0)).numpy().mean() - 4) < 0.2
    assert abs(mininn.full((4000,), 0.25).bernoulli().numpy().mean() - 0.25) < 0.03
    low_high = mininn.randint_like(mininn.zeros(1000), 2, 5).numpy()
    assert low_high.min() == 2 and low_high.max() == 4
    for args, kwargs in [((0, 2, 3), {}), ((0, 2, 3), {"base": 2}), ((-1, 1, 5), {"dtype": mininn.float64})]:
        torch_kwargs = {k: (torch.float64 if v is mininn.float64 else v) for k, v in kwargs.items()}
        np.testing.assert_allclose(mininn.logspace(*args, **kwargs).numpy(),
                                   torch.logspace(*args, **torch_kwargs).numpy(), rtol=1e-6)


# ---- names and metadata --------------------------------------------------------------------------


def test_stride_mh_and_exports_follow_torch():
    t, m = torch.zeros(3, 4), mininn.zeros(3, 4)
    assert m.stride() == t.stride() and m.t().stride() == t.t().stride() and m.stride(-1) == t.stride(-1)
    assert tuple(m.mH.shape) == tuple(t.mH.shape) and tuple(m.H.shape) == tuple(t.H.shape)
    missing = [n for n in mininn.__all__ if not hasattr(mininn, n)]
    assert missing == []
    for name in ("tril", "triu", "cumprod", "scatter_", "index_add_", "masked_scatter", "baddbmm", "norm",
                 "repeat_interleave", "lerp", "take_along_dim", "logcumsumexp", "diff", "moveaxis", "real"):
        assert hasattr(mininn.Tensor, name), name
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isclose(mininn.norm(mininn.ones(4)).item(), 2.0)


# ---- windows, products and indexed access ---------------------------------------------------------


@pytest.mark.parametrize("shape, dim, size, step", [
    ((10,), 0, 3, 2), ((3, 4), 1, 2, 1), ((2, 3, 11), -1, 4, 3),
])
def test_unfold_matches_torch_with_overlapping_windows(shape, dim, size, step):
    run_both(lambda lib, t: t.unfold(dim, size, step), _rand(*shape))


def test_block_diag_cartesian_prod_cross_kron_and_cdist_match_torch():
    run_both(lambda lib, a, b, c: lib.block_diag(a, b, c), _rand(2, 2), _rand(3), _rand())
    run_both(lambda lib, a, b: lib.cartesian_prod(a, b), _rand(2), _rand(3))
    run_both(lambda lib, a, b: lib.linalg.cross(a, b), _rand(2, 3), _rand(1, 3))
    run_both(lambda lib, a, b: lib.cross(a, b, dim=0), _rand(3, 2), _rand(3, 2))
    run_both(lambda lib, a, b: lib.kron(a, b), _rand(2, 2), _rand(3))
    run_both(lambda lib, a, b: lib.cdist(a, b), _rand(2, 3), _rand(4, 3))
    run_both(lambda lib, a, b: lib.cdist(a, b, p=1), _rand(2, 5, 3), _rand(2, 4, 3))
    run_both(lambda lib, a: lib.cdist(a, a), _rand(3, 3))  # zero distances: zero gradient


@pytest.mark.parametrize("dtype", FLOATS)
def test_erfinv_erfc_and_angle_units_match_torch(dtype):
    inside = np.random.default_rng(3).uniform(-0.999, 0.999, 50).astype(dtype)
    run_both(lambda lib, t: lib.erfinv(t), inside)
    run_both(lambda lib, t: (t.erfc(), lib.deg2rad(t), t.rad2deg()), _rand(5, dtype=dtype))
    run_both(lambda lib, t: lib.erfinv(t), np.array([-1.0, 0.0, 1.0, 2.0], dtype), check_grad=False)


def test_take_select_and_index_put_match_torch():
    run_both(lambda lib, t, i: lib.take(t, i), _rand(2, 3), np.array([0, 5, -1]))
    run_both(lambda lib, t: t.select(1, -1), _rand(2, 3))
    run_both(lambda lib, t, v: t.index_put((lib.tensor([0, 0]), lib.tensor([1, 1])), v, accumulate=True),
             _rand(2, 2), np.array(5.0))
    run_both(lambda lib, t, v: t.index_put((lib.tensor([0, 1]),), v), _rand(2, 2), _rand(2))
    plain = mininn.zeros(2, 2)
    assert plain.index_put_((mininn.tensor([1]), mininn.tensor([0])), mininn.tensor(3.0)) is plain
    assert plain.tolist() == [[0.0, 0.0], [3.0, 0.0]]


@pytest.mark.parametrize("call", [
    lambda lib: lib.arange(10.0).unfold(0, 11, 1),
    lambda lib: lib.arange(10.0).unfold(0, 3, 0),
    lambda lib: lib.cdist(lib.randn(2, 3), lib.randn(4, 2)),
    lambda lib: lib.cdist(lib.randn(3), lib.randn(4, 3)),
    lambda lib: lib.linalg.cross(lib.randn(2, 3), lib.randn(3, 2)),
    lambda lib: lib.linalg.cross(lib.randn(2, 3), lib.randn(3)),
    lambda lib: lib.take(lib.tensor([[1, 2], [3, 4]]), lib.tensor([4])),
])
def test_window_and_product_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


# ---- in-place forms ------------------------------------------------------------------------------

_X = np.random.default_rng(4).uniform(-0.9, 0.9, (3, 4))
_INPLACE_CALLS = {
    "tan_": (), "atanh_": (), "erfinv_": (), "log1p_": (), "floor_": (), "round_": (), "sign_": (),
    "atan2_": (lambda lib: lib.tensor(_X[::-1].copy()),), "fmod_": (0.3,), "clamp_min_": (0.1,),
    "clamp_max_": (-0.1,), "cumsum_": (1,), "cumprod_": (0,), "eq_": (0.5,), "gt_": (0.0,),
    "logical_not_": (), "unsqueeze_": (0,), "squeeze_": (), "t_": (), "transpose_": (0, 1),
    "addr_": (lambda lib: lib.ones(3, dtype=lib.float64), lambda lib: lib.ones(4, dtype=lib.float64)),
}


@pytest.mark.parametrize("name", list(_INPLACE_CALLS))
def test_in_place_forms_write_into_the_tensor_like_torch(name):
    results = []
    for lib in (mininn, torch):
        t = lib.tensor(_X)
        args = [a(lib) if callable(a) else a for a in _INPLACE_CALLS[name]]
        assert getattr(t, name)(*args) is t
        results.append(t)
    ours, theirs = results
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_in_place_forms_are_recorded_by_autograd_and_refuse_leaves():
    grads = []
    for lib in (mininn, torch):
        leaf = lib.tensor(_X, requires_grad=True)
        y = leaf * 2
        y.tan_()
        z = y * 1
        z.unsqueeze_(0)
        (z * z).sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])
    same_error(lambda: torch.tensor(_X, requires_grad=True).unsqueeze_(0),
               lambda: mininn.tensor(_X, requires_grad=True).unsqueeze_(0))
    same_error(lambda: torch.tensor(_X, requires_grad=True).tan_(),
               lambda: mininn.tensor(_X, requires_grad=True).tan_())


def test_small_predicates_and_complex_casts_follow_torch():
    for lib in (mininn, torch):
        assert lib.ones(2).is_signed() and not lib.ones(2, dtype=lib.uint8).is_signed()
        assert lib.ones(2).is_same_size(lib.zeros(2)) and lib.tensor(1.0).is_nonzero()
        assert lib.ones(2).get_device() == -1 and lib.ones(2).is_cpu
    assert mininn.ones(2).cfloat().dtype is mininn.complex64
    assert mininn.ones(2).cdouble().dtype is mininn.complex128


# ---- scatter-by-position, splits and more elementwise ops -------------------------------------------


def test_positional_scatters_splits_and_size_reductions_match_torch():
    run_both(lambda lib, a, b: lib.diagonal_scatter(a, b), _rand(3, 3), _rand(3))
    run_both(lambda lib, a, b: lib.diagonal_scatter(a, b, -1, 2, 0), _rand(2, 3, 4), _rand(3, 2))
    run_both(lambda lib, a, b: lib.select_scatter(a, b, 0, 1), _rand(2, 3), _rand(3))
    run_both(lambda lib, a, b: lib.slice_scatter(a, b, 0, 1, 3), _rand(4, 3), _rand(2, 3))
    run_both(lambda lib, a, b: a.slice_scatter(b, 1, None, None, 2), _rand(4, 4), _rand(4, 2))
    run_both(lambda lib, a: a.sum_to_size(1, 3), _rand(2, 3))
    run_both(lambda lib, a: a.sum_to_size((3,)), _rand(2, 2, 3))
    run_both(lambda lib, a: (lib.msort(a), a.narrow_copy(0, 1, 2)), _rand(4, 2))
    run_both(lambda lib, a: lib.hsplit(a, 3), _rand(2, 3))
    run_both(lambda lib, a: a.vsplit([1]), _rand(2, 3))
    run_both(lambda lib, a: lib.split_with_sizes(a, [1, 2], 1), _rand(2, 3))
    run_both(lambda lib, a: lib.dsplit(a, 2), _rand(2, 3, 4))


@pytest.mark.parametrize("shape, wrap", [
    ((3, 3), False), ((5, 3), True), ((5, 3), False), ((3, 3, 3), False),
])
def test_fill_diagonal_matches_torch(shape, wrap):
    ours, theirs = mininn.zeros(*shape), torch.zeros(*shape)
    assert ours.fill_diagonal_(2.0, wrap) is ours
    theirs.fill_diagonal_(2.0, wrap)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_skipping_extremes_powers_and_logs_match_torch(dtype):
    nan_a = np.array([1.0, np.nan, 3.0, np.nan], dtype)
    nan_b = np.array([np.nan, 2.0, 1.0, np.nan], dtype)
    run_both(lambda lib, a, b: (lib.fmax(a, b), a.fmin(b)), nan_a, nan_b)
    a, b = _rand(3, 4, dtype=dtype), _rand(4, dtype=dtype, seed=1)
    run_both(lambda lib, x, y: (lib.fmax(x, y), lib.fmin(x, y)), a, b)
    run_both(lambda lib, x, y: lib.logaddexp2(x, y), a, b)
    run_both(lambda lib, a, b: lib.ldexp(a, b), _rand(3, 4, dtype=dtype), np.array([1, 2, 3, 0]))
    run_both(lambda lib, a, b: lib.float_power(a, b), np.abs(_rand(3, 4, dtype=dtype)), _rand(4, dtype=dtype))


def test_integer_and_step_functions_match_torch():
    run_both(lambda lib, a: lib.float_power(a, 2), np.array([2, 3], dtype=np.int32))
    run_both(lambda lib, a, b: (lib.gcd(a, b), a.lcm(b)), np.array([4, 6]), np.array([6, 9]))
    run_both(lambda lib, a: (lib.bitwise_left_shift(a, 2), a.bitwise_right_shift(1), lib.bitwise_and(a, 3),
                             a.bitwise_xor(a), a.bitwise_not(), a << 1, a >> 1), np.array([1, 2, 8]))
    assert mininn.heaviside(mininn.tensor([-1.0, 0.0, 2.0]), mininn.tensor([0.5])).tolist() == [0.0, 0.5, 1.0]


@pytest.mark.parametrize("call", [
    lambda lib: lib.ones(2, 3).sum_to_size(3, 1),
    lambda lib: lib.hsplit(lib.arange(6).reshape(2, 3), 2),
    lambda lib: lib.gcd(lib.tensor([4.0]), lib.tensor([6.0])),
    lambda lib: lib.bitwise_and(lib.tensor([1.0]), lib.tensor([1])),
    lambda lib: lib.zeros(3, 4, 5).fill_diagonal_(2),
])
def test_more_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


@pytest.mark.parametrize("call", [
    lambda lib: lib.arange(0, 5, 0),
    lambda lib: lib.arange(5, 0, 1),
    lambda lib: lib.linspace(0, 1, -1),
    lambda lib: lib.logspace(0, 1, -2),
    lambda lib: lib.eye(-1),
    lambda lib: lib.eye(2, -1),
])
def test_factory_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


@pytest.mark.parametrize("args", [(0, 1, 0.1), (1, 2.5, 0.5), (-1, 1, 0.3), (10, 0, -3), (0.5,), (5, 5)])
def test_arange_variants_match_torch(args):
    ours, theirs = mininn.arange(*args), torch.arange(*args)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda lib: lib.roll(lib.zeros(2, 3), (1, 2), 0),
    lambda lib: lib.roll(lib.zeros(2, 3), 1, (0, 1)),
    lambda lib: lib.masked_select(lib.zeros(3), lib.ones(2, dtype=lib.bool)),
    lambda lib: lib.masked_select(lib.zeros(2, 3), lib.ones(4, dtype=lib.bool)),
    lambda lib: lib.outer(lib.zeros(2, 2), lib.zeros(2)),
    lambda lib: lib.outer(lib.zeros(2), lib.zeros(2, 1)),
    lambda lib: lib.gather(lib.zeros(3, 4), 1, lib.tensor([[0], [5], [0]])),
    lambda lib: lib.topk(lib.zeros(3), 4),
    lambda lib: lib.narrow(lib.zeros(3), 0, 2, 2),
    lambda lib: lib.chunk(lib.zeros(3), 0),
    lambda lib: lib.flip(lib.zeros(2, 3), (0, 0)),
])
def test_shape_and_selection_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


def test_roll_flip_sort_and_selection_ops_match_torch():
    x = _rand(3, 5)
    run_both(lambda lib, t: (t.roll((1, -2), (0, 1)), lib.roll(t, 3), lib.roll(t, (1,), (1,))), x)
    run_both(lambda lib, t: (lib.flip(t, (0, 1)), lib.cumsum(t, 1), t.argsort(dim=0, descending=True)), x)
    run_both(lambda lib, t: tuple(lib.topk(t, 2, dim=0, largest=False)), x)
    run_both(lambda lib, t: tuple(lib.sort(lib.round(t), descending=True, stable=True)), x)
    index = np.array([[4, 0], [0, 1], [2, 2]])
    run_both(lambda lib, t, i: (lib.gather(t, 1, i), lib.index_select(t, 1, i[:, 0])), x, index)
    run_both(lambda lib, t: (lib.any(t > 0, dim=1), lib.all(t > 0, dim=(0, 1)), t.masked_select(t > 0)), x)
    run_both(lambda lib, t: t.chunk(2, 1), x)
    run_both(lambda lib, t: lib.narrow(t, 1, -3, 2), x)


def test_numerical_gradient_matches_torch():
    y = _rand(3, 5)
    run_both(lambda lib, t: lib.gradient(t), y)
    run_both(lambda lib, t: lib.gradient(t, spacing=2.0, dim=1, edge_order=2), y)
    points = [0.0, 1, 3, 4, 7]
    run_both(lambda lib, t: lib.gradient(t, spacing=(lib.tensor(points, dtype=lib.float64),), dim=1), y)
    same_error(lambda: torch.gradient(torch.ones(2), edge_order=2),
               lambda: mininn.gradient(mininn.ones(2), edge_order=2))
