"""In-place ops on views while autograd records: values written through to the base and its other
views, and gradients, against torch (float64); and torch's refusals, with its messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import mininn
import mininn.nn.functional as MF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

START = np.arange(1.0, 13.0).reshape(3, 4) / 4 - 1.2  # negatives for relu and clamp
WEIGHTS = np.linspace(0.5, 3.0, 12).reshape(3, 4)


def _src(lib: Any, shape: tuple[int, ...], requires_grad: bool = True) -> Any:
    data = np.linspace(-1.0, 2.0, int(np.prod(shape))).reshape(shape)
    return lib.tensor(data, dtype=lib.float64, requires_grad=requires_grad)


def _mask(lib: Any) -> Any:
    return lib.tensor([True, False, True, False])


def _relu(lib: Any, t: Any) -> Any:
    return (MF if lib is mininn else TF).relu(t, inplace=True)


def _siblings(lib: Any, b: Any) -> Any:
    left, right = b[:, :3], b[:, 1:]
    left.mul_(2)
    return right  # read after its sibling's in-place op


def _base_then_view(lib: Any, b: Any) -> Any:
    row = b[1]
    b.mul_(3)
    return row  # a view alive while its base is modified


def _view_of_view(lib: Any, b: Any) -> None:
    b[1:][0, 1:].mul_(2)


def _augmented(lib: Any, b: Any) -> None:
    b[0] *= 2
    b[:, 1] += _src(lib, (3,))
    b[2, 1:3] -= 1


# name -> what it does to b (a (3, 4) non-leaf); it may return a view whose values enter the loss
CASES: dict[str, Callable[[Any, Any], Any]] = {
    "index_mul": lambda lib, b: b[0].mul_(3),
    "index_mul_tensor": lambda lib, b: b[0].mul_(_src(lib, (4,))),
    "view_zero": lambda lib, b: b.view(12).zero_(),
    "view_part_add": lambda lib, b: b.view(2, 6)[1].add_(_src(lib, (6,)), alpha=0.5),
    "reshape_fill": lambda lib, b: b.reshape(4, 3)[1].fill_(7.0),
    "narrow_zero": lambda lib, b: b.narrow(1, 0, 1).zero_(),
    "slice_step_add": lambda lib, b: b[:, ::2].add_(1.5),
    "select_fill_tensor": lambda lib, b: b.select(1, 2).fill_(_src(lib, ()) * 3),
    "transpose_mul": lambda lib, b: b.t()[1].mul_(2),
    "permute_copy": lambda lib, b: b.unsqueeze(0).permute(2, 0, 1)[3].copy_(_src(lib, (1, 3))),
    "unsqueeze_mul": lambda lib, b: b.unsqueeze(1)[2].mul_(_src(lib, (1, 4))),
    "squeeze_sub": lambda lib, b: b[:1].squeeze(0).sub_(_src(lib, (4,))),
    "diagonal_mul": lambda lib, b: b.diagonal().mul_(_src(lib, (3,))),
    "diagonal_offset_zero": lambda lib, b: b.diagonal(1).zero_(),
    "expand_same_shape": lambda lib, b: b.expand(3, 4)[0].mul_(2),
    "clamp": lambda lib, b: b[1:].clamp_(min=-0.3, max=0.6),
    "relu_inplace": lambda lib, b: _relu(lib, b[:, 1:3]),
    "masked_fill": lambda lib, b: b[2].masked_fill_(_mask(lib), 0.25),
    "copy_broadcast": lambda lib, b: b[:, 2:].copy_(_src(lib, (1, 2))),
    "div_exp": lambda lib, b: b[1].div_(2).exp_(),
    "augmented": _augmented,
    "view_of_view": _view_of_view,
    "siblings": _siblings,
    "base_then_view": _base_then_view,
}


def _run(lib: Any, case: Callable[[Any, Any], Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    p = lib.tensor(START, dtype=lib.float64, requires_grad=True)
    b = p * 1
    extra = case(lib, b)
    loss = (b * lib.tensor(WEIGHTS)).sum()
    if extra is not None:
        loss = loss + (extra * extra).sum()
    loss.backward()
    return b.detach().numpy().copy(), p.grad.numpy().copy(), None if extra is None else extra.detach().numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name: str) -> None:
    got = _run(mininn, CASES[name])
    want = _run(torch, CASES[name])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12, err_msg="base values")
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12, err_msg="gradient")
    if want[2] is not None:
        np.testing.assert_allclose(got[2], want[2], rtol=1e-12, atol=1e-12, err_msg="view values")


def _writes_into_plain_buffer(lib: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    p = _src(lib, (2, 3))
    buf = lib.zeros(3, 3, dtype=lib.float64)  # needs no grad until written from p
    buf[0].copy_(p[0] * 2)
    buf[1:, 1:].copy_(p[:, :2].exp())
    (buf * lib.tensor(np.arange(9.0).reshape(3, 3))).sum().backward()
    return buf.detach().numpy().copy(), p.grad.numpy().copy(), buf.is_leaf


def test_writing_a_grad_tensor_into_a_view_of_a_plain_buffer() -> None:
    got, want = _writes_into_plain_buffer(mininn), _writes_into_plain_buffer(torch)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    assert got[2] is want[2] is False


def _views_of_plain_buffer(lib: Any) -> tuple[np.ndarray, ...]:
    p = _src(lib, (2, 3))
    buf = lib.zeros(2, 3, dtype=lib.float64)
    col, flat = buf[:, 0], buf.view(6)  # made before buf has any history
    buf[0].copy_(p[0] * 2)
    first = (col * 3).sum()  # col reads buf's new history
    buf[1, 1:].mul_(p[1, :2])
    second = (flat * lib.arange(6.0, dtype=lib.float64)).sum() + (col * col).sum()
    (first + second).backward()
    return buf.detach().numpy().copy(), p.grad.numpy().copy(), flat.detach().numpy().copy()


def test_views_made_before_their_plain_base_got_a_history() -> None:
    got, want = _views_of_plain_buffer(mininn), _views_of_plain_buffer(torch)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def _swin_v2_qkv_bias(lib: Any) -> tuple[np.ndarray, ...]:
    """torchvision's ShiftedWindowAttentionV2: the key part of a cloned qkv bias zeroed in place."""
    bias = _src(lib, (6,))
    weight = _src(lib, (6, 4))
    x = lib.tensor(START, dtype=lib.float64)
    qkv_bias = bias.clone()
    length = qkv_bias.numel() // 3
    qkv_bias[length : 2 * length].zero_()
    out = (MF if lib is mininn else TF).linear(x, weight, qkv_bias)
    (out * out).sum().backward()
    return out.detach().numpy().copy(), bias.grad.numpy().copy(), weight.grad.numpy().copy()


