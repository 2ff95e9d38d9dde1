"""InstanceNorm1d/2d/3d and F.instance_norm against torch 2.13."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from mininn import nn
from tests.mininn.nn._layer_parity import (
    assert_parity,
    assert_same_buffers,
    same_error,
    slot_layout,
    state_layout,
    to_numpy,
    tol,
    twin,
)

torch = pytest.importorskip("torch")
TF = torch.nn.functional

DTYPES = [np.float32, np.float64]


def _x(shape, dtype=np.float64, seed=0, scale=1.0, shift=0.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale + shift).astype(dtype)


def _pair(name, dtype, *args, **kwargs):
    tm = getattr(torch.nn, name)(*args, **kwargs).to(getattr(torch, np.dtype(dtype).name))
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.tensor(np.random.default_rng(3).uniform(0.5, 1.5, tuple(p.shape))))
    return tm, twin(tm, getattr(nn, name)(*args, dtype=np.dtype(dtype).name, **kwargs))


KWARGS = [
    {},
    dict(affine=True),
    dict(affine=True, bias=False, eps=1e-3),
    dict(track_running_stats=True, momentum=0.3),
    dict(affine=True, track_running_stats=True),
    dict(track_running_stats=True, momentum=None),
]


@pytest.mark.parametrize("dims,dtype", [(1, np.float64), (2, np.float32), (3, np.float64)])
@pytest.mark.parametrize("kwargs", KWARGS, ids=str)
def test_instance_norm_training_steps_then_eval_match_torch(dims, kwargs, dtype):
    tm, mm = _pair(f"InstanceNorm{dims}d", dtype, 3, **kwargs)
    spatial = (5, 4, 3)[:dims]
    for step in range(2):
        assert_parity(tm, mm, _x((2, 3) + spatial, dtype, seed=step, scale=2.0 + step, shift=step))
    assert_parity(tm, mm, _x((3,) + spatial, dtype, seed=5, shift=1.0))  # unbatched
    assert_same_buffers(tm, mm, **tol(dtype))
    assert_parity(tm, mm, _x((2, 3) + spatial, dtype, seed=9), training=False)
    assert_parity(tm, mm, _x((3,) + spatial, dtype, seed=8), training=False)


def test_instance_norm_keeps_num_batches_tracked_at_zero_like_torch():
    tm = torch.nn.InstanceNorm1d(3, track_running_stats=True)
    mm = nn.InstanceNorm1d(3, track_running_stats=True)
    x = _x((2, 3, 4), np.float32)
    tm(torch.tensor(x))
    mm(mininn.tensor(x))
    assert mm.num_batches_tracked.item() == tm.num_batches_tracked.item() == 0


@pytest.mark.parametrize("name,kwargs", [
    ("InstanceNorm1d", {}),
    ("InstanceNorm2d", dict(affine=True)),
    ("InstanceNorm3d", dict(track_running_stats=True, momentum=None)),
    ("InstanceNorm1d", dict(affine=True, bias=False, eps=1e-3)),
    ("InstanceNorm2d", dict(affine=True, track_running_stats=True)),
], ids=str)
def test_instance_norm_repr_state_dict_slots_and_init_match_torch(name, kwargs):
    tm, mm = getattr(torch.nn, name)(4, **kwargs), getattr(nn, name)(4, **kwargs)
    assert repr(mm) == repr(tm)
    assert state_layout(mm) == state_layout(tm)
    assert slot_layout(mm) == slot_layout(tm)
    for key, value in tm.state_dict().items():
        np.testing.assert_array_equal(to_numpy(mm.state_dict()[key]), to_numpy(value), err_msg=key)


@pytest.mark.parametrize("make,shape", [
    (lambda lib: lib.nn.InstanceNorm1d(4), (4,)),
    (lambda lib: lib.nn.InstanceNorm1d(4), (2, 4, 3, 3)),
    (lambda lib: lib.nn.InstanceNorm2d(4), (4, 4)),
    (lambda lib: lib.nn.InstanceNorm3d(4), (2, 4, 3, 3, 3, 3)),
    (lambda lib: lib.nn.InstanceNorm1d(4, affine=True), (2, 5, 3)),
    (lambda lib: lib.nn.InstanceNorm2d(4, affine=True), (5, 3, 3)),
    (lambda lib: lib.nn.InstanceNorm1d(4, track_running_stats=True), (2, 5, 3)),
    (lambda lib: lib.nn.InstanceNorm2d(4), (2, 4, 1, 1)),
    (lambda lib: lib.nn.InstanceNorm1d(4), (4, 1)),
    (lambda lib: lib.nn.InstanceNorm1d(4, track_running_stats=True).eval().train(), (2, 4, 1)),
])
def test_instance_norm_forward_errors_match_torch(make, shape):
    tm, mm = make(torch), make(mininn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same_error(lambda: tm(torch.ones(shape)), lambda: mm(mininn.ones(shape)))


def test_instance_norm_with_running_stats_accepts_a_single_spatial_element_in_eval():
    tm = torch.nn.InstanceNorm2d(3, track_running_stats=True).eval()
    mm = nn.InstanceNorm2d(3, track_running_stats=True).eval()
    assert_parity(tm, mm, _x((2, 3, 1, 1)), training=False)


@pytest.mark.parametrize("shape", [(2, 5, 3), (5, 3)])
def test_instance_norm_warns_like_torch_when_channels_differ_without_affine(shape):
    x = _x(shape)
    with warnings.catch_warnings(record=True) as t_caught:
        warnings.simplefilter("always")
        expected = torch.nn.InstanceNorm1d(4)(torch.tensor(x))
    with warnings.catch_warnings(record=True) as m_caught:
        warnings.simplefilter("always")
        got = nn.InstanceNorm1d(4)(mininn.tensor(x))
    def seen(caught):
        return [(w.category, str(w.message)) for w in caught]

    assert seen(m_caught) == seen(t_caught)
    np.testing.assert_allclose(to_numpy(got), to_numpy(expected), **tol(x.dtype))


@pytest.mark.parametrize("call", [
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 1)),
    lambda lib, f: f.instance_norm(lib.ones(3, 4)),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4), lib.zeros(3), None),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4), None, lib.ones(3)),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4), use_input_stats=False),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4), weight=lib.ones(4)),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4), bias=lib.ones(2)),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4), lib.zeros(2), lib.ones(2), lib.ones(2), lib.ones(2)),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4), lib.zeros(3), lib.ones(2), lib.ones(2)),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4, dtype=lib.int64)),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4), weight=lib.ones(3, dtype=lib.float64)),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4, dtype=lib.float64), weight=lib.ones(3)),
    lambda lib, f: f.instance_norm(lib.ones(2, 3, 4), lib.zeros(3), lib.ones(3), None,
                                   lib.ones(3, dtype=lib.float64), use_input_stats=False),
])
def test_functional_instance_norm_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))


@pytest.mark.parametrize("use_input_stats", [True, False])
def test_functional_instance_norm_matches_torch_values_gradients_and_running_stats(use_input_stats):
    x, w, b = _x((3, 4, 5, 2)), _x(4, seed=1), _x(4, seed=2)
    rm, rv = _x(4, seed=3), np.abs(_x(4, seed=4)) + 0.5
    t = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    m = [mininn.tensor(a, requires_grad=True) for a in (x, w, b)]
    t_run, m_run = [torch.tensor(rm), torch.tensor(rv)], [mininn.tensor(rm), mininn.tensor(rv)]
    ty = TF.instance_norm(t[0], *t_run, t[1], t[2], use_input_stats, 0.2, 1e-3)
    my = F.instance_norm(m[0], *m_run, m[1], m[2], use_input_stats, 0.2, 1e-3)
    cot = _x(tuple(ty.shape), seed=7)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-10, atol=1e-12)
    for mt, tt in zip(m + m_run, t + t_run):
        np.testing.assert_allclose(to_numpy(mt.grad if mt.requires_grad else mt),
                                   to_numpy(tt.grad if tt.requires_grad else tt), rtol=1e-9, atol=1e-11)


class _StateDict(dict):
    """A plain dict that can carry ``_metadata`` like torch's OrderedDict state dicts."""


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("version", [None, 1])
def test_instance_norm_refuses_running_stats_of_unversioned_checkpoints_like_torch(version, strict):
    state = torch.nn.InstanceNorm1d(3, track_running_stats=True).state_dict()
    t_state = _StateDict(state)
    m_state = _StateDict({k: mininn.tensor(to_numpy(v)) for k, v in state.items()})
    if version is not None:
        t_state._metadata = {"": {"version": version}}
        m_state._metadata = {"": {"version": version}}
    tm, mm = torch.nn.InstanceNorm1d(3), nn.InstanceNorm1d(3)
    if version is None or strict:
        same_error(lambda: tm.load_state_dict(t_state, strict=strict),
                   lambda: mm.load_state_dict(m_state, strict=strict))
    else:
        t_result = tm.load_state_dict(t_state, strict=False)
        m_result = mm.load_state_dict(m_state, strict=False)
        assert list(m_result.unexpected_keys) == list(t_result.unexpected_keys)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_instance_norm_constructor_signature_matches_torch(dims):
    def signature(fn):
        return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()]

    name = f"InstanceNorm{dims}d"
    assert signature(getattr(nn, name).__init__) == signature(getattr(torch.nn, name).__init__)
