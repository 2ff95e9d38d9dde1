"""Complex tensors against torch 2.13: dtypes, views, polar/complex, parts, gradients, rotary embeddings."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from tests.mininn._tensor_parity import run_both
from tests.mininn.nn._layer_parity import same_error

torch = pytest.importorskip("torch")

FLOATS = [np.float32, np.float64]


def _rand(*shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_complex_dtypes_have_torchs_names_flags_and_aliases():
    assert repr(mininn.complex64) == "mininn.complex64" and mininn.cfloat is mininn.complex64
    assert mininn.cdouble is mininn.complex128
    for ours, theirs in [(mininn.complex64, torch.complex64), (mininn.complex128, torch.complex128)]:
        assert (ours.is_complex, ours.is_floating_point, ours.itemsize) == (
            theirs.is_complex, theirs.is_floating_point, theirs.itemsize)
        assert repr(ours.to_real()).split(".")[1] == repr(theirs.to_real()).split(".")[1]
    assert mininn.float64.to_complex() is mininn.complex128
    assert mininn.tensor([1 + 2j]).dtype is mininn.complex64
    assert mininn.tensor([1.0]).is_complex() is False and mininn.is_complex(mininn.tensor([1j]))


@pytest.mark.parametrize("values", [[1 + 2j, 3.5 - 1j], [[1 + 2j], [3 - 1e-5j]], [0.5 + 0.25j]])
def test_complex_repr_matches_torch(values):
    ours = repr(mininn.tensor(values))
    assert ours == repr(torch.tensor(values)).replace("torch.", "mininn.")
    assert repr(mininn.tensor(values, dtype=mininn.complex128)).endswith("dtype=mininn.complex128)")


@pytest.mark.parametrize("dtype", FLOATS)
def test_view_as_complex_and_back_match_torch_with_gradients(dtype):
    x = _rand(2, 3, 2, dtype=dtype)
    run_both(lambda lib, t: lib.view_as_real(lib.view_as_complex(t) * lib.view_as_complex(t)), x)
    run_both(lambda lib, t: lib.view_as_complex(t).abs(), x)
    run_both(lambda lib, t: lib.view_as_complex(t).angle(), x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_polar_complex_real_imag_and_conj_match_torch_with_gradients(dtype):
    r, theta = np.abs(_rand(3, 4, dtype=dtype)) + 0.1, _rand(4, dtype=dtype, seed=1)
    run_both(lambda lib, a, b: lib.view_as_real(lib.polar(a, b)), r, theta)
    run_both(lambda lib, a, b: lib.view_as_real(lib.complex(a, b)), r, theta)
    run_both(lambda lib, a, b: (lib.complex(a, b).real, lib.complex(a, b).imag), r, theta)
    run_both(lambda lib, a, b: lib.view_as_real(lib.complex(a, b).conj() * lib.polar(a, b)), r, theta)
    run_both(lambda lib, a, b: lib.view_as_real(lib.complex(a, b) / lib.polar(a, b)), r, theta)
    run_both(lambda lib, a, b: lib.view_as_real(lib.complex(a, b) * a), r, theta)  # real promotes
    run_both(lambda lib, a, b: lib.view_as_real(lib.exp(lib.complex(a, b))), r, theta)
    run_both(lambda lib, a: lib.view_as_real(lib.complex(a, a) * (1 - 2j)), r)


@pytest.mark.parametrize("dtype", FLOATS)
def test_llama_rotary_embedding_output_and_gradients_match_torch(dtype):
    def rope(lib, xq, freqs):
        freqs_cis = lib.polar(lib.ones_like(freqs), freqs)  # (T, hs/2)
        xq_ = lib.view_as_complex(xq.reshape(*xq.shape[:-1], -1, 2))  # (B, T, nh, hs/2)
        freqs_cis = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
        return lib.view_as_real(xq_ * freqs_cis).flatten(3).type_as(xq)

    run_both(rope, _rand(2, 5, 3, 8, dtype=dtype), _rand(5, 4, dtype=dtype, seed=1))


def test_complex_promotion_follows_torch():
    c64 = mininn.ones(2, dtype=mininn.complex64)
    assert (c64 * mininn.ones(2, dtype=mininn.float64)).dtype is mininn.complex128
    assert (c64 * mininn.tensor(2.0, dtype=mininn.float64)).dtype is mininn.complex64
    assert (mininn.ones(2, dtype=mininn.float64) * mininn.tensor(1j, dtype=mininn.complex64)).dtype \
        is mininn.complex128
    assert (mininn.ones(2) * (1 + 2j)).dtype is mininn.complex64
    assert (mininn.ones(2, dtype=mininn.int64) * (1 + 2j)).dtype is mininn.complex64


def test_real_of_a_real_tensor_is_itself_and_complex_tensors_require_grad():
    x = mininn.ones(2)
    assert x.real is x and x.conj() is x
    z = mininn.zeros(2, dtype=mininn.complex64).requires_grad_()
    assert z.requires_grad


@pytest.mark.parametrize("call", [
    lambda lib: lib.view_as_complex(lib.randn(3, 3)),
    lambda lib: lib.view_as_complex(lib.arange(4).reshape(2, 2)),
    lambda lib: lib.view_as_real(lib.randn(3)),
    lambda lib: lib.polar(lib.ones(2), lib.ones(2).double()),
    lambda lib: lib.polar(lib.ones(2, dtype=lib.int64), lib.ones(2, dtype=lib.int64)),
    lambda lib: lib.complex(lib.ones(2), lib.ones(2).double()),
    lambda lib: lib.randn(3).imag,
    lambda lib: lib.zeros(1, dtype=lib.complex64, requires_grad=True).sum().backward(),
])
def test_complex_misuse_raises_torchs_error(call):
    same_error(lambda: call(torch), lambda: call(mininn))


def test_complex_matmul_and_einsum_gradients_match_torch():
    a, b = _rand(2, 3, 2), _rand(3, 4, 2, seed=1)
    run_both(lambda lib, x, y: lib.view_as_real(lib.view_as_complex(x) @ lib.view_as_complex(y)), a, b)
    run_both(lambda lib, x, y: lib.view_as_real(lib.einsum("ij,jk->ik", lib.view_as_complex(x),
                                                           lib.view_as_complex(y))), a, b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sgn_matches_torch(dtype):
    z = np.concatenate([_rand(3, 2, dtype=dtype), np.zeros((1, 2), dtype)])
    run_both(lambda lib, t: lib.view_as_real(lib.sgn(lib.view_as_complex(t))), z)
    run_both(lambda lib, t: t.sgn(), _rand(4, dtype=dtype), check_grad=False)  # torch's grad is a ZeroTensor
