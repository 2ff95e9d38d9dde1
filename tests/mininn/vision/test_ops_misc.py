"""mininn.vision.ops' conv-norm-activation, squeeze-excitation, MLP and Permute against torchvision.ops."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pytest
from _torchvision import import_torchvision

import mininn
from mininn import nn
from mininn.vision import ops

torchvision = import_torchvision()
torch = pytest.importorskip("torch")
tv_ops = torchvision.ops


def _same_module(ours: nn.Module, theirs: object, shape: tuple[int, ...], seed: int = 0) -> None:
    """Equal keys, shapes and repr; equal eval-mode outputs on theirs' (perturbed) weights."""
    theirs_state = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    assert [(k, v.shape) for k, v in ours.state_dict().items()] == [
        (k, v.shape) for k, v in theirs_state.items()
    ]
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(seed)
    state = {
        k: (
            rng.uniform(0.5, 1.5, v.shape)
            if k.endswith("running_var")
            else v + 0.3 * rng.standard_normal(v.shape)
        ).astype(v.dtype)
        if v.dtype.kind == "f"
        else v
        for k, v in theirs_state.items()
    }
    theirs.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()})
    ours.load_state_dict({k: mininn.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()})
    ours.eval()
    theirs.eval()
    x = rng.standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x)).numpy()
    with mininn.no_grad():
        got = ours(mininn.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"kernel_size": 1, "stride": 2},
        {"kernel_size": (3, 5), "dilation": (1, 2)},
        {"kernel_size": 3, "dilation": 2, "groups": 4},
        {"padding": "same", "activation_layer": None},
        {"norm_layer": None},
        {"norm_layer": None, "bias": False, "inplace": None},
        {"bias": True, "activation_layer": "Hardswish"},
    ],
)
def test_conv2d_norm_activation_matches_torchvision(kwargs: dict) -> None:
    theirs_kwargs = dict(kwargs)
    if kwargs.get("activation_layer") == "Hardswish":
        kwargs = {**kwargs, "activation_layer": nn.Hardswish}
        theirs_kwargs["activation_layer"] = torch.nn.Hardswish
    if "norm_layer" in kwargs:
        theirs_kwargs["norm_layer"] = None
    torch.manual_seed(0)
    ours = ops.Conv2dNormActivation(8, 12, **kwargs)
    theirs = tv_ops.Conv2dNormActivation(8, 12, **theirs_kwargs)
    assert ours.out_channels == 12
    _same_module(ours, theirs, (2, 8, 9, 11))


def test_conv3d_norm_activation_matches_torchvision() -> None:
    ours = ops.Conv3dNormActivation(3, 4, kernel_size=(1, 3, 3), stride=(1, 2, 2))
    theirs = tv_ops.Conv3dNormActivation(3, 4, kernel_size=(1, 3, 3), stride=(1, 2, 2))
    _same_module(ours, theirs, (2, 3, 4, 7, 7))


def test_conv2d_norm_activation_takes_a_norm_layer_partial() -> None:
    ours = ops.Conv2dNormActivation(
        4, 6, norm_layer=partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01), activation_layer=nn.SiLU
    )
    theirs = tv_ops.Conv2dNormActivation(
        4,
        6,
        norm_layer=partial(torch.nn.BatchNorm2d, eps=1e-3, momentum=0.01),
        activation_layer=torch.nn.SiLU,
    )
    _same_module(ours, theirs, (1, 4, 5, 5))


def test_conv_norm_activation_base_warns_as_torchvision() -> None:
    from torchvision.ops.misc import ConvNormActivation as Theirs

    from mininn.vision.ops.misc import ConvNormActivation

    with pytest.warns(UserWarning) as ours_warning:
        ConvNormActivation(2, 2)
    with pytest.warns(UserWarning) as theirs_warning:
        Theirs(2, 2)
    assert str(ours_warning[0].message) == str(theirs_warning[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ops.Conv2dNormActivation(2, 2)


@pytest.mark.parametrize(
    ("activation", "scale"),
    [
        ((nn.ReLU, nn.Sigmoid), (torch.nn.ReLU, torch.nn.Sigmoid)),
        ((nn.SiLU, nn.Hardsigmoid), (torch.nn.SiLU, torch.nn.Hardsigmoid)),
    ],
)
def test_squeeze_excitation_matches_torchvision(activation: tuple, scale: tuple) -> None:
    ours = ops.SqueezeExcitation(16, 4, activation=activation[0], scale_activation=activation[1])
    theirs = tv_ops.SqueezeExcitation(16, 4, activation=scale[0], scale_activation=scale[1])
    _same_module(ours, theirs, (2, 16, 5, 6))


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"dropout": 0.3, "inplace": False},
        {"bias": False},
        {"norm_layer": "LayerNorm", "activation_layer": "GELU"},
    ],
)
def test_mlp_matches_torchvision(kwargs: dict) -> None:
    ours_kwargs, theirs_kwargs = dict(kwargs), dict(kwargs)
    for key in ("norm_layer", "activation_layer"):
        if key in kwargs:
            ours_kwargs[key] = getattr(nn, kwargs[key])
            theirs_kwargs[key] = getattr(torch.nn, kwargs[key])
    ours = ops.MLP(10, [16, 16, 5], **ours_kwargs)
    theirs = tv_ops.MLP(10, [16, 16, 5], **theirs_kwargs)
    _same_module(ours, theirs, (3, 7, 10))


def test_mlp_dropout_is_identity_in_eval_and_active_in_training() -> None:
    mlp = ops.MLP(6, [6], dropout=0.9).eval()
    x = mininn.randn(50, 6)
    with mininn.no_grad():
        assert np.array_equal(mlp(x).numpy(), mlp(x).numpy())
        assert (mlp(x).numpy() != 0).all()
        mlp.train()
        assert (mlp(x).numpy() == 0).mean() > 0.5


def test_permute_matches_torchvision() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = ops.Permute([2, 0, 1])(mininn.from_numpy(x)).numpy()
    expected = tv_ops.Permute([2, 0, 1])(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(got, expected)
    assert repr(ops.Permute([2, 0, 1])) == repr(tv_ops.Permute([2, 0, 1]))


def test_ops_exports_the_blocks_under_torchvision_names() -> None:
    for name in [
        "Conv2dNormActivation",
        "Conv3dNormActivation",
        "SqueezeExcitation",
        "MLP",
        "Permute",
        "StochasticDepth",
        "stochastic_depth",
    ]:
        assert name in ops.__all__
        assert getattr(ops, name) is not None