def test_swin_v2_qkv_bias_pattern() -> None:
    got, want = _swin_v2_qkv_bias(mininn), _swin_v2_qkv_bias(torch)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


@pytest.mark.parametrize(
    "fill", ["uniform_()", "normal_()", "bernoulli_(0.5)", "exponential_()", "random_(0, 5)"]
)
def test_random_fill_of_a_view_cuts_the_gradient_there(fill: str) -> None:
    def run(lib: Any) -> np.ndarray:
        p = lib.ones(3, 4, dtype=lib.float64, requires_grad=True)
        b = p * 2
        eval(f"b.t()[1].{fill}")  # column 1 of b
        (b * 3).sum().backward()
        return p.grad.numpy().copy()

    np.testing.assert_array_equal(run(mininn), run(torch))


def test_other_views_see_the_write() -> None:
    p = mininn.ones(2, 3, requires_grad=True)
    b = p * 1
    row, col, flat = b[0], b[:, 1], b.view(6)
    b[0].mul_(3)
    assert row.tolist() == [3.0, 3.0, 3.0]
    assert col.tolist() == [3.0, 1.0]
    assert flat.tolist() == [3.0, 3.0, 3.0, 1.0, 1.0, 1.0]
    assert b.grad_fn.name() == "CopySlices"


