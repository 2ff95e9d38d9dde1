"""BatchNorm1d/2d/3d, SyncBatchNorm, LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm, CrossMapLRN2d and
F.normalize against torch 2.13."""

from __future__ import annotations

import inspect

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


def _pair(cls_name, dtype, *args, **kwargs):
    tm = getattr(torch.nn, cls_name)(*args, **kwargs).to(getattr(torch, np.dtype(dtype).name))
    mm = getattr(nn, cls_name)(*args, dtype=np.dtype(dtype).name, **kwargs)
    return tm, twin(tm, mm)


def _randomize_affine(tm, seed=3):
    """Non-trivial weight and bias in torch's layer (before twinning), so their grads matter."""
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.tensor(np.random.default_rng(seed).uniform(0.5, 1.5, tuple(p.shape))))
    return tm


BN_CASES = [
    ("BatchNorm1d", (8, 4)),
    ("BatchNorm1d", (8, 4, 5)),
    ("BatchNorm2d", (4, 4, 5, 6)),
]
BN_KWARGS = [
    {},
    dict(momentum=0.3, eps=1e-3),
    dict(momentum=None),
    dict(affine=False),
    dict(bias=False),
    dict(track_running_stats=False),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", BN_KWARGS, ids=str)
@pytest.mark.parametrize("cls_name,shape", BN_CASES, ids=str)
def test_batch_norm_training_steps_then_eval_match_torch(cls_name, shape, kwargs, dtype):
    _check_training_steps_then_eval(cls_name, shape, kwargs, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cls_name,shape,kwargs", [
    ("BatchNorm3d", (3, 4, 2, 3, 2), {}),
    ("BatchNorm3d", (3, 4, 2, 3, 2), dict(momentum=None, affine=False)),
    ("SyncBatchNorm", (4, 4, 5), {}),
    ("SyncBatchNorm", (4, 4), dict(momentum=None, bias=False)),
    ("SyncBatchNorm", (3, 4, 2, 3, 2), dict(track_running_stats=False, eps=1e-3)),
], ids=str)
def test_batch_norm_3d_and_sync_batch_norm_training_then_eval_match_torch(cls_name, shape, kwargs, dtype):
    _check_training_steps_then_eval(cls_name, shape, kwargs, dtype)


def _check_training_steps_then_eval(cls_name, shape, kwargs, dtype):
    tm = getattr(torch.nn, cls_name)(4, **kwargs).to(getattr(torch, np.dtype(dtype).name))
    _randomize_affine(tm)
    mm = twin(tm, getattr(nn, cls_name)(4, dtype=np.dtype(dtype).name, **kwargs))
    for step in range(3):  # running statistics after several steps (shifted, scaled batches)
        assert_parity(tm, mm, _x(shape, dtype, seed=step, scale=2.0 + step, shift=step), training=True)
    assert_same_buffers(tm, mm, rtol=1e-6 if dtype == np.float32 else 1e-12, atol=1e-7)
    assert_parity(tm, mm, _x(shape, dtype, seed=9), training=False)
    assert_same_buffers(tm, mm, rtol=1e-6, atol=1e-7)  # eval changes no buffer


def test_batch_norm_num_batches_tracked_is_int64_and_counts_only_training_calls():
    m = nn.BatchNorm1d(3)
    assert m.num_batches_tracked.dtype == mininn.int64 and m.num_batches_tracked.item() == 0
    x = mininn.randn(5, 3)
    m(x)
    m(x)
    m.eval()
    m(x)
    assert m.num_batches_tracked.item() == 2


def test_batch_norm_with_momentum_none_keeps_the_cumulative_average_of_batch_means():
    m = nn.BatchNorm1d(2, momentum=None)
    batches = [_x((6, 2), np.float32, seed=s, shift=s) for s in range(4)]
    for b in batches:
        m(mininn.tensor(b))
    expected = np.mean([b.mean(0) for b in batches], axis=0)
    np.testing.assert_allclose(m.running_mean.numpy(), expected, rtol=1e-5)


def test_batch_norm_without_running_stats_uses_batch_statistics_in_eval():
    tm, mm = _pair("BatchNorm2d", np.float64, 3, track_running_stats=False)
    assert_parity(tm, mm, _x((2, 3, 4, 4)), training=False)
    assert mm.running_mean is None and mm.num_batches_tracked is None


def test_batch_norm_eval_under_no_grad_records_no_graph_and_keeps_float32():
    m = nn.BatchNorm2d(3).eval()
    with mininn.no_grad():
        y = m(mininn.randn(2, 3, 4, 4, requires_grad=True))
    assert y.grad_fn is None and y.dtype == mininn.float32


