"""mininn.nn.functional: the public surface (names, signatures) and F.pad against torch 2.13."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import mininn
import mininn.nn.functional as F
from tests.mininn.nn._layer_parity import same_error, to_numpy

torch = pytest.importorskip("torch")
TF = torch.nn.functional

LAYER_FUNCTIONS = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "batch_norm", "conv1d",
    "conv2d", "conv_transpose1d", "conv_transpose2d", "dropout", "elu", "embedding", "gelu", "group_norm",
    "hardtanh", "layer_norm", "leaky_relu", "linear", "log_softmax", "logsigmoid", "max_pool1d", "max_pool2d",
    "normalize", "pad", "prelu", "relu", "relu6", "sigmoid", "silu", "softmax", "softplus", "tanh",
]


def _torch_parameters(name):
    """torch's parameter names, or None for C builtins and its return_indices dispatchers."""
    try:
        names = list(inspect.signature(getattr(TF, name)).parameters)
    except (TypeError, ValueError):
        return None
    return None if names == ["args", "kwargs"] else names


INTROSPECTABLE = [n for n in LAYER_FUNCTIONS if _torch_parameters(n) is not None]


def test_functional_exports_every_layer_function_in_all():
    assert set(LAYER_FUNCTIONS) <= set(F.__all__)
    assert all(callable(getattr(F, name)) for name in F.__all__)


@pytest.mark.parametrize("name", INTROSPECTABLE)
def test_functional_parameter_names_match_torch(name):
    ours = list(inspect.signature(getattr(F, name)).parameters)
    assert ours == [p for p in _torch_parameters(name) if p != "out"]


def test_functional_accepts_torchs_keyword_names():
    x = mininn.randn(2, 3, 4, 4)
    w = mininn.randn(5, 3, 3, 3)
    y = F.conv2d(input=x, weight=w, bias=None, stride=1, padding="same", dilation=1, groups=1)
    z = F.max_pool2d(input=y, kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    out = F.log_softmax(input=F.linear(input=z.flatten(1), weight=mininn.randn(3, 20)), dim=-1)
    assert tuple(out.shape) == (2, 3)


# ---- pad ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,pad,mode,value", [
    ((2, 3, 4), (1, 2), "constant", None),
    ((2, 3, 4), (1, 2, 0, 1), "constant", 1.5),
    ((2, 3, 4, 5), (2, 1, 1, 0, 1, 1), "constant", -2.0),
    ((2, 3, 4, 5), (-1, 2, 1, -2), "constant", None),
    ((3,), (2, 0), "constant", None),
    ((2, 3, 5), (2, 3), "reflect", None),
    ((3, 5), (4, 1), "reflect", None),
    ((2, 3, 4, 5), (2, 1, 3, 0), "reflect", None),
    ((1, 2, 3, 4, 5), (1, 1, 2, 2, 1, 2), "reflect", None),
    ((2, 3, 5), (3, 4), "replicate", None),
    ((2, 3, 4, 5), (2, 1, 3, 0), "replicate", None),
    ((2, 3, 4, 5, 3), (1, 1, 0, 2, 2, 1), "replicate", None),
    ((2, 3, 5), (3, 5), "circular", None),
    ((2, 3, 4, 5), (2, 1, 3, 4), "circular", None),
    ((1, 2, 3, 4, 5), (1, 1, 2, 2, 1, 2), "circular", None),
], ids=str)
def test_pad_matches_torch_values_and_gradients(shape, pad, mode, value, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    tx, mx = torch.tensor(x, requires_grad=True), mininn.tensor(x, requires_grad=True)
    ty, my = TF.pad(tx, pad, mode=mode, value=value), F.pad(mx, pad, mode=mode, value=value)
    assert tuple(my.shape) == tuple(ty.shape) and my.dtype.name == np.dtype(dtype).name
    cot = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(dtype)
    ty.backward(torch.tensor(cot))
    my.backward(mininn.tensor(cot))
    np.testing.assert_allclose(to_numpy(my), to_numpy(ty), rtol=1e-6)
    np.testing.assert_allclose(to_numpy(mx.grad), to_numpy(tx.grad), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda lib, f: f.pad(lib.ones(1, 1, 3), (1,)),
    lambda lib, f: f.pad(lib.ones(1, 1, 3), (1, 1, 1, 1, 1, 1, 1, 1)),
    lambda lib, f: f.pad(lib.ones(1, 1, 3), (1, 1), mode="foo"),
    lambda lib, f: f.pad(lib.ones(1, 1, 3), (3, 3), mode="reflect"),
    lambda lib, f: f.pad(lib.ones(1, 1, 3), (1, 1), mode="reflect", value=2),
    lambda lib, f: f.pad(lib.ones(3), (1, 1), mode="reflect"),
    lambda lib, f: f.pad(lib.ones(3, 3), (1, 1, 1, 1), mode="replicate"),
    lambda lib, f: f.pad(lib.ones(1, 3, 3), (1, 1, 1, 1, 1, 1), mode="circular"),
    lambda lib, f: f.pad(lib.ones(2, 1, 3), (4, 4), mode="circular"),
    lambda lib, f: f.pad(lib.ones(2, 1, 3), (-1, -3)),
])
def test_pad_errors_match_torch(call):
    same_error(lambda: call(torch, TF), lambda: call(mininn, F))


