"""Shape ops, indexing, joining and sorting against torch 2.13 (values and gradients)."""

import numpy as np
import pytest
from _tensor_parity import run_both
from hypothesis import given, settings
from hypothesis import strategies as st

import mininn

torch = pytest.importorskip("torch")


def _rand(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


SHAPE_OPS = {
    "view": lambda lib, a: a.view(6, 4),
    "view_tuple_infer": lambda lib, a: a.view((-1, 3)),
    "reshape": lambda lib, a: lib.reshape(a, (4, -1)),
    "view_as": lambda lib, a: a.view_as(a.sum(0).repeat(2, 1)),
    "reshape_as": lambda lib, a: a.reshape_as(a.reshape(4, 6)),
    "permute": lambda lib, a: a.permute(2, 0, 1),
    "permute_tuple": lambda lib, a: lib.permute(a, (1, 2, 0)),
    "transpose": lambda lib, a: a.transpose(0, -1),
    "swapaxes": lambda lib, a: lib.swapaxes(a, 0, 1),
    "T_2d": lambda lib, a: a[0].T,
    "mT": lambda lib, a: a.mT,
    "t": lambda lib, a: a[0].t(),
    "flatten": lambda lib, a: a.flatten(),
    "flatten_range": lambda lib, a: lib.flatten(a, 1),
    "unflatten": lambda lib, a: a.unflatten(2, (2, -1)),
    "unsqueeze": lambda lib, a: a.unsqueeze(-1),
    "squeeze_all": lambda lib, a: a.unsqueeze(1).unsqueeze(0).squeeze(),
    "squeeze_dim": lambda lib, a: a[:, :1].squeeze(1),
    "squeeze_noop": lambda lib, a: a.squeeze(0),
    "squeeze_tuple": lambda lib, a: a[:1, :1].squeeze((0, 1)),
    "expand": lambda lib, a: a[:, :1].expand(2, 3, 4),
    "expand_new_dims": lambda lib, a: a[0, 0].expand(5, -1),
    "expand_as": lambda lib, a: a[0].expand_as(a),
    "flip": lambda lib, a: a.flip(0, 2),
    "roll": lambda lib, a: a.roll(1, 2),
    "roll_flat": lambda lib, a: a.roll(5),
    "roll_multi": lambda lib, a: a.roll((1, -1), (0, 1)),
    "repeat": lambda lib, a: a.repeat(2, 1, 3),
    "repeat_new_dims": lambda lib, a: a[0].repeat(2, 1, 1),
    "tile": lambda lib, a: a.tile((2,)),
    "movedim": lambda lib, a: a.movedim(0, -1),
    "contiguous": lambda lib, a: a.transpose(0, 1).contiguous(),
    "narrow": lambda lib, a: a.narrow(2, 1, 2),
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_op_matches_torch(name):
    run_both(SHAPE_OPS[name], _rand((2, 3, 4)))


INDEX_OPS = {
    "int": lambda lib, a: a[1],
    "negative_int": lambda lib, a: a[-1, -2],
    "slice": lambda lib, a: a[1:, ::2],
    "negative_slice": lambda lib, a: a[:, -2:],
    "ellipsis": lambda lib, a: a[..., 0],
    "none": lambda lib, a: a[None, :, None],
    "list": lambda lib, a: a[[0, 2, 2]],
    "repeated_int_tensor": lambda lib, a: a[lib.tensor([0, 0, 1])],
    "two_index_tensors": lambda lib, a: a[lib.tensor([0, 1]), lib.tensor([2, 3])],
    "index_tensor_and_slice": lambda lib, a: a[:, lib.tensor([[0, 1], [1, 1]])],
    "bool_mask": lambda lib, a: a[a > 0],
    "row_mask": lambda lib, a: a[lib.tensor([True, False, True])],
    "mixed": lambda lib, a: a[1:, lib.tensor([3, 0])],
    "gather": lambda lib, a: a.gather(1, lib.tensor([[0, 0], [3, 1], [2, 2]])),
    "gather_dim0": lambda lib, a: lib.gather(a, 0, lib.tensor([[2, 1, 0, 0]])),
    "index_select": lambda lib, a: a.index_select(1, lib.tensor([3, 3, 0])),
    "masked_select": lambda lib, a: a.masked_select(a > 0.1),
    "masked_select_broadcast": lambda lib, a: lib.masked_select(a, lib.tensor([True, False, True, True])),
}


@pytest.mark.parametrize("name", sorted(INDEX_OPS))
def test_indexing_matches_torch_and_accumulates_repeated_indices(name):
    run_both(INDEX_OPS[name], _rand((3, 4), seed=1))


JOIN_OPS = {
    "cat": lambda lib, a, b: lib.cat([a, b, a], 0),
    "cat_dim1": lambda lib, a, b: lib.cat((a, a[:, :1]), dim=1),
    "concat": lambda lib, a, b: lib.concat([a, b], -1),
    "cat_promotes": lambda lib, a, b: lib.cat([a, b.float()]),
    "cat_skips_legacy_empty": lambda lib, a, b: lib.cat([a, lib.zeros(0, dtype=a.dtype), b]),
    "stack": lambda lib, a, b: lib.stack([a, b]),
    "stack_last": lambda lib, a, b: lib.stack((a, b, a), dim=-1),
    "split": lambda lib, a, b: a.split(2, 1),
    "split_sizes": lambda lib, a, b: lib.split(a, [1, 3], dim=1),
    "chunk": lambda lib, a, b: a.chunk(3, 1),
    "chunk_uneven": lambda lib, a, b: lib.chunk(b, 2, 0),
    "unbind": lambda lib, a, b: a.unbind(1),
    "unbind_fn": lambda lib, a, b: lib.unbind(b),
    "split_partial_use": lambda lib, a, b: a.split(1, 1)[2],
}


@pytest.mark.parametrize("name", sorted(JOIN_OPS))
def test_join_and_split_match_torch(name):
    run_both(JOIN_OPS[name], _rand((3, 4), seed=2), _rand((3, 4), seed=3))


def test_iterating_a_tensor_yields_its_rows_with_gradients():
    run_both(lambda lib, a: [row * (i + 1) for i, row in enumerate(a)], _rand((3, 2)))


SORT_OPS = {
    "sort": lambda lib, a: a.sort(),
    "sort_desc_dim0": lambda lib, a: a.sort(0, descending=True),
    "argsort": lambda lib, a: a.argsort(dim=1),
    "topk": lambda lib, a: a.topk(2),
    "topk_smallest": lambda lib, a: lib.topk(a, 3, dim=0, largest=False),
}


@pytest.mark.parametrize("name", sorted(SORT_OPS))
def test_sort_and_topk_match_torch(name):
    run_both(SORT_OPS[name], _rand((4, 5), seed=4))


def test_nonzero_and_where_with_one_argument_match_torch():
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    run_both(lambda lib, x: x.nonzero(), a)
    run_both(lambda lib, x: lib.nonzero(x, as_tuple=True), a)
    run_both(lambda lib, x: lib.where(x != 0), a)


def test_setitem_under_no_grad_writes_in_place_like_torch():
    for key, value in [(0, 5.0), ((slice(None), 1), -1.0), ([0, 2], 7.0), ("mask", 0.0)]:
        ours, theirs = mininn.zeros(3, 4), torch.zeros(3, 4)
        ours[1:, 2] = 3.0
        theirs[1:, 2] = 3.0
        k_ours = ours > 1 if key == "mask" else key
        k_theirs = theirs > 1 if key == "mask" else key
        with mininn.no_grad():
            ours[k_ours] = value
        theirs[k_theirs] = value
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_setitem_with_tensor_value_broadcasts():
    ours, theirs = mininn.zeros(2, 3), torch.zeros(2, 3)
    ours[:, :] = mininn.tensor([1.0, 2.0, 3.0])
    theirs[:, :] = torch.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_setitem_on_a_non_leaf_is_recorded_like_torch():
    def fn(lib, a, v):
        y = a * 2
        y[0] = v
        y[1, 1:] = v * 3
        return y

    run_both(fn, _rand((3, 3)), np.array(1.5))


def test_views_share_memory_with_their_base():
    x = mininn.zeros(2, 3)
    with mininn.no_grad():
        x[0].fill_(1.0)
        x.view(6)[5] = 4.0
        x.t()[0, 1] = 2.0
    assert x.tolist() == [[1.0, 1.0, 1.0], [2.0, 0.0, 4.0]]


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_basic_slices_match_torch(data):
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    key = []
    for n in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "all"]))
        if kind == "int":
            key.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = data.draw(st.integers(-n, n))
            stop = data.draw(st.integers(-n, n))
            step = data.draw(st.integers(1, 3))
            key.append(slice(start, stop, step))
        else:
            key.append(slice(None))
    run_both(lambda lib, a: a[tuple(key)], _rand(tuple(shape), seed=5))
