"""Every error a torch user can hit through the Tensor API raises torch's exception
type with torch's message, character for character (``torch.Size`` reads ``mininn.Size``).
The reference is torch 2.13 itself, run side by side.
"""

import copy  # noqa: F401 - used by a case

import pytest
from _tensor_parity import torch_error

import mininn

torch = pytest.importorskip("torch")

CASES = {
    "broadcast": lambda lib: lib.ones(3) + lib.ones(4),
    "broadcast2": lambda lib: lib.ones(2,3) * lib.ones(2),
    "bool_sub": lambda lib: lib.tensor([True]) - lib.tensor([False]),
    "bool_neg": lambda lib: -lib.tensor([True]),
    "int_neg_pow": lambda lib: lib.tensor([2]) ** -1,
    "int_zero_div": lambda lib: lib.tensor([2]) // 0,
    "int_zero_rem": lambda lib: lib.tensor([2]) % lib.tensor([0]),
    "mean_int": lambda lib: lib.tensor([1,2]).mean(),
    "var_int": lambda lib: lib.tensor([1,2]).var(),
    "softmax_int": lambda lib: lib.tensor([1,2]).softmax(0),
    "logsoftmax_int": lambda lib: lib.tensor([1,2]).log_softmax(0),
    "max_empty": lambda lib: lib.ones(0).max(),
    "max_dim_empty": lambda lib: lib.ones(0,3).max(0),
    "dim_range": lambda lib: lib.ones(2,3).sum(5),
    "dup_dims": lambda lib: lib.ones(2,3).sum((0,0)),
    "reshape_bad": lambda lib: lib.ones(12).reshape(5,3),
    "reshape_2neg": lambda lib: lib.ones(12).reshape(-1,-1),
    "view_bad": lambda lib: lib.ones(12).view(-1,5),
    "permute_len": lambda lib: lib.ones(2,3).permute(0),
    "permute_dup": lambda lib: lib.ones(2,3).permute(0,0),
    "t_3d": lambda lib: lib.ones(2,3,4).t(),
    "expand_bad": lambda lib: lib.ones(3).expand(2,4),
    "expand_few": lambda lib: lib.ones(2,3).expand(3),
    "expand_lead_neg": lambda lib: lib.ones(3).expand(-1,3),
    "flatten_bad": lambda lib: lib.ones(2,3,4).flatten(2,1),
    "repeat_few": lambda lib: lib.ones(2,3).repeat(2),
    "idx_oob": lambda lib: lib.ones(3)[5],
    "idx_oob_adv": lambda lib: lib.ones(3)[lib.tensor([5])],
    "idx_too_many": lambda lib: lib.ones(3)[0,0],
    "idx_float": lambda lib: lib.ones(3)[lib.tensor([1.0])],
    "matmul_0d": lambda lib: lib.tensor(1.) @ lib.ones(3),
    "matmul_2d": lambda lib: lib.ones(2,3) @ lib.ones(4,5),
    "matmul_1d": lambda lib: lib.ones(3) @ lib.ones(4),
    "matmul_dtype": lambda lib: lib.ones(2,3) @ lib.ones(3,2, dtype=lib.float64),
    "matmul_mv": lambda lib: lib.ones(2,3) @ lib.ones(4),
    "matmul_3d": lambda lib: lib.ones(2,2,3) @ lib.ones(4,5),
    "matmul_batch": lambda lib: lib.ones(2,2,3) @ lib.ones(3,3,5),
    "mm_1d": lambda lib: lib.mm(lib.ones(3), lib.ones(3,2)),
    "bmm_2d": lambda lib: lib.bmm(lib.ones(3,2), lib.ones(3,2,2)),
    "bmm_shape": lambda lib: lib.bmm(lib.ones(3,2,4), lib.ones(2,4,2)),
    "dot_2d": lambda lib: lib.dot(lib.ones(2,2), lib.ones(2)),
    "cat_empty": lambda lib: lib.cat([]),
    "cat_dim": lambda lib: lib.cat([lib.ones(2,3), lib.ones(2)]),
    "cat_size": lambda lib: lib.cat([lib.ones(2,3), lib.ones(3,3)], 1),
    "stack_empty": lambda lib: lib.stack([]),
    "stack_size": lambda lib: lib.stack([lib.ones(2,3), lib.ones(2,4)]),
    "split_sizes": lambda lib: lib.ones(5).split([2,2]),
    "chunk_0": lambda lib: lib.ones(5).chunk(0),
    "unbind_0d": lambda lib: lib.tensor(1.).unbind(),
    "where_cond": lambda lib: lib.where(lib.ones(2), lib.ones(2), lib.zeros(2)),
    "masked_fill_mask": lambda lib: lib.ones(2).masked_fill(lib.ones(2), 0.),
    "masked_fill_value": lambda lib: lib.ones(2).masked_fill(lib.ones(2)>0, lib.ones(2)),
    "clamp_none": lambda lib: lib.ones(2).clamp(),
    "leaf_inplace": lambda lib: lib.ones(2, requires_grad=True).add_(1),
    "leaf_setitem": lambda lib: lib.ones(2, requires_grad=True).__setitem__(0, 1.),
    "int_requires_grad": lambda lib: lib.ones(2, dtype=lib.int64).requires_grad_(),
    "nonleaf_requires_grad": lambda lib: (lib.ones(2, requires_grad=True)*2).requires_grad_(False),
    "backward_no_grad": lambda lib: lib.ones(2).sum().backward(),
    "backward_nonscalar": lambda lib: (lib.ones(2, requires_grad=True)*2).backward(),
    "backward_shape": lambda lib: (lib.ones(2, requires_grad=True)*2).backward(lib.ones(3)),
    "numpy_rg": lambda lib: lib.ones(2, requires_grad=True).numpy(),
    "item_many": lambda lib: lib.ones(2).item(),
    "bool_many": lambda lib: bool(lib.ones(2)),
    "len_0d": lambda lib: len(lib.tensor(1.)),
    "iter_0d": lambda lib: iter(lib.tensor(1.)),
    "hook_no_grad": lambda lib: lib.ones(2).register_hook(lambda g: g),
    "retain_no_grad": lambda lib: lib.ones(2).retain_grad(),
    "inplace_cast": lambda lib: lib.ones(2, dtype=lib.int64).add_(1.5),
    "inplace_cast_bool": lambda lib: lib.ones(2, dtype=lib.bool).add_(1),
    "inplace_shape": lambda lib: lib.ones(3).add_(lib.ones(2,3)),
    "inplace_expand": lambda lib: lib.ones(3).expand(2,3).add_(1),
    "fill_nd": lambda lib: lib.ones(3).fill_(lib.ones(2)),
    "normal_std": lambda lib: lib.ones(3).normal_(0, -1),
    "uniform_range": lambda lib: lib.ones(3).uniform_(2, 1),
    "gather_dtype": lambda lib: lib.ones(3).gather(0, lib.tensor([0.0])),
    "gather_oob": lambda lib: lib.ones(3).gather(0, lib.tensor([5])),
    "index_select_oob": lambda lib: lib.ones(3).index_select(0, lib.tensor([5])),
    "mask_shape": lambda lib: lib.ones(3)[lib.tensor([True, False])],
    "unflatten_bad": lambda lib: lib.ones(2, 3).unflatten(1, (2, 2)),
    "where_int_cond": lambda lib: lib.where(lib.ones(2, dtype=lib.int64), lib.ones(2), lib.zeros(2)),
    "masked_fill_long_mask": lambda lib: lib.ones(2).masked_fill(lib.ones(2, dtype=lib.int64), 0.0),
    "masked_fill_shape": lambda lib: lib.ones(2).masked_fill(lib.ones(3) > 0, 0.0),
    "sum_dim_range": lambda lib: lib.tensor([1, 2]).sum(dim=5),
    "sum_dup_neg": lambda lib: lib.ones(2, 3).sum(dim=(0, -2)),
    "flip_range": lambda lib: lib.ones(3).flip(1),
    "squeeze_tuple_range": lambda lib: lib.tensor([[1.0, 2.0]]).squeeze((0, 5)),
    "movedim_range": lambda lib: lib.ones(2, 3).movedim(0, 5),
    "normal_int": lambda lib: lib.zeros(2, dtype=lib.int64).normal_(),
    "uniform_int": lambda lib: lib.zeros(2, dtype=lib.int64).uniform_(),
    "bernoulli_p": lambda lib: lib.ones(3).bernoulli_(1.5),
    "logsumexp_no_dim": lambda lib: lib.ones(2, 2).logsumexp(),
    "index_oob_after_views": lambda lib: lib.ones(2) < lib.ones(2, dtype=lib.int64).t().t()[5],
    "gather_ndim": lambda lib: lib.ones(3,3).gather(0, lib.tensor([0])),
    "index_select_2d": lambda lib: lib.ones(3).index_select(0, lib.tensor([[0]])),
    "index_select_float": lambda lib: lib.ones(3).index_select(0, lib.tensor([0.])),
    "narrow_bad": lambda lib: lib.ones(3).narrow(0, 2, 2),
    "topk_k": lambda lib: lib.ones(3).topk(4),
    "relu_bool": lambda lib: lib.tensor([True]).relu(),
    "abs_bool": lambda lib: lib.tensor([True]).abs(),
    "invert_float": lambda lib: ~lib.ones(2),
    "and_float": lambda lib: lib.ones(2) & lib.ones(2),
    "div_mode": lambda lib: lib.ones(2).div(lib.ones(2), rounding_mode='x'),
    "set_default": lambda lib: lib.set_default_dtype(lib.int64),
    "device_str": lambda lib: lib.device('tpu'),
    "masked_select": lambda lib: lib.ones(2).masked_select(lib.ones(2)),
    "flip_dup": lambda lib: lib.ones(2,2).flip(0,0),
    "split0": lambda lib: lib.ones(5).split(0),
    "einsum_ops": lambda lib: lib.einsum('ij,jk->ik', lib.ones(2,2)),
    "deepcopy_nonleaf": lambda lib: __import__('copy').deepcopy(lib.ones(2, requires_grad=True)*2),
    "softmax_dim": lambda lib: lib.ones(2,3).softmax(2),
    "unsqueeze_range": lambda lib: lib.ones(2).unsqueeze(3),
    "squeeze_range": lambda lib: lib.ones(2).squeeze(2),
    "transpose_range": lambda lib: lib.ones(2,3).transpose(0,2),
    "zero_leaf": lambda lib: lib.ones(2, requires_grad=True).zero_(),
}