@pytest.mark.parametrize("cls_name,args,kwargs", [
    ("BatchNorm1d", (4,), {}),
    ("BatchNorm2d", (4,), dict(affine=False)),
    ("BatchNorm2d", (4,), dict(track_running_stats=False, momentum=None)),
    ("BatchNorm1d", (4,), dict(eps=1e-3, momentum=0.2, bias=False)),
    ("LayerNorm", (6,), {}),
    ("LayerNorm", ([3, 6],), dict(elementwise_affine=False)),
    ("LayerNorm", (6,), dict(bias=False)),
    ("LayerNorm", (6,), dict(eps=1e-6)),
    ("LayerNorm", (6,), dict(bias=False, elementwise_affine=False)),
    ("GroupNorm", (2, 4), {}),
    ("GroupNorm", (2, 4), dict(affine=False)),
    ("GroupNorm", (2, 4), dict(eps=1e-3, bias=False)),
    ("BatchNorm3d", (4,), dict(momentum=None, bias=False)),
    ("SyncBatchNorm", (4,), {}),
    ("SyncBatchNorm", (4,), dict(affine=False, track_running_stats=False, eps=1e-3)),
    ("RMSNorm", (6,), {}),
    ("RMSNorm", ([3, 6],), dict(eps=1e-6)),
    ("RMSNorm", (6,), dict(elementwise_affine=False)),
    ("LocalResponseNorm", (3,), {}),
    ("LocalResponseNorm", (2, 1e-3, 0.5, 2), {}),
    ("CrossMapLRN2d", (5,), {}),
    ("CrossMapLRN2d", (3, 1e-2, 0.5, 2.0), {}),
], ids=str)
def test_norm_layer_repr_state_dict_slots_and_init_match_torch(cls_name, args, kwargs):
    tm = getattr(torch.nn, cls_name)(*args, **kwargs)
    mm = getattr(nn, cls_name)(*args, **kwargs)
    assert repr(mm) == repr(tm)
    assert state_layout(mm) == state_layout(tm)
    assert slot_layout(mm) == slot_layout(tm)
    for name, value in tm.state_dict().items():
        np.testing.assert_array_equal(to_numpy(mm.state_dict()[name]), to_numpy(value), err_msg=name)


class _StateDict(dict):
    """A plain dict that can carry ``_metadata`` like torch's OrderedDict state dicts."""


@pytest.mark.parametrize("version,missing", [(None, []), (1, []), (2, ["num_batches_tracked"])])
def test_batch_norm_old_checkpoints_without_num_batches_tracked_load_like_torch(version, missing):
    state = torch.nn.BatchNorm1d(3).state_dict()
    del state["num_batches_tracked"]
    t_state = _StateDict(state)
    m_state = _StateDict({k: mininn.tensor(to_numpy(v)) for k, v in state.items()})
    if version is not None:
        t_state._metadata = {"": {"version": version}}
        m_state._metadata = {"": {"version": version}}
    t_module, m_module = torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    t_result = t_module.load_state_dict(t_state, strict=False)
    m_result = m_module.load_state_dict(m_state, strict=False)
    assert list(m_result.missing_keys) == list(t_result.missing_keys) == missing
    assert m_module.num_batches_tracked.item() == t_module.num_batches_tracked.item() == 0


@pytest.mark.parametrize("make,shape", [
    (lambda lib: lib.nn.BatchNorm1d(4), (1, 4)),
    (lambda lib: lib.nn.BatchNorm1d(4), (2, 4, 3, 3)),
    (lambda lib: lib.nn.BatchNorm1d(4), (2, 3)),
    (lambda lib: lib.nn.BatchNorm2d(4), (2, 4, 3)),
    (lambda lib: lib.nn.BatchNorm2d(4), (2, 3, 3, 3)),
    (lambda lib: lib.nn.LayerNorm((3, 6)), (2, 3, 5)),
    (lambda lib: lib.nn.LayerNorm(6), (2, 5)),
    (lambda lib: lib.nn.GroupNorm(2, 4), (2, 6, 3)),
    (lambda lib: lib.nn.GroupNorm(2, 4), (2, 5, 3)),
    (lambda lib: lib.nn.BatchNorm3d(4), (2, 4, 3, 3)),
    (lambda lib: lib.nn.BatchNorm3d(4), (1, 4, 1, 1, 1)),
    (lambda lib: lib.nn.SyncBatchNorm(4), (4,)),
    (lambda lib: lib.nn.SyncBatchNorm(4), (1, 4)),
    (lambda lib: lib.nn.SyncBatchNorm(0), (2, 0, 3)),
    (lambda lib: lib.nn.RMSNorm(6), (2, 5)),
    (lambda lib: lib.nn.RMSNorm((3, 6)), (3, 5)),
    (lambda lib: lib.nn.LocalResponseNorm(2), (2, 5)),
    (lambda lib: lib.nn.LocalResponseNorm(0), (2, 5, 3)),
    (lambda lib: lib.nn.LocalResponseNorm(0), (2, 5, 3, 3)),
    (lambda lib: lib.nn.CrossMapLRN2d(3), (2, 5, 3)),
    (lambda lib: lib.nn.CrossMapLRN2d(3), (2, 5, 3, 3, 3)),
    (lambda lib: lib.nn.CrossMapLRN2d(3), (2, 0, 3, 3)),
])
def test_norm_layer_forward_errors_match_torch(make, shape):
    tm, mm = make(torch), make(mininn)
    same_error(lambda: tm(torch.ones(shape)), lambda: mm(mininn.ones(shape)))


