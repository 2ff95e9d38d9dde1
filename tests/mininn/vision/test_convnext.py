"""ConvNeXt on mininn against torchvision: outputs on the same weights, LayerNorm2d, the block, errors."""

from __future__ import annotations

import numpy as np
import pytest
from _model_parity import assert_same_gradients, assert_same_outputs, cheap_init
from _torchvision import import_torchvision

import mininn
from mininn.vision.models import convnext

torchvision = import_torchvision()
torch = pytest.importorskip("torch")


def test_convnext_tiny_outputs_equal_torchvision_in_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    theirs = torchvision.models.convnext_tiny(num_classes=10)
    with cheap_init(monkeypatch):
        ours = convnext.convnext_tiny(num_classes=10)
    assert_same_outputs(torch, theirs, ours, (2, 3, 32, 32))


def test_small_configuration_outputs_equal_torchvision(monkeypatch: pytest.MonkeyPatch) -> None:
    tv = torchvision.models.convnext
    theirs = tv.ConvNeXt([tv.CNBlockConfig(8, 16, 1), tv.CNBlockConfig(16, None, 2)], num_classes=3)
    with cheap_init(monkeypatch):
        ours = convnext.ConvNeXt(
            [convnext.CNBlockConfig(8, 16, 1), convnext.CNBlockConfig(16, None, 2)], num_classes=3
        )
    assert repr(ours) == repr(theirs)
    assert_same_outputs(torch, theirs, ours, (2, 3, 24, 20))


def test_small_configuration_gradients_equal_torchvision() -> None:
    torch.manual_seed(0)
    tv = torchvision.models.convnext
    theirs = tv.ConvNeXt([tv.CNBlockConfig(8, 16, 1), tv.CNBlockConfig(16, None, 2)], num_classes=3)
    ours = convnext.ConvNeXt(
        [convnext.CNBlockConfig(8, 16, 1), convnext.CNBlockConfig(16, None, 2)], num_classes=3
    )
    assert_same_gradients(torch, theirs, ours, (2, 3, 24, 20))


def test_layer_norm_2d_normalises_channels_as_torchvisions() -> None:
    x = np.random.default_rng(0).standard_normal((2, 6, 3, 4)).astype(np.float32)
    expected = torchvision.models.convnext.LayerNorm2d(6, eps=1e-6)(torch.from_numpy(x)).detach().numpy()
    got = convnext.LayerNorm2d(6, eps=1e-6)(mininn.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_block_keeps_layer_scale_first_in_its_state_dict() -> None:
    block = convnext.CNBlock(8, 1e-6, 0.0)
    theirs = torchvision.models.convnext.CNBlock(8, 1e-6, 0.0)
    assert list(block.state_dict()) == list(theirs.state_dict())
    np.testing.assert_array_equal(block.layer_scale.detach().numpy(), np.full((8, 1, 1), 1e-6, np.float32))


def test_stochastic_depth_drops_the_branch_only_in_training() -> None:
    block = convnext.CNBlock(4, 1.0, 1.0)
    x = mininn.randn(2, 4, 5, 5)
    with mininn.no_grad():
        np.testing.assert_array_equal(block.train()(x).numpy(), x.numpy())
        assert not np.allclose(block.eval()(x).numpy(), x.numpy())


def test_bad_settings_raise_torchvisions_errors() -> None:
    for ours_setting, theirs_setting, error in [
        ([], [], ValueError),
        ([(8, None, 1)], [(8, None, 1)], TypeError),
    ]:
        with pytest.raises(error) as ours:
            convnext.ConvNeXt(ours_setting)
        with pytest.raises(error) as theirs:
            torchvision.models.ConvNeXt(theirs_setting)
        assert str(ours.value) == str(theirs.value)
