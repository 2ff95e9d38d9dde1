"""Embedding, EmbeddingBag, F.embedding(_bag) and F.one_hot against torch 2.13: lookups, gradients,
padding_idx, max_norm, bags and offsets, per-sample weights, init, errors."""

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


# ---- EmbeddingBag and F.embedding_bag ------------------------------------------------------------

FLAT = np.array([1, 2, 4, 5, 4, 3, 2, 9, 2, 2, 7])
BAG_CASES = [  # module kwargs, input, offsets (None: 2-D input)
    (dict(mode="sum"), FLAT, [0, 4, 4, 8]),
    (dict(mode="mean"), FLAT, [0, 4, 4, 8]),
    (dict(mode="max"), FLAT, [0, 4, 4, 8]),
    (dict(mode="mean"), INDICES, None),
    (dict(mode="max"), INDICES, None),
    (dict(mode="sum", padding_idx=2), FLAT, [0, 3, 8, 10]),
    (dict(mode="mean", padding_idx=2), FLAT, [0, 3, 8, 10]),
    (dict(mode="max", padding_idx=-8), FLAT, [0, 3, 8, 10]),
    (dict(mode="mean", include_last_offset=True), FLAT, [0, 4, 6, 11]),
    (dict(mode="max", include_last_offset=True), FLAT, [0, 4, 4, 11]),
    (dict(mode="sum", scale_grad_by_freq=True), np.array([1, 1, 3, 3, 5, 5, 2, 2]), [0, 5]),
]


def _bag_run(kwargs, idx, offsets, dtype=np.float64, psw=None, idx_dtype=np.int64):
    """Output, weight grad and per-sample-weight grad of torch's EmbeddingBag and its twin."""
    tm = torch.nn.EmbeddingBag(10, 3, **kwargs).to(getattr(torch, np.dtype(dtype).name))
    mm = twin(tm, nn.EmbeddingBag(10, 3, dtype=np.dtype(dtype).name, **kwargs))
    results = []
    for lib, m in ((torch, tm), (mininn, mm)):
        args = [lib.tensor(idx.astype(idx_dtype))]
        args.append(None if offsets is None else lib.tensor(np.array(offsets, dtype=idx_dtype)))
        w = None if psw is None else lib.tensor(psw.astype(dtype), requires_grad=True)
        y = m(*args, per_sample_weights=w)
        cot = np.random.default_rng(0).standard_normal(tuple(y.shape)).astype(dtype)
        y.backward(lib.tensor(cot))
        results.append([to_numpy(y), to_numpy(m.weight.grad)] + ([] if w is None else [to_numpy(w.grad)]))
    return results


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs,idx,offsets", BAG_CASES, ids=str)
def test_embedding_bag_matches_torch_output_and_weight_gradient(kwargs, idx, offsets, dtype):
    theirs, ours = _bag_run(kwargs, idx, offsets, dtype)
    t = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    for k, (o, e) in enumerate(zip(ours, theirs)):
        assert o.shape == e.shape and o.dtype == e.dtype
        np.testing.assert_allclose(o, e, **t, err_msg=str(k))


@pytest.mark.parametrize("kwargs,idx,offsets", [
    (dict(mode="sum"), FLAT, [0, 4, 4, 8]), (dict(mode="sum", padding_idx=2), INDICES, None),
    (dict(mode="sum", include_last_offset=True), FLAT, [0, 4, 11]),
], ids=str)
def test_embedding_bag_per_sample_weights_get_torchs_gradient(kwargs, idx, offsets):
    psw = np.random.default_rng(1).standard_normal(idx.shape)
    theirs, ours = _bag_run(kwargs, idx, offsets, psw=psw)
    for o, e in zip(ours, theirs):
        np.testing.assert_allclose(o, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scales_gradients_by_the_true_index_frequency(mode):
    # torch 2.13's CPU embedding_bag divides some rows by another index's count (pytorch#190063); its
    # embedding kernel is right, and a bag's sum or mean over embedding rows is the same function
    weight = np.random.default_rng(4).standard_normal((10, 3))
    cot = np.random.default_rng(5).standard_normal((3, 3))
    tw = torch.tensor(weight, requires_grad=True)
    rows = torch.nn.functional.embedding(torch.tensor(INDICES), tw, padding_idx=4, scale_grad_by_freq=True)
    keep = torch.tensor(INDICES != 4).unsqueeze(-1)
    bags = (rows * keep).sum(1)
    if mode == "mean":
        bags = bags / keep.sum(1)
    bags.backward(torch.tensor(cot))
    mw = mininn.tensor(weight, requires_grad=True)
    F.embedding_bag(mininn.tensor(INDICES), mw, mode=mode, scale_grad_by_freq=True, padding_idx=4).backward(
        mininn.tensor(cot))
    np.testing.assert_allclose(mw.grad.numpy(), to_numpy(tw.grad), rtol=1e-12)


def test_embedding_bag_ends_the_last_bag_at_the_last_offset_with_include_last_offset():
    # documented semantics; torch 2.13's CPU kernels disagree with each other past the last offset
    weight = np.random.default_rng(6).standard_normal((10, 3))
    y = F.embedding_bag(mininn.tensor(FLAT), mininn.tensor(weight), mininn.tensor([0, 4, 6, 9]), mode="mean",
                        include_last_offset=True)
    np.testing.assert_allclose(y.numpy()[2], weight[FLAT[6:9]].mean(axis=0), rtol=1e-12)


def test_embedding_bag_without_offsets_entries_has_no_bags():
    y = F.embedding_bag(mininn.tensor(FLAT), mininn.randn(10, 3), mininn.tensor(np.array([], dtype=np.int64)))
    assert tuple(y.shape) == (0, 3)


def test_embedding_bag_accepts_int32_indices_and_offsets():
    theirs, ours = _bag_run(dict(mode="sum"), FLAT, [0, 4], idx_dtype=np.int32)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)


