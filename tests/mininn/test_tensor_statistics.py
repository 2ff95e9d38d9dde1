"""Order statistics, summaries, searching and set ops against torch 2.13."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((3, 5))
TIES = np.round(X)
CASES = [X, TIES, X.astype(np.float32)]
IDS = ["plain", "ties", "f32"]


@pytest.mark.parametrize("x", CASES, ids=IDS)
def test_median_matches_torch_and_shares_the_gradient_between_tied_medians(x):
    run_both(lambda lib, t: lib.median(t), x)
    run_both(lambda lib, t: tuple(t.median(1)), X)
    run_both(lambda lib, t: tuple(lib.median(t, 0, keepdim=True)), X)


def test_kthvalue_and_mode_match_torch():
    run_both(lambda lib, t: tuple(lib.kthvalue(t, 2, 0)), X)  # torch's index among ties is unspecified
    run_both(lambda lib, t: tuple(t.kthvalue(4, keepdim=True)), X.astype(np.float32))
    run_both(lambda lib, t: tuple(lib.mode(t, 1, keepdim=True)), TIES)
    run_both(lambda lib, t: tuple(t.mode(0)), TIES)


@pytest.mark.parametrize("x", CASES, ids=IDS)
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_torch(x, interpolation):
    kw = {"interpolation": interpolation}
    run_both(lambda lib, t: lib.quantile(t, 0.3, **kw), x)
    qs = [0.1, 0.5, 0.875]
    run_both(lambda lib, t: t.quantile(lib.tensor(qs, dtype=t.dtype), dim=1, keepdim=True, **kw), x)
    run_both(lambda lib, t: lib.quantile(t, lib.tensor([0.25, 1.0], dtype=t.dtype), dim=0, **kw), x)
    run_both(lambda lib, t: lib.quantile(t, lib.tensor([0.25, 1.0], dtype=t.dtype), keepdim=True, **kw), x)


@pytest.mark.parametrize("x", [X, X.astype(np.float32)], ids=["f64", "f32"])
def test_moment_pairs_extremes_and_nan_reductions_match_torch(x):
    run_both(lambda lib, t: lib.var_mean(t, 1), x)
    run_both(lambda lib, t: lib.std_mean(t, 0, correction=0), x)
    run_both(lambda lib, t: tuple(lib.aminmax(t, dim=0)), x)
    run_both(lambda lib, t: tuple(t.aminmax()), x)
    with_nan = x.copy()
    with_nan[0, 1] = np.nan
    run_both(lambda lib, t: (lib.nansum(t), t.nanmean(1)), with_nan)


def test_counting_ops_match_torch():
    idx = mininn.tensor([1, 1, 3])
    assert mininn.bincount(idx).tolist() == torch.bincount(torch.tensor([1, 1, 3])).tolist()
    weights = mininn.bincount(idx, mininn.tensor([0.5, 1.0, 2.0]), minlength=5)
    expected = torch.bincount(torch.tensor([1, 1, 3]), torch.tensor([0.5, 1.0, 2.0]), 5)
    assert weights.tolist() == expected.tolist()
    for args in [((1.0, 2.0, 1.0), dict(bins=4, min=0, max=3)), ((1.0, 2.0, 1.0, 5.0), dict(bins=4))]:
        assert mininn.histc(mininn.tensor(args[0]), **args[1]).tolist() == \
            torch.histc(torch.tensor(args[0]), **args[1]).tolist()


def _same(ours, theirs):
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.tolist() == t.tolist() and o.dtype.name == str(t.dtype).removeprefix("torch.")


@pytest.mark.parametrize("call", [
    lambda lib: lib.unique(lib.tensor([3, 1, 2, 3, 1]), return_inverse=True, return_counts=True),
    lambda lib: lib.unique(lib.tensor([[1, 2], [1, 2], [0, 5]]), dim=0, return_inverse=True),
    lambda lib: lib.tensor([[1.0, 2.0], [2.0, 0.5]]).unique(),
    lambda lib: lib.unique_consecutive(lib.tensor([1, 1, 2, 3, 1]), return_counts=True, return_inverse=True),
    lambda lib: lib.unique_consecutive(lib.tensor([[1, 2], [1, 2], [0, 5]]), dim=0, return_counts=True),
    lambda lib: lib.searchsorted(lib.tensor([1, 3, 5, 7]), lib.tensor([[3, 6], [9, 0]])),
    lambda lib: lib.searchsorted(lib.tensor([1, 3, 5, 7]), lib.tensor([3, 7]), right=True),
    lambda lib: lib.searchsorted(lib.tensor([[1.0, 3.0, 5.0], [-2.0, 0.0, 2.5]]),
                                 lib.tensor([[3.0, 6.0], [0.0, -5.0]])),
    lambda lib: lib.bucketize(lib.tensor([3, 6, 9]), lib.tensor([1, 3, 5, 7])),
    lambda lib: lib.bucketize(lib.tensor([3, 6, 9]), lib.tensor([1, 3, 5, 7]), right=True, out_int32=True),
    lambda lib: lib.isin(lib.tensor([1, 2, 3]), lib.tensor([2, 5])),
    lambda lib: lib.argwhere(lib.tensor([[0, 1], [2, 0]])),
    lambda lib: (lib.isposinf(lib.tensor([1.0, float("inf"), -float("inf")])),
                 lib.isneginf(lib.tensor([1.0, float("inf"), -float("inf")])), lib.isreal(lib.tensor([1.0]))),
])
def test_search_and_set_ops_match_torch(call):
    _same(call(mininn), call(torch))


@pytest.mark.parametrize("call", [
    lambda lib: lib.kthvalue(lib.tensor([1.0, 2.0]), 3),
    lambda lib: lib.quantile(lib.tensor([1.0, 2.0]), 1.5),
    lambda lib: lib.quantile(lib.tensor([1, 2]), 0.5),
    lambda lib: lib.quantile(lib.tensor([1.0, 2.0]), 0.5, interpolation="x"),
    lambda lib: lib.bincount(lib.tensor([-1])),
    lambda lib: lib.bincount(lib.tensor([[1]])),
    lambda lib: lib.searchsorted(lib.tensor([[1, 3], [2, 4]]), lib.tensor([1])),
])
def test_statistics_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cov_and_corrcoef_match_torch_with_weights(dtype):
    x = X.astype(dtype)
    observation_weights = np.random.default_rng(2).uniform(0.5, 2.0, 5).astype(dtype)
    run_both(lambda lib, t: (lib.cov(t), t.cov(correction=0), lib.cov(t[0]), lib.corrcoef(t)), x)
    run_both(lambda lib, t, fw, aw: lib.cov(t, fweights=fw, aweights=aw), x, np.array([1, 2, 1, 3, 1]),
             observation_weights)
    run_both(lambda lib, t, aw: lib.cov(t, aweights=aw, correction=0), x, observation_weights)
    run_both(lambda lib, t, u: (lib.rsub(t, 5, alpha=2), lib.rsub(t, u)), x, x[::-1].copy())


_WITH_NAN = X.copy()
_WITH_NAN[0, 1] = np.nan
_WITH_NAN[2] = np.nan  # a line with no numbers at all


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_nanquantile_and_nanmedian_skip_nans_like_torch(interpolation):
    kw = {"interpolation": interpolation}
    run_both(lambda lib, t: lib.nanquantile(t, 0.3, **kw), _WITH_NAN)
    run_both(lambda lib, t: t.nanquantile(lib.tensor([0.2, 0.9], dtype=t.dtype), dim=1, keepdim=True, **kw),
             _WITH_NAN)
    run_both(lambda lib, t: lib.nanquantile(t, 0.75, dim=0, **kw), _WITH_NAN)
    run_both(lambda lib, t: (lib.nanmedian(t), *t.nanmedian(1)), _WITH_NAN)


def test_std_of_a_constant_line_has_a_zero_gradient_like_torch():
    x = X.copy()
    x[:, 1] = 2.0
    run_both(lambda lib, t: (t.std(0), lib.std_mean(t, 0, correction=0)[0], lib.std(t[:, 1])), x)