@pytest.mark.parametrize("call", [
    lambda lib, f: f.batch_norm(lib.ones(2, 4, 3), None, None, training=False),
    lambda lib, f: f.batch_norm(lib.ones(2, 4, 3), lib.zeros(3), lib.ones(3), training=True),
    lambda lib, f: f.batch_norm(lib.ones(2, 4, 3), lib.zeros(4), lib.ones(4), lib.ones(3), training=True),
    lambda lib, f: f.batch_norm(lib.ones(2, 4, dtype=lib.float64), lib.zeros(4), lib.ones(4)),
    lambda lib, f: f.layer_norm(lib.ones(2, 5), (6,)),
    lambda lib, f: f.layer_norm(lib.ones(2, 5), 5),
    lambda lib, f: f.group_norm(lib.ones(2, 5, 3), 2),
    lambda lib, f: f.group_norm(lib.ones(2, 4, 3), 2, lib.ones(3)),
    lambda lib, f: f.group_norm(lib.ones(2), 2),
    lambda lib, f: f.normalize(lib.ones(2, 3), dim=3),
    lambda lib, f: f.layer_norm(lib.ones(2, 3, dtype=lib.int64), (3,)),
    lambda lib, f: f.group_norm(lib.ones(2, 4, dtype=lib.int64), 2),
    lambda lib, f: f.layer_norm(lib.ones(2, 3), (3,), lib.ones(3, dtype=lib.float64)),
    lambda lib, f: f.layer_norm(lib.ones(2, 3), (3,), None, lib.ones(3, dtype=lib.float64)),
    lambda lib, f: f.group_norm(lib.ones(2, 4, 3), 2, lib.ones(4, dtype=lib.float64)),
    lambda lib, f: f.layer_norm(lib.ones(2, 4), []),
    lambda lib, f: f.layer_norm(lib.ones(2, 4), (3,), lib.ones(2)),
    lambda lib, f: f.layer_norm(lib.ones(2, 4), (3,), None, lib.ones(2)),
    lambda lib, f: f.rms_norm(lib.ones(2, 4), 4),
    lambda lib, f: f.rms_norm(lib.ones(2, 4), []),
    lambda lib, f: f.rms_norm(lib.ones(2, 4), (3,)),
    lambda lib, f: f.rms_norm(lib.ones(2, 4), (3,), lib.ones(2)),
    lambda lib, f: f.rms_norm(lib.ones(2, 4), (4,), lib.ones(3)),
    lambda lib, f: f.rms_norm(lib.ones(2, 4, dtype=lib.int64), (4,)),
    lambda lib, f: f.local_response_norm(lib.ones(5), 2),
])
def test_functional_norm_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))