FLOAT32_CALLS = {
    "linear": lambda x: F.linear(x.flatten(1), mininn.ones(3, 48, requires_grad=True), mininn.ones(3)),
    "conv2d": lambda x: F.conv2d(x, mininn.ones(2, 3, 3, 3, requires_grad=True), mininn.ones(2), padding=1),
    "conv2d_depthwise": lambda x: F.conv2d(x, mininn.ones(3, 1, 3, 3, requires_grad=True), groups=3),
    "conv_transpose2d": lambda x: F.conv_transpose2d(x, mininn.ones(3, 2, 3, 3, requires_grad=True), None, 2),
    "conv1d": lambda x: F.conv1d(x.flatten(2), mininn.ones(2, 3, 3, requires_grad=True)),
    "max_pool2d": lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
    "avg_pool2d": lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    "adaptive_avg_pool2d": lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
    "batch_norm": lambda x: F.batch_norm(x, mininn.zeros(3), mininn.ones(3),
                                         mininn.ones(3, requires_grad=True), mininn.zeros(3), True, 0.3),
    "batch_norm_eval": lambda x: F.batch_norm(x, mininn.zeros(3), mininn.ones(3), training=False),
    "layer_norm": lambda x: F.layer_norm(x, (4, 4), mininn.ones(4, 4, requires_grad=True)),
    "group_norm": lambda x: F.group_norm(x, 3, mininn.ones(3, requires_grad=True), mininn.zeros(3)),
    "normalize": lambda x: F.normalize(x, p=3.0),
    "dropout": lambda x: F.dropout(x, 0.3),
    "pad": lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"),
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "elu": lambda x: F.elu(x, 0.7),
    "softplus": lambda x: F.softplus(x, 2.0),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "prelu": lambda x: F.prelu(x, mininn.full((3,), 0.25, requires_grad=True)),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.5),
    "logsigmoid": lambda x: F.logsigmoid(x),
    "softmax": lambda x: F.softmax(x, 1),
    "log_softmax": lambda x: F.log_softmax(x, -1),
    "embedding": lambda x: F.embedding(mininn.tensor([[0, 1], [1, 1]]), x.flatten(1)[:, :5]),
}


@pytest.mark.parametrize("name", sorted(FLOAT32_CALLS))
def test_float32_inputs_give_float32_outputs_and_gradients(name):
    x = mininn.randn(2, 3, 4, 4, requires_grad=True)
    out = FLOAT32_CALLS[name](x)
    assert out.dtype == mininn.float32
    out.sum().backward()
    assert x.grad.dtype == mininn.float32
