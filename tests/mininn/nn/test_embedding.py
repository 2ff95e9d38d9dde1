"""Embedding and F.embedding against torch 2.13: lookups, gradients, padding_idx, max_norm, init, errors."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, slot_layout, state_layout, to_numpy, twin

torch = pytest.importorskip("torch")

INDICES = np.array([[1, 2, 4, 5], [4, 3, 2, 9], [0, 0, 1, 1]])


def _run(kwargs, idx=INDICES, idx_dtype=np.int64, dtype=np.float64):
    tm = torch.nn.Embedding(10, 3, **kwargs).to(getattr(torch, np.dtype(dtype).name))
    mm = twin(tm, nn.Embedding(10, 3, dtype=np.dtype(dtype).name, **kwargs))
    ty = tm(torch.tensor(idx.astype(idx_dtype)))
    my = mm(mininn.tensor(idx.astype(idx_dtype)))
    cot = np.random.default_rng(0).standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    return tm, mm, ty, my


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", [
    {}, dict(padding_idx=0), dict(padding_idx=-1), dict(scale_grad_by_freq=True),
    dict(padding_idx=1, scale_grad_by_freq=True), dict(max_norm=1.0), dict(max_norm=0.5, norm_type=1.0),
], ids=str)
def test_embedding_matches_torch_lookup_gradient_and_weight(kwargs, dtype):
    tm, mm, ty, my = _run(kwargs, dtype=dtype)
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(to_numpy(mm.weight.grad), to_numpy(tm.weight.grad), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(to_numpy(mm.weight), to_numpy(tm.weight), rtol=1e-6, atol=1e-7)


def test_embedding_accepts_int32_indices_and_any_index_shape():
    for idx in (INDICES.astype(np.int32), INDICES[0], np.array(4)):
        _, _, ty, my = _run({}, idx=idx, idx_dtype=idx.dtype)
        assert tuple(my.shape) == tuple(ty.shape)
        np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-12)


def test_padding_idx_row_gets_no_gradient_even_when_looked_up():
    m = nn.Embedding(5, 2, padding_idx=2)
    m(mininn.tensor([2, 2, 3])).sum().backward()
    np.testing.assert_array_equal(m.weight.grad.numpy()[2], [0.0, 0.0])
    np.testing.assert_array_equal(m.weight.grad.numpy()[3], [1.0, 1.0])


def test_embedding_default_init_is_standard_normal_with_the_padding_row_zeroed():
    mininn.manual_seed(0)
    w = nn.Embedding(2000, 50, padding_idx=3).weight.numpy(force=True)
    np.testing.assert_array_equal(w[3], 0.0)
    rest = np.delete(w, 3, axis=0)
    assert abs(rest.mean()) < 0.01 and rest.std() == pytest.approx(1.0, abs=0.01)


def test_from_pretrained_uses_the_given_weights_and_freezes_them_by_default():
    weights = mininn.tensor([[1.0, 2.0], [3.0, 4.0]])
    frozen = nn.Embedding.from_pretrained(weights)
    assert not frozen.weight.requires_grad
    np.testing.assert_array_equal(frozen(mininn.tensor([1])).numpy(), [[3.0, 4.0]])
    assert nn.Embedding.from_pretrained(weights, freeze=False).weight.requires_grad
    assert repr(frozen) == repr(torch.nn.Embedding.from_pretrained(torch.tensor([[1.0, 2.0], [3.0, 4.0]])))


@pytest.mark.parametrize("args,kwargs", [
    ((10, 4), {}), ((10, 4), dict(padding_idx=0, max_norm=1.0)), ((4, 2), dict(padding_idx=-1)),
    ((4, 2), dict(max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True)),
], ids=str)
def test_embedding_repr_state_dict_and_padding_idx_match_torch(args, kwargs):
    tm, mm = torch.nn.Embedding(*args, **kwargs), nn.Embedding(*args, **kwargs)
    assert repr(mm) == repr(tm)
    assert state_layout(mm) == state_layout(tm)
    assert slot_layout(mm) == slot_layout(tm)
    assert mm.padding_idx == tm.padding_idx


@pytest.mark.parametrize("call", [
    lambda lib, f: f.embedding(lib.ones(3), lib.ones(4, 2)),
    lambda lib, f: f.embedding(lib.tensor([5]), lib.ones(4, 2)),
    lambda lib, f: f.embedding(lib.tensor([-1]), lib.ones(4, 2)),
    lambda lib, f: f.embedding(lib.tensor([1]), lib.ones(4, 2), padding_idx=4),
    lambda lib, f: f.embedding(lib.tensor([1]), lib.ones(4, 2), padding_idx=-5),
    lambda lib, f: lib.nn.Embedding(4, 2, padding_idx=4),
    lambda lib, f: lib.nn.Embedding(4, 2, padding_idx=-5),
    lambda lib, f: lib.nn.Embedding(4, 2, _weight=lib.ones(3, 2)),
    lambda lib, f: lib.nn.Embedding.from_pretrained(lib.ones(3)),
])
def test_embedding_errors_match_torch(call):
    same_error(lambda: call(torch, torch.nn.functional), lambda: call(mininn, F))
