"""Special functions, integration, older torch spellings and top-level in-place functions vs torch 2.13."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(0)
_GAMMA_POINTS = np.concatenate([np.linspace(-4.7, -0.1, 13), np.linspace(0.05, 30.0, 40)])
_GAMMA_POINTS = _GAMMA_POINTS[np.abs(_GAMMA_POINTS - np.round(_GAMMA_POINTS)) > 1e-3]  # off the poles


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lgamma_and_digamma_match_torch_with_gradients(dtype):
    x = _GAMMA_POINTS.astype(dtype)
    run_both(lambda lib, t: lib.lgamma(t), x)
    run_both(lambda lib, t: t.digamma(), x, scale=10)
    poles = np.array([0.0, -1.0, 1.0, 2.0], dtype)
    run_both(lambda lib, t: (lib.lgamma(t), lib.digamma(t)), poles, check_grad=False)


def test_trapezoid_rules_match_torch():
    y, x = _RNG.standard_normal((2, 5)), np.sort(_RNG.standard_normal(5))
    run_both(lambda lib, t: (lib.trapezoid(t), lib.trapz(t, dx=2.0), lib.cumulative_trapezoid(t)), y)
    run_both(lambda lib, t, s: (lib.trapezoid(t, s), lib.cumulative_trapezoid(t, s)), y, x)


def test_structured_matrices_combinations_and_index_arithmetic_match_torch():
    v = _RNG.standard_normal(4)
    run_both(lambda lib, t: lib.diagflat(t), _RNG.standard_normal((2, 2)))
    run_both(lambda lib, t: t.diagflat(1), _RNG.standard_normal(3), check_grad=False)  # torch's grad errors
    run_both(lambda lib, t: (lib.vander(t, 4), lib.vander(t, increasing=True)), v, check_grad=False)
    run_both(lambda lib, t: lib.vander(t, 3), np.array([1, 2, 3]))
    run_both(lambda lib, t: (lib.combinations(t), lib.combinations(t, 3, with_replacement=True)), v)
    run_both(lambda lib, t: lib.unravel_index(t, (2, 3)), np.array([4, 5, -1]))
    run_both(lambda lib, a, b: (lib.vdot(a, b), lib.ger(a, b),
                                lib.linalg.multi_dot([a[:, None], b[None, :], a])), v, v[::-1].copy())


def test_older_spellings_match_torch_and_warn_where_torch_does():
    a, b, c = _RNG.standard_normal((2, 3)), _RNG.standard_normal((3, 4)), _RNG.standard_normal((4, 2))
    for name, call in [
        ("chain_matmul", lambda lib: lib.chain_matmul(*(lib.tensor(m) for m in (a, b, c)))),
        ("range", lambda lib: lib.range(0, 2, 0.5)),
        ("nuclear_norm", lambda lib: lib.nuclear_norm(lib.tensor(a))),
        ("frobenius_norm", lambda lib: lib.frobenius_norm(lib.tensor(a), (0, 1))),
    ]:
        results = []
        for lib in (mininn, torch):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                results.append((call(lib), [str(w.message).split(" (Triggered")[0] for w in caught]))
        (ours, our_warnings), (theirs, their_warnings) = results
        assert our_warnings == their_warnings, name
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        assert mininn.range(5, 1, -2).tolist() == [5.0, 3.0, 1.0]
    assert mininn.scalar_tensor(3).dtype is mininn.float32
    assert mininn.fix(mininn.tensor([-1.5])).item() == -1.0


_TOP_LEVEL_INPLACE = ["sin_", "cos_", "tan_", "exp_", "log1p_", "sqrt_", "abs_", "neg_", "floor_", "ceil_",
                      "round_", "trunc_", "sigmoid_", "tanh_", "relu_", "erf_", "rsqrt_", "square_", "zero_"]


@pytest.mark.parametrize("name", _TOP_LEVEL_INPLACE)
def test_top_level_in_place_functions_modify_their_argument_like_torch(name):
    x = np.abs(_RNG.standard_normal((2, 3))) + 0.1
    ours, theirs = mininn.tensor(x), torch.tensor(x)
    assert getattr(mininn, name)(ours) is ours
    getattr(torch, name)(theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_top_level_predicates_fill_and_adjoint_follow_torch():
    for lib in (mininn, torch):
        t = lib.ones(2, 3)
        assert lib.is_signed(t) and lib.is_same_size(t, lib.zeros(2, 3)) and lib.is_nonzero(lib.tensor(2.0))
        assert lib.positive(t) is t and lib.get_device(t) == -1
        assert tuple(lib.adjoint(t).shape) == (3, 2) and tuple(t.adjoint().shape) == (3, 2)
    run_both(lambda lib, t: lib.fill(t * 1, 3.0), _RNG.standard_normal(3))
    leaf = mininn.ones(2, requires_grad=True)
    detached = leaf * 2
    assert mininn.detach_(detached) is detached and not detached.requires_grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_polygamma_mvlgamma_and_frexp_match_torch_with_gradients(dtype):
    x = np.linspace(0.3, 20.0, 15).astype(dtype)
    run_both(lambda lib, t: (lib.polygamma(1, t), lib.polygamma(3, t)), x, scale=10)
    run_both(lambda lib, t: t.polygamma(2), x, scale=10)
    run_both(lambda lib, t: lib.mvlgamma(t + 1, 3), x)
    run_both(lambda lib, t: tuple(lib.frexp(t)), np.array([8.0, 3.0, -0.3, 0.0], dtype))
    a, b = np.array([1.0, 2.0], dtype), np.array([2.0, 1.0], dtype)
    np.testing.assert_array_equal(mininn.nextafter(mininn.tensor(a), mininn.tensor(b)).numpy(),
                                  torch.nextafter(torch.tensor(a), torch.tensor(b)).numpy())


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
@pytest.mark.parametrize("length", [0, 1, 4, 5])
@pytest.mark.parametrize("periodic", [True, False])
def test_signal_windows_match_torch(name, length, periodic):
    ours, theirs = getattr(mininn, name)(length, periodic), getattr(torch, name)(length, periodic)
    assert ours.dtype is mininn.float32 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-6)


def test_strided_views_puts_renorm_histogram_and_factories_match_torch():
    v = _RNG.standard_normal(6)
    run_both(lambda lib, t: lib.as_strided(t, (2, 2), (1, 2), 1), v)
    run_both(lambda lib, t: t.as_strided((3, 3), (1, 1)), v)  # overlapping windows accumulate gradients
    run_both(lambda lib, t, s: t.put(lib.tensor([0, 0, -1]), s, accumulate=True), v.reshape(2, 3),
             v[:3].copy())
    rows = np.array([[1.0, 2], [3, 4], [0.1, 0.2]])
    run_both(lambda lib, t: (lib.renorm(t, 2, 0, 2.0), t.renorm(1, 1, 3.0)), rows)
    run_both(lambda lib, t: (lib.nonzero_static(t, size=3), lib.nonzero_static(t, size=1, fill_value=-5)),
             np.array([0, 1, 0, 2]))
    run_both(lambda lib, t: lib.unsafe_split(t, 2), v)
    for kwargs in (dict(bins=4, range=(0.0, 3.0)), dict(bins=5), dict(bins=3, density=True)):
        ours = mininn.histogram(mininn.tensor([1.0, 2, 1, 2.5]), **kwargs)
        theirs = torch.histogram(torch.tensor([1.0, 2, 1, 2.5]), **kwargs)
        np.testing.assert_allclose(ours.hist.numpy(), theirs.hist.numpy())
        np.testing.assert_allclose(ours.bin_edges.numpy(), theirs.bin_edges.numpy())
    assert mininn.typename(mininn.ones(2)) == torch.typename(torch.ones(2)) and mininn.typename(3) == "int"
    assert mininn.asarray([1, 2.5]).tolist() == [1.0, 2.5]
    assert mininn.empty_strided((2, 3), (1, 2)).shape == (2, 3)
    buffer = bytearray(b"\x01\x00\x00\x00\x02\x00\x00\x00")
    assert mininn.frombuffer(buffer, dtype=mininn.int32).tolist() == [1, 2]
    mininn.manual_seed(0)
    draws = mininn.binomial(mininn.full((4000,), 10.0), mininn.full((4000,), 0.3)).numpy()
    assert abs(draws.mean() - 3.0) < 0.1
