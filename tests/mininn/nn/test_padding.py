"""F.pad in every mode and the padding layers against torch 2.13."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import assert_parity, same_error, to_numpy, tol

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]


def _x(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _pad_both(x, pad, mode, value=None):
    """Output and input gradient of F.pad in torch and mininn under the same cotangent."""
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    kwargs = {} if value is None else dict(value=value)
    ty, my = TF.pad(tx, pad, mode=mode, **kwargs), F.pad(mx, pad, mode=mode, **kwargs)
    cot = _x(tuple(ty.shape), x.dtype, seed=1)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    return (to_numpy(ty), to_numpy(tx.grad)), (to_numpy(my), to_numpy(mx.grad))


PAD_CASES = [
    ((2, 3, 5), (1, 2)),
    ((3, 5), (4, 3)),
    ((2, 3, 5), (-1, 2)),
    ((2, 3, 5), (-2, -1)),
    ((2, 3, 5), (3, -2)),
    ((2, 3, 4, 5), (1, 2, 3, 0)),
    ((3, 4, 5), (2, 1, -1, 2)),
    ((2, 3, 4, 5), (0, 0, 2, 2)),
    ((1, 2, 3, 4, 5), (1, 2, 2, 1, 1, 2)),
    ((2, 3, 4, 5), (-1, 2, 2, -1, 1, 0)),
    ((2, 3, 5), (0, 0)),
]


# torch's circular pad reads uninitialised memory where it pads before and crops after: not compared
NON_CONSTANT_CASES = [
    (shape, pad, mode)
    for mode in ("reflect", "replicate", "circular")
    for shape, pad in PAD_CASES
    if mode != "circular" or not any(a > 0 > b for a, b in zip(pad[::2], pad[1::2]))
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,pad,mode", NON_CONSTANT_CASES, ids=str)
def test_pad_non_constant_modes_match_torch_values_and_gradients(shape, pad, mode, dtype):
    (t_out, t_grad), (m_out, m_grad) = _pad_both(_x(shape, dtype), pad, mode)
    assert m_out.shape == t_out.shape and m_out.dtype == t_out.dtype
    np.testing.assert_allclose(m_out, t_out, **tol(dtype))
    np.testing.assert_allclose(m_grad, t_grad, **tol(dtype))


@pytest.mark.parametrize("shape,pad", [
    ((1, 2, 7), (-2, 5)),
    ((1, 2, 7), (-3, 4)),
    ((2, 5), (-1, 4)),
    ((2, 2, 3, 4), (4, 4, 3, 3)),
], ids=str)
def test_circular_pad_wraps_what_is_left_after_cropping_like_torch(shape, pad):
    # (torch's backward disagrees with its own forward once a pad exceeds what the crop leaves)
    (t_out, t_grad), (m_out, m_grad) = _pad_both(_x(shape), pad, "circular")
    np.testing.assert_allclose(m_out, t_out)
    np.testing.assert_allclose(m_grad, t_grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,pad,value", [
    ((2, 3, 5), (1, 2), None),
    ((2, 3, 5), (1, 2, 0, 1, 1, 0), 2.5),
    ((2, 3, 5), (-1, 2, 1, -2), -1.0),
    ((5,), (2, 3), 1.0),
    ((2, 3, 4, 5, 2), (1, 1, 0, 0, 1, 1, 1, 0, 2, 0), 0.5),
    ((2, 3, 5), (-2, -3), None),
], ids=str)
def test_constant_pad_matches_torch_values_and_gradients(shape, pad, value, dtype):
    (t_out, t_grad), (m_out, m_grad) = _pad_both(_x(shape, dtype), pad, "constant", value)
    np.testing.assert_allclose(m_out, t_out, **tol(dtype))
    np.testing.assert_allclose(m_grad, t_grad, **tol(dtype))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_non_constant_pad_accepts_a_zero_value_like_torch(mode):
    x = _x((2, 3, 5))
    expected = to_numpy(TF.pad(torch.tensor(x), (1, 1), mode=mode, value=0))
    np.testing.assert_allclose(to_numpy(F.pad(mininn.tensor(x), (1, 1), mode=mode, value=0)), expected)


@pytest.mark.parametrize("shape,pad,mode,value", [
    ((2, 3, 5), (1, 2, 3), "constant", None),
    ((2, 3, 5), (1,) * 8, "reflect", None),
    ((2, 3, 5), (1, 1), "foo", None),
    ((2, 3, 5), (1, 1), "reflect", 1.0),
    ((2, 3, 5), (1, 1), "circular", 2.0),
    ((2, 3, 5), (-3, -3), "constant", None),
    ((5,), (1, 1), "reflect", None),
    ((2, 3, 4, 5), (1, 1), "replicate", None),
    ((3, 5), (1, 1, 1, 1), "circular", None),
    ((2, 3, 5), (), "reflect", None),
    ((2, 3, 5), (5, 0), "reflect", None),
    ((2, 3, 4), (4, 0, 3, 0), "reflect", None),
    ((2, 2, 3, 4), (0, 0, 3, 0, 2, 0), "reflect", None),
    ((2, 3, 4), (-4, 0, 4, 0), "reflect", None),
    ((2, 3, 1), (1, 1), "reflect", None),
    ((2, 0, 5), (1, 1), "reflect", None),
    ((2, 3, 0, 5), (1, 1, 1, 1), "replicate", None),
    ((3, 0, 5), (1, 1, 1, 1), "replicate", None),
    ((1, 2, 2, 0, 4), (1,) * 6, "reflect", None),
    ((2, 3, 5), (-6, 0), "reflect", None),
    ((2, 3, 5), (-2, -3), "replicate", None),
    ((2, 4, 5), (-5, 0, -4, 0), "reflect", None),
    ((2, 4, 5), (-5, 0, -4, 0), "replicate", None),
    ((1, 2, 3, 4, 5), (-5, 0, -4, 0, -3, 0), "replicate", None),
    ((2, 3, 4), (-9, 0, 1, 0), "replicate", None),
    ((2, 3, 5), (6, 0), "circular", None),
    ((2, 3, 5), (-6, 0), "circular", None),
    ((2, 3, 5), (-1, -5), "circular", None),
    ((2, 4, 5), (-6, 0, 7, 0), "circular", None),
    ((2, 4, 5), (7, 0, -6, 0), "circular", None),
    ((2, 3, 0), (1, 1), "circular", None),
], ids=str)
def test_pad_errors_match_torch(shape, pad, mode, value):
    kwargs = {} if value is None else dict(value=value)
    same_error(lambda: TF.pad(torch.zeros(shape), pad, mode=mode, **kwargs),
               lambda: F.pad(mininn.zeros(shape), pad, mode=mode, **kwargs))


def test_pad_with_a_float_amount_raises_torchs_type_error():
    same_error(lambda: TF.pad(torch.zeros(2, 3), (1.5, 1)), lambda: F.pad(mininn.zeros(2, 3), (1.5, 1)))


LAYERS = [
    ("ConstantPad1d", (2, 3.5)), ("ConstantPad1d", ((1, 2), -1)),
    ("ConstantPad2d", (1, 0)), ("ConstantPad2d", ((1, 0, 2, 1), 2.0)),
    ("ConstantPad3d", (1, 1.5)), ("ConstantPad3d", ((1, 0, 0, 1, 2, 0), 0.0)),
    ("ZeroPad1d", (2,)), ("ZeroPad1d", ((0, 3),)),
    ("ZeroPad2d", (1,)), ("ZeroPad2d", ((1, 2, 0, 1),)),
    ("ZeroPad3d", (1,)), ("ZeroPad3d", ([1, 0, 2, 1, 0, 1],)),
    ("ReflectionPad1d", (2,)), ("ReflectionPad1d", ((1, 2),)),
    ("ReflectionPad2d", (1,)), ("ReflectionPad2d", ((1, 2, 2, 0),)),
    ("ReflectionPad3d", (1,)), ("ReflectionPad3d", ((1, 0, 0, 1, 2, 1),)),
    ("ReplicationPad1d", (3,)), ("ReplicationPad1d", ((1, 2),)),
    ("ReplicationPad2d", (2,)), ("ReplicationPad2d", ((1, 2, 3, 0),)),
    ("ReplicationPad3d", (1,)), ("ReplicationPad3d", ((1, 0, 0, 1, 2, 1),)),
    ("CircularPad1d", (2,)), ("CircularPad1d", ((1, 2),)),
    ("CircularPad2d", (1,)), ("CircularPad2d", ((1, 2, 2, 0),)),
    ("CircularPad3d", (1,)), ("CircularPad3d", ((1, 0, 0, 1, 2, 1),)),
]


@pytest.mark.parametrize("name,args", LAYERS, ids=str)
def test_padding_layer_repr_attributes_and_state_match_torch(name, args):
    tm, mm = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    assert repr(mm) == repr(tm)
    assert mm.padding == tm.padding
    assert getattr(mm, "value", None) == getattr(tm, "value", None)
    assert list(mm.state_dict()) == [] == list(tm.state_dict())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,args", LAYERS[1::2], ids=str)
def test_padding_layer_matches_torch_on_batched_and_unbatched_input(name, args, dtype):
    dims = int(name[-2])
    tm, mm = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    for shape in [(2, 3) + (4,) * dims, (3,) + (4,) * dims]:
        assert_parity(tm, mm, _x(shape, dtype))


@pytest.mark.parametrize("name,shape", [
    ("CircularPad1d", (4,)), ("CircularPad1d", (2, 3, 4, 4)),
    ("CircularPad2d", (4, 4)), ("CircularPad2d", (2, 3, 4, 4, 4)),
    ("CircularPad3d", (4, 4, 4)), ("CircularPad3d", (1, 2, 3, 4, 4, 4)),
    ("ReflectionPad1d", (4,)), ("ReflectionPad2d", (2, 3, 4, 4, 4)), ("ReflectionPad3d", (4, 4, 4)),
    ("ReplicationPad1d", (2, 3, 4, 4)), ("ReplicationPad2d", (4, 4)),
    ("ReplicationPad3d", (1, 2, 3, 4, 4, 4)),
    ("ReflectionPad2d", (2, 3, 2, 4)),
], ids=str)
def test_padding_layer_errors_match_torch(name, shape):
    tm, mm = getattr(torch.nn, name)(2), getattr(nn, name)(2)
    same_error(lambda: tm(torch.zeros(shape)), lambda: mm(mininn.zeros(shape)))


def test_reflection_pad_of_a_large_image_backpropagates_by_segment_sums():
    x = _x((2, 3, 64, 64), np.float32)
    (t_out, t_grad), (m_out, m_grad) = _pad_both(x, (3, 3, 3, 3), "reflect")
    np.testing.assert_allclose(m_out, t_out)
    np.testing.assert_allclose(m_grad, t_grad, rtol=1e-5, atol=1e-5)


def _signature(fn):
    return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", sorted({name for name, _ in LAYERS}))
def test_padding_layer_constructor_signature_matches_torch(name):
    assert _signature(getattr(nn, name).__init__) == _signature(getattr(torch.nn, name).__init__)


def test_pad_signature_matches_torch():
    assert _signature(F.pad) == _signature(TF.pad)