def test_norm_constructor_errors_match_torch():
    same_error(lambda: torch.nn.GroupNorm(3, 4), lambda: nn.GroupNorm(3, 4))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,kwargs", [
    (6, {}),
    ((5, 6), {}),
    ((3, 5, 6), {}),
    (6, dict(elementwise_affine=False)),
    (6, dict(bias=False)),
    ((5, 6), dict(eps=1e-3)),
], ids=str)
def test_layer_norm_matches_torch_values_and_gradients(shape, kwargs, dtype):
    tm = _randomize_affine(torch.nn.LayerNorm(shape, **kwargs).to(getattr(torch, np.dtype(dtype).name)))
    mm = twin(tm, nn.LayerNorm(shape, dtype=np.dtype(dtype).name, **kwargs))
    assert_parity(tm, mm, _x((2, 3, 5, 6), dtype, scale=3.0, shift=1.0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("make,shape", [
    (lambda m: m.LayerNorm(384), (2, 7, 384)),
    (lambda m: m.LayerNorm((5, 6), elementwise_affine=False), (3, 5, 6)),
    (lambda m: m.LayerNorm(6, bias=False), (4, 6)),
    (lambda m: m.GroupNorm(4, 8), (2, 8, 30, 31)),
    (lambda m: m.GroupNorm(2, 4, affine=False), (3, 4, 5)),
], ids=["layer_384", "layer_no_affine", "layer_no_bias", "group_large", "group_no_affine"])
def test_layer_and_group_norm_under_no_grad_match_torch_and_leave_the_input_alone(make, shape, dtype):
    tm = _randomize_affine(make(torch.nn).to(getattr(torch, np.dtype(dtype).name)))
    mm = twin(tm, make(nn).to(getattr(mininn, np.dtype(dtype).name)))
    x = _x(shape, dtype, scale=3.0, shift=5.0)
    mx = mininn.tensor(x.copy())
    with mininn.no_grad():
        got = mm(mx)
    np.testing.assert_allclose(got.numpy(), tm(torch.tensor(x)).detach().numpy(), **tol(dtype))
    np.testing.assert_array_equal(mx.numpy(), x)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args,kwargs,shape", [
    ((3, 6), {}, (4, 6, 5, 2)),
    ((2, 4), {}, (2, 4, 7)),
    ((1, 6), {}, (3, 6, 4, 4)),
    ((6, 6), {}, (3, 6, 4)),
    ((2, 4), dict(affine=False), (2, 4, 3, 3)),
    ((2, 4), dict(bias=False, eps=1e-3), (2, 4, 3)),
    ((2, 4), {}, (5, 4)),
], ids=str)
def test_group_norm_matches_torch_values_and_gradients(args, kwargs, shape, dtype):
    tm = _randomize_affine(torch.nn.GroupNorm(*args, **kwargs).to(getattr(torch, np.dtype(dtype).name)))
    mm = twin(tm, nn.GroupNorm(*args, dtype=np.dtype(dtype).name, **kwargs))
    assert_parity(tm, mm, _x(shape, dtype, scale=2.0, shift=-1.0))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, float("inf")])
@pytest.mark.parametrize("dim", [1, -1, 0])
def test_normalize_matches_torch_values_and_gradients(p, dim):
    x = _x((4, 5, 3))
    x[0, :, 0] = 0.0  # a zero vector: eps takes over
    x[1, 2, :] = 0.0
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    ty, my = TF.normalize(tx, p=p, dim=dim), F.normalize(mx, p=p, dim=dim)
    cot = _x(tuple(ty.shape), seed=5)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), rtol=1e-8, atol=1e-10)


def test_functional_batch_norm_updates_running_stats_in_place_with_the_unbiased_variance():
    x = _x((6, 3), np.float32)
    rm, rv = mininn.zeros(3), mininn.ones(3)
    F.batch_norm(mininn.tensor(x), rm, rv, training=True, momentum=0.5)
    np.testing.assert_allclose(rm.numpy(), 0.5 * x.mean(0), rtol=1e-5)
    np.testing.assert_allclose(rv.numpy(), 0.5 + 0.5 * x.var(0, ddof=1), rtol=1e-5)


# ---- SyncBatchNorm ---------------------------------------------------------------------------


def _model(lib, affine=True, bias=True):
    inner = lib.nn.Sequential(lib.nn.BatchNorm1d(3, momentum=None), lib.nn.ReLU())
    return lib.nn.Sequential(lib.nn.Conv2d(2, 4, 1), lib.nn.BatchNorm2d(4, affine=affine, bias=bias), inner,
                             lib.nn.InstanceNorm1d(3), lib.nn.SyncBatchNorm(2, eps=1e-3))


@pytest.mark.parametrize("affine,bias", [(True, True), (True, False), (False, True)])
def test_convert_sync_batchnorm_replaces_batch_norms_and_keeps_their_tensors_like_torch(affine, bias):
    t_model, m_model = _model(torch, affine, bias), _model(mininn, affine, bias)
    m_model.load_state_dict({k: mininn.tensor(to_numpy(v)) for k, v in t_model.state_dict().items()})
    m_model[2].eval()
    t_model[2].eval()
    m_old = dict(m_model.named_parameters()) | dict(m_model.named_buffers())
    t_out = torch.nn.SyncBatchNorm.convert_sync_batchnorm(t_model)
    m_out = nn.SyncBatchNorm.convert_sync_batchnorm(m_model, process_group="group")
    assert repr(m_out) == repr(t_out)
    assert state_layout(m_out) == state_layout(t_out)
    assert [m.training for m in m_out.modules()] == [m.training for m in t_out.modules()]
    assert m_out[1].process_group == m_out[4].process_group == "group"  # an existing one is rebuilt too
    for name, value in (dict(m_out.named_parameters()) | dict(m_out.named_buffers())).items():
        assert value is m_old[name], name  # the same tensors, not copies