def test_embedding_bag_max_norm_renormalises_the_looked_up_rows_like_torch():
    weight = np.random.default_rng(2).standard_normal((10, 3)) * 3
    outs = []
    for lib in (torch, mininn):
        w = lib.tensor(weight.copy())
        y = lib.nn.functional.embedding_bag(lib.tensor(FLAT), w, lib.tensor(np.array([0, 5])), max_norm=1.5,
                                            norm_type=3.0, mode="sum")
        outs.append((to_numpy(y), to_numpy(w)))
    np.testing.assert_allclose(outs[1][0], outs[0][0], rtol=1e-12)
    np.testing.assert_allclose(outs[1][1], outs[0][1], rtol=1e-12)


@pytest.mark.parametrize("kwargs", [
    {}, dict(mode="sum", padding_idx=2),
    dict(max_norm=1.0, norm_type=3.0, scale_grad_by_freq=True, mode="sum", padding_idx=-1,
         include_last_offset=True, sparse=True),
], ids=str)
def test_embedding_bag_repr_attributes_and_state_dict_match_torch(kwargs):
    tm, mm = torch.nn.EmbeddingBag(10, 3, **kwargs), nn.EmbeddingBag(10, 3, **kwargs)
    assert repr(mm) == repr(tm)
    assert state_layout(mm) == state_layout(tm)
    names = set(vars(tm)) - set(vars(torch.nn.Module()))
    assert {k: getattr(mm, k) for k in names} == {k: getattr(tm, k) for k in names}


def test_embedding_bag_default_weight_is_standard_normal_with_a_zero_padding_row():
    mininn.manual_seed(0)
    w = nn.EmbeddingBag(400, 50, padding_idx=3).weight.numpy(force=True)
    assert not w[3].any()
    rest = np.delete(w, 3, axis=0)
    assert abs(rest.mean()) < 0.02 and abs(rest.std() - 1) < 0.02


@pytest.mark.parametrize("freeze", [True, False])
def test_embedding_bag_from_pretrained_uses_the_given_table(freeze):
    table = np.arange(12.0).reshape(4, 3)
    mm = nn.EmbeddingBag.from_pretrained(mininn.tensor(table), freeze=freeze, mode="max", padding_idx=1)
    tm = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table), freeze=freeze, mode="max", padding_idx=1)
    assert mm.weight.requires_grad == tm.weight.requires_grad == (not freeze)
    assert repr(mm) == repr(tm)
    x = np.array([[0, 1, 2], [1, 1, 3]])
    np.testing.assert_array_equal(mm(mininn.tensor(x)).numpy(force=True), to_numpy(tm(torch.tensor(x))))


@pytest.mark.parametrize("call", [
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w),
    lambda lib, f, w: f.embedding_bag(lib.tensor(INDICES), w, lib.tensor([0, 2])),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([[0, 2]])),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 2]), mode="foo"),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 2]),
                                      per_sample_weights=lib.ones(11)),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 2]), mode="sum",
                                      per_sample_weights=lib.ones(7)),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 2]), mode="sum",
                                      per_sample_weights=lib.ones(11, dtype=lib.float64)),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 2]), mode="max",
                                      scale_grad_by_freq=True),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT).float(), w, lib.tensor([0, 2])),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0.0, 2.0])),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([1, 4])),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 12])),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT) - 2, w, lib.tensor([0, 4])),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT).reshape(1, 1, 11), w),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 4]), padding_idx=10),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w, lib.tensor([0, 4]), padding_idx=-11),
    lambda lib, f, w: f.embedding_bag(lib.tensor(FLAT), w[0], lib.tensor([0, 4])),
    lambda lib, f, w: lib.nn.EmbeddingBag(10, 3, padding_idx=10),
    lambda lib, f, w: lib.nn.EmbeddingBag(10, 3, _weight=lib.ones(3, 3)),
    lambda lib, f, w: lib.nn.EmbeddingBag.from_pretrained(lib.ones(3)),
])
def test_embedding_bag_errors_match_torch(call):
    w = np.random.default_rng(3).standard_normal((10, 3)).astype(np.float32)
    same_error(lambda: call(torch, torch.nn.functional, torch.tensor(w)),
               lambda: call(mininn, F, mininn.tensor(w)))


# ---- F.one_hot ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("values,num_classes", [([0, 2, 1], -1), ([[0, 2], [3, 1]], 5), ([], 4), (2, 4)],
                         ids=str)
def test_one_hot_matches_torch(values, num_classes):
    ours = F.one_hot(mininn.tensor(np.array(values, dtype=np.int64)), num_classes)
    theirs = torch.nn.functional.one_hot(torch.tensor(np.array(values, dtype=np.int64)), num_classes)
    assert ours.dtype == mininn.int64 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("values,num_classes,dtype", [
    ([0, 2, 1], 2, "int64"), ([0, -1, 1], 3, "int64"), ([0, -1, 1], -1, "int64"), ([0.0, 1.0], -1, "float32"),
    ([0, 1], -1, "int32"), ([], -1, "int64"), ([[0, 1]], -2, "int64"), ([[0, 1]], 0, "int64"),
], ids=str)
def test_one_hot_errors_match_torch(values, num_classes, dtype):
    same_error(lambda: torch.nn.functional.one_hot(torch.tensor(np.array(values, dtype=dtype)), num_classes),
               lambda: F.one_hot(mininn.tensor(np.array(values, dtype=dtype)), num_classes))