def _mininn_error(fn):
    try:
        fn(mininn)
    except Exception as err:  # noqa: BLE001 - compared with torch's below
        return err
    raise AssertionError("mininn raised no error")


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(CASES))
def test_error_matches_torch_type_and_message(name):
    want = torch_error(CASES[name])
    got = _mininn_error(CASES[name])
    assert type(got) is type(want), f"{type(got).__name__}: {got} != {type(want).__name__}: {want}"
    assert str(got) == str(want).replace("torch.Size", "mininn.Size")


def test_cuda_without_cupy_names_the_missing_extra():
    try:
        import cupy  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("CuPy is installed")
    message = r"CUDA devices need CuPy: install the 'cuda' extra \(pip install 'mininn-serve\[cuda\]'\)"
    with pytest.raises(RuntimeError, match=message):
        mininn.ones(2).to("cuda")
    with pytest.raises(RuntimeError, match=message):
        mininn.zeros(2, device="cuda:1")
    with pytest.raises(RuntimeError, match=message):
        mininn.ones(2).cuda()


def test_second_backward_through_freed_graph_raises_torch_message_unless_retained():
    x = mininn.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    y, ty = (x * x).sum(), (tx * tx).sum()
    y.backward(retain_graph=True)
    ty.backward(retain_graph=True)
    y.backward()
    ty.backward()
    assert x.grad.tolist() == tx.grad.tolist() == [4.0, 8.0]
    want = torch_error(lambda lib: ty.backward())
    with pytest.raises(RuntimeError) as info:
        y.backward()
    assert str(info.value) == str(want)