def test_no_grad_still_writes_through() -> None:
    b = mininn.ones(2, 3, requires_grad=True) * 1
    with mininn.no_grad():
        b[0].mul_(3)
        b.view(6)[5:].zero_()
        b.split(1)[1][0, 0].fill_(4)  # torch allows split outputs under no_grad
    assert b.tolist() == [[3.0, 3.0, 3.0], [4.0, 1.0, 0.0]]


def _error(lib: Any, action: Callable[[Any], Any]) -> str:
    with pytest.raises(RuntimeError) as info:
        action(lib)
    return str(info.value)


def _leaf(lib: Any) -> Any:
    return lib.ones(2, 3, dtype=lib.float64, requires_grad=True)


def _nonleaf(lib: Any) -> Any:
    return _leaf(lib) * 1


def _no_grad_view(lib: Any) -> None:
    b = _nonleaf(lib)
    with lib.no_grad():
        v = b[0]
    v.mul_(2)


def _no_grad_split(lib: Any) -> None:
    b = _nonleaf(lib)
    with lib.no_grad():
        v = b.split(1)[0]
    v.mul_(2)


REFUSED: dict[str, Callable[[Any], Any]] = {
    "leaf_index": lambda lib: _leaf(lib)[0].mul_(2),
    "leaf_view_zero": lambda lib: _leaf(lib).view(6).zero_(),
    "leaf_transpose_copy": lambda lib: _leaf(lib).t().copy_(lib.zeros(3, 2, dtype=lib.float64)),
    "leaf_augmented": lambda lib: _leaf(lib)[0].__imul__(2),
    "leaf_setitem_on_view": lambda lib: _leaf(lib)[0].__setitem__(0, 5.0),
    "split": lambda lib: _nonleaf(lib).split(1)[1].mul_(2),
    "split_one_piece": lambda lib: _nonleaf(lib).split(2)[0].zero_(),
    "chunk": lambda lib: _nonleaf(lib).chunk(2)[0].fill_(1.0),
    "unbind": lambda lib: _nonleaf(lib).unbind(1)[2].add_(1),
    "unbind_copy_from_grad": lambda lib: lib.zeros(2, 3).unbind(0)[0].copy_(_src(lib, (3,)).float()),
    "expand": lambda lib: _nonleaf(lib)[:, :1].expand(2, 3).mul_(2),
    "no_grad_view": _no_grad_view,
    "split_made_under_no_grad": _no_grad_split,
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_match_torch(name: str) -> None:
    assert _error(mininn, REFUSED[name]) == _error(torch, REFUSED[name])


def test_refusal_changes_nothing() -> None:
    p = mininn.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError):
        p[0].mul_(2)
    b = p * 2
    pieces = b.split(1)
    with pytest.raises(RuntimeError):
        pieces[0].mul_(5)
    assert p.tolist() == [[1.0] * 3] * 2
    assert b.tolist() == [[2.0] * 3] * 2
    assert b.grad_fn.name() == "MulBackward0"


def test_own_values_saved_by_the_inplace_op_survive() -> None:
    """``v.mul_(w)`` saves v's old values for w's gradient: the write must not overwrite them."""

    def run(lib: Any) -> tuple[np.ndarray, np.ndarray]:
        p = _src(lib, (2, 3))
        w = _src(lib, (3,)) * 1.5
        w.retain_grad()
        b = p * 1
        b[1].mul_(w)
        (b * b).sum().backward()
        return p.grad.numpy().copy(), w.grad.numpy().copy()

    got, want = run(mininn), run(torch)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_base_and_is_view() -> None:
    b = mininn.ones(2, 3) * 1
    v = b[0][1:]
    assert v._base is b and v._is_view()
    assert b._base is None and not b._is_view()
    assert b[[0, 1]]._base is None  # advanced indexing copies
