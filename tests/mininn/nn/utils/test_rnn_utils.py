"""``mininn.nn.utils.rnn`` (PackedSequence, pack/pad helpers) against ``torch.nn.utils.rnn``."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn.nn.utils import rnn as mrnn
from tests.mininn.nn._layer_parity import same_error, to_numpy

torch = pytest.importorskip("torch")
trnn = torch.nn.utils.rnn


def _rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _same_packed(m, t):
    np.testing.assert_array_equal(to_numpy(m.data), to_numpy(t.data))
    assert m.batch_sizes.tolist() == t.batch_sizes.tolist()
    for mi, ti in ((m.sorted_indices, t.sorted_indices), (m.unsorted_indices, t.unsorted_indices)):
        assert (mi is None and ti is None) or mi.tolist() == ti.tolist()


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize(("lengths", "enforce_sorted"), [
    ([5, 3, 3, 1], True),
    ([3, 5, 1, 3], False),
    ([3, 3, 3], False),  # ties keep their order
    ([4, 4, 2], True),  # shorter than the padded length
])
def test_pack_padded_sequence_matches_torch(lengths, enforce_sorted, batch_first):
    shape = (len(lengths), 5, 2) if batch_first else (5, len(lengths), 2)
    x = _rand(shape)
    t = trnn.pack_padded_sequence(torch.tensor(x), lengths, batch_first, enforce_sorted)
    m = mrnn.pack_padded_sequence(mininn.tensor(x), lengths, batch_first, enforce_sorted)
    _same_packed(m, t)
    assert m.batch_sizes.dtype == mininn.int64


def test_pack_padded_sequence_takes_lengths_as_a_tensor():
    x = _rand((4, 3))
    t = trnn.pack_padded_sequence(torch.tensor(x), torch.tensor([2, 4, 1]), enforce_sorted=False)
    m = mrnn.pack_padded_sequence(mininn.tensor(x), mininn.tensor([2, 4, 1]), enforce_sorted=False)
    _same_packed(m, t)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("total_length", [None, 7])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pad_packed_sequence_matches_torch_values_and_gradients(batch_first, total_length, enforce_sorted):
    lengths = [5, 4, 2] if enforce_sorted else [2, 5, 4]
    x = _rand((5, 3, 2))
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    t_packed = trnn.pack_padded_sequence(tx, lengths, enforce_sorted=enforce_sorted)
    m_packed = mrnn.pack_padded_sequence(mx, lengths, enforce_sorted=enforce_sorted)
    t_pad, t_len = trnn.pad_packed_sequence(t_packed, batch_first, -1.5, total_length)
    m_pad, m_len = mrnn.pad_packed_sequence(m_packed, batch_first, -1.5, total_length)
    np.testing.assert_array_equal(to_numpy(m_pad), to_numpy(t_pad))
    assert m_len.tolist() == t_len.tolist()
    cot = _rand(tuple(t_pad.shape), 1)
    t_pad.backward(torch.tensor(cot))
    m_pad.backward(mininn.tensor(cot))
    np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch_values_and_gradients(batch_first, padding_side):
    arrays = [_rand((n, 2, 3), n) for n in (2, 5, 1)]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    ms = [mininn.tensor(a, requires_grad=True) for a in arrays]
    t = trnn.pad_sequence(ts, batch_first, 0.5, padding_side)
    m = mrnn.pad_sequence(ms, batch_first, 0.5, padding_side)
    np.testing.assert_array_equal(to_numpy(m), to_numpy(t))
    cot = _rand(tuple(t.shape), 9)
    t.backward(torch.tensor(cot))
    m.backward(mininn.tensor(cot))
    for mi, ti in zip(ms, ts):
        np.testing.assert_allclose(to_numpy(mi.grad), to_numpy(ti.grad), rtol=1e-12, atol=1e-12)


def test_pad_sequence_of_integers_casts_the_padding_value_as_torch():
    t = trnn.pad_sequence([torch.tensor([1, 2]), torch.tensor([3])], padding_value=1.5)
    m = mrnn.pad_sequence([mininn.tensor([1, 2]), mininn.tensor([3])], padding_value=1.5)
    assert m.tolist() == t.tolist() and m.dtype == mininn.int64


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_and_unpack_sequence_match_torch(enforce_sorted):
    lengths = (4, 3, 1) if enforce_sorted else (3, 4, 1)
    arrays = [_rand((n, 2), n) for n in lengths]
    t = trnn.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted)
    m = mrnn.pack_sequence([mininn.tensor(a) for a in arrays], enforce_sorted)
    _same_packed(m, t)
    for mi, a in zip(mrnn.unpack_sequence(m), arrays):
        np.testing.assert_array_equal(to_numpy(mi), a)


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_matches_torch(batch_first):
    x = _rand((3, 4, 2) if batch_first else (4, 3, 2))
    t = trnn.unpad_sequence(torch.tensor(x).clone(), torch.tensor([4, 1, 3]), batch_first)
    m = mrnn.unpad_sequence(mininn.tensor(x), mininn.tensor([4, 1, 3]), batch_first)
    assert len(m) == len(t)
    for mi, ti in zip(m, t):
        np.testing.assert_array_equal(to_numpy(mi), to_numpy(ti))


def test_packed_sequence_is_a_named_tuple_with_torch_fields_and_repr():
    m = mrnn.PackedSequence(mininn.tensor([1.0, 2.0, 3.0]), mininn.tensor([2, 1]), mininn.tensor([1, 0]))
    t = trnn.PackedSequence(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2, 1]), torch.tensor([1, 0]))
    assert m._fields == t._fields
    assert repr(m) == repr(t)
    data, batch_sizes, sorted_indices, unsorted_indices = m
    assert unsorted_indices.tolist() == [1, 0]
    assert mrnn.PackedSequence((data, batch_sizes)).sorted_indices is None


def test_packed_sequence_to_converts_data_only():
    m = mrnn.pack_sequence([mininn.tensor([1.0, 2.0]), mininn.tensor([3.0])])
    assert m.to(mininn.float32) is m
    double = m.double()
    assert double.data.dtype == mininn.float64 and double.batch_sizes.dtype == mininn.int64
    assert not m.is_cuda


def test_invert_permutation_matches_torch():
    perm = [2, 0, 3, 1]
    assert mrnn.invert_permutation(mininn.tensor(perm)).tolist() == \
        trnn.invert_permutation(torch.tensor(perm)).tolist()
    assert mrnn.invert_permutation(None) is None


PACK_ERRORS = [([3, 5, 2], True), ([5, 3, 0], True), ([3, 5, 0], True), ([5, 3], True), ([0, 5], True),
               ([5, 3, 0], False)]


@pytest.mark.parametrize(("lengths", "enforce_sorted"), PACK_ERRORS, ids=str)
def test_bad_lengths_raise_torch_errors(lengths, enforce_sorted):
    x = _rand((5, 3, 4))
    same_error(lambda: trnn.pack_padded_sequence(torch.tensor(x), lengths, enforce_sorted=enforce_sorted),
               lambda: mrnn.pack_padded_sequence(mininn.tensor(x), lengths, enforce_sorted=enforce_sorted))


def test_lengths_longer_than_the_padded_batch_raise():
    with pytest.raises(ValueError, match="must not exceed the padded length 5"):
        mrnn.pack_padded_sequence(mininn.zeros(5, 2), [6, 3])


def test_total_length_shorter_than_the_longest_sequence_raises_torch_error():
    lengths = [5, 2]
    x = _rand((5, 2, 1))
    same_error(lambda: trnn.pad_packed_sequence(trnn.pack_padded_sequence(torch.tensor(x), lengths),
                                                total_length=4),
               lambda: mrnn.pad_packed_sequence(mrnn.pack_padded_sequence(mininn.tensor(x), lengths),
                                                total_length=4))


@pytest.mark.parametrize("case", ["not_iterable", "empty", "side", "trailing"])
def test_bad_pad_sequence_arguments_raise_torch_errors(case):
    def call(lib, rnn):
        if case == "not_iterable":
            return rnn.pad_sequence(5)
        if case == "empty":
            return rnn.pad_sequence([])
        if case == "side":
            return rnn.pad_sequence([lib.zeros(3, 2)], padding_side="middle")
        return rnn.pad_sequence([lib.zeros(2, 3, 4), lib.zeros(2, 3, 5)])

    same_error(lambda: call(torch, trnn), lambda: call(mininn, mrnn))