def test_convert_sync_batchnorm_of_a_lone_batch_norm_returns_a_sync_batch_norm():
    bn = nn.BatchNorm3d(2).double()
    out = nn.SyncBatchNorm.convert_sync_batchnorm(bn)
    assert type(out) is nn.SyncBatchNorm and out.weight is bn.weight and out.running_var is bn.running_var
    assert out.weight.dtype == mininn.float64


# ---- RMSNorm ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,kwargs,x_shape", [
    (6, {}, (2, 3, 6)),
    ((5, 6), {}, (2, 5, 6)),
    (6, dict(elementwise_affine=False), (4, 6)),
    (6, dict(eps=1e-3), (6,)),
    ((3, 5, 6), dict(eps=0.5), (3, 5, 6)),
], ids=str)
def test_rms_norm_matches_torch_values_and_gradients(shape, kwargs, x_shape, dtype):
    tm = _randomize_affine(torch.nn.RMSNorm(shape, **kwargs).to(getattr(torch, np.dtype(dtype).name)))
    mm = twin(tm, nn.RMSNorm(shape, dtype=np.dtype(dtype).name, **kwargs))
    assert_parity(tm, mm, _x(x_shape, dtype, scale=3.0, shift=1.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_default_eps_is_the_dtypes_machine_epsilon_like_torch(dtype):
    x = np.array([[1e-5, -2e-5, 0.0], [0.0, 0.0, 0.0]], dtype=dtype)
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    ty, my = TF.rms_norm(tx, (3,)), F.rms_norm(mx, (3,))
    ty.sum().backward()
    my.sum().backward()
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-5)
    np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), rtol=1e-5)


# ---- LocalResponseNorm and CrossMapLRN2d ----------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args,shape", [
    ((3,), (2, 6, 4)),
    ((2, 0.5, 0.75, 2.0), (2, 6, 3, 4)),
    ((4, 0.3, 0.5, 1.0), (2, 5, 3, 2, 2)),
    ((1, 1.0, 1.0, 1.0), (3, 4, 2)),
    ((9, 0.2, 0.75, 1.5), (2, 5, 3)),
], ids=str)
def test_local_response_norm_matches_torch_values_and_gradients(args, shape, dtype):
    assert_parity(torch.nn.LocalResponseNorm(*args), nn.LocalResponseNorm(*args), _x(shape, dtype, scale=2.0))


def test_local_response_norm_passes_an_empty_input_through():
    x = mininn.zeros(0, 3, 4)
    assert F.local_response_norm(x, 2) is x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args,channels", [
    ((2, 0.5, 0.75, 2.0), 6),
    ((3, 0.5, 0.75, 2.0), 7),
    ((4, 0.5, 0.75, 2.0), 7),
    ((5,), 6),
    ((6, 0.3, 0.5, 1.0), 8),
    ((5, 0.5, 0.75, 2.0), 2),
], ids=str)
def test_cross_map_lrn2d_matches_torchs_forward_and_its_legacy_backward(args, channels, dtype):
    x = _x((2, channels, 3, 2), dtype, scale=2.0)
    assert_parity(torch.nn.CrossMapLRN2d(*args), nn.CrossMapLRN2d(*args), x)


def _signature(fn):
    return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LayerNorm",
                                  "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"])
def test_norm_layer_constructor_signature_matches_torch(name):
    assert _signature(getattr(nn, name).__init__) == _signature(getattr(torch.nn, name).__init__)


@pytest.mark.parametrize("name", ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm",
                                  "local_response_norm"])
def test_functional_norm_signature_matches_torch(name):
    assert _signature(getattr(F, name)) == _signature(getattr(TF, name))


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.InstanceNorm1d(3),
    lambda lib: lib.nn.GroupNorm(1, 3),
    lambda lib: lib.nn.LayerNorm(4),
    lambda lib: lib.nn.RMSNorm(4),
], ids=["instance", "group", "layer", "rms"])
def test_norm_layer_passes_an_empty_batch_through_with_zero_gradients_like_torch(make):
    assert_parity(make(torch), make(mininn), np.zeros((0, 3, 4), np.float32))
