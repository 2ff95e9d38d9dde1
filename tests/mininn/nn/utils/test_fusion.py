"""fuse_conv_bn_eval / fuse_linear_bn_eval and their weight helpers against torch 2.13, and
skip_init."""

from __future__ import annotations

import numpy as np
import pytest

import mininn
from mininn import nn
from tests.mininn.nn._layer_parity import same_error, state_layout, to_numpy, twin

torch = pytest.importorskip("torch")


def _twins(name, args, kwargs=None):
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(*args, **(kwargs or {}))
    with torch.no_grad():
        for v in t.state_dict().values():
            if v.is_floating_point():
                v.copy_(torch.rand_like(v) + 0.5)
    return t, twin(t, getattr(nn, name)(*args, **(kwargs or {})))


CONV_CASES = [("Conv2d", (3, 4, 3), {}, "BatchNorm2d", (1, 3, 5, 5), False),
              ("Conv1d", (3, 4, 2), {"bias": False}, "BatchNorm1d", (2, 3, 6), False),
              ("ConvTranspose2d", (3, 4, 2), {"groups": 1}, "BatchNorm2d", (1, 3, 4, 4), True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bn_kwargs", [{}, {"affine": False}], ids=["affine", "no_affine"])
@pytest.mark.parametrize("conv_name, args, kwargs, bn_name, x_shape, transpose", CONV_CASES,
                         ids=[c[0] for c in CONV_CASES])
def test_fuse_conv_bn_eval_matches_torch_and_the_unfused_pair(conv_name, args, kwargs, bn_name, x_shape,
                                                               transpose, bn_kwargs, dtype):
    t_conv, m_conv = _twins(conv_name, args, kwargs)
    t_bn, m_bn = _twins(bn_name, (4,), bn_kwargs)
    for mod in (t_conv, m_conv, t_bn, m_bn):
        mod.eval()
        if dtype == np.float64:
            mod.double()
    t_fused = torch.nn.utils.fuse_conv_bn_eval(t_conv, t_bn, transpose=transpose)
    m_fused = nn.utils.fuse_conv_bn_eval(m_conv, m_bn, transpose=transpose)
    assert m_fused is not m_conv and type(m_fused) is type(m_conv)
    assert state_layout(m_fused) == state_layout(t_fused)
    assert isinstance(m_fused.weight, nn.Parameter) and m_fused.weight.requires_grad
    assert m_fused.bias.requires_grad == t_fused.bias.requires_grad
    for name, tp in t_fused.state_dict().items():
        np.testing.assert_allclose(to_numpy(m_fused.state_dict()[name]), to_numpy(tp), rtol=1e-6)
    x = mininn.tensor(np.random.default_rng(0).standard_normal(x_shape).astype(dtype))
    np.testing.assert_allclose(to_numpy(m_fused(x)), to_numpy(m_bn(m_conv(x))), rtol=1e-5, atol=1e-5)


def test_fuse_linear_bn_eval_matches_torch():
    t_lin, m_lin = _twins("Linear", (3, 4))
    t_bn, m_bn = _twins("BatchNorm1d", (4,))
    for mod in (t_lin, m_lin, t_bn, m_bn):
        mod.eval()
    t_fused = torch.nn.utils.fuse_linear_bn_eval(t_lin, t_bn)
    m_fused = nn.utils.fuse_linear_bn_eval(m_lin, m_bn)
    for name, tp in t_fused.state_dict().items():
        np.testing.assert_allclose(to_numpy(m_fused.state_dict()[name]), to_numpy(tp), rtol=1e-6)
    x = mininn.tensor(np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32))
    np.testing.assert_allclose(to_numpy(m_fused(x)), to_numpy(m_bn(m_lin(x))), rtol=1e-5, atol=1e-6)


def test_fusion_refuses_training_mode_and_mismatched_sizes_like_torch():
    t_conv, m_conv = _twins("Conv2d", (3, 4, 3))
    t_bn, m_bn = _twins("BatchNorm2d", (4,))
    same_error(lambda: torch.nn.utils.fuse_conv_bn_eval(t_conv, t_bn),
               lambda: nn.utils.fuse_conv_bn_eval(m_conv, m_bn))
    t_lin, m_lin = _twins("Linear", (3, 5))
    t_bn1, m_bn1 = _twins("BatchNorm1d", (4,))
    for mod in (t_lin, m_lin, t_bn1, m_bn1):
        mod.eval()
    same_error(lambda: torch.nn.utils.fuse_linear_bn_eval(t_lin, t_bn1),
               lambda: nn.utils.fuse_linear_bn_eval(m_lin, m_bn1))


def test_skip_init_builds_the_module_and_checks_its_class_like_torch():
    m = nn.utils.skip_init(nn.Linear, 3, 4, bias=False)
    t = torch.nn.utils.skip_init(torch.nn.Linear, 3, 4, bias=False)
    assert repr(m) == repr(t) and state_layout(m) == state_layout(t)
    same_error(lambda: torch.nn.utils.skip_init(torch.nn.ReLU), lambda: nn.utils.skip_init(nn.ReLU))
    same_error(lambda: torch.nn.utils.skip_init(int), lambda: nn.utils.skip_init(int))
